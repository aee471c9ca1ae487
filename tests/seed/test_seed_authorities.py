"""A dataset's MARC authorities: SRS records of type MARC_AUTHORITY after the instances' MARC bibs, their external
ids the dataset's `authority` id range (the authority records' own ids), as the PTF's VAR group reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from folioperf.seed import dataset

from .conftest import run

AUTHORITIES = 25


@pytest.fixture(scope="module")
def with_authorities(target, tmp_path_factory) -> dataset.Dataset:
    text = Path(dataset.locate("rih")).read_text()
    text = (text.replace('prefix = "rih"', 'prefix = "varm"').replace("seed = 4004", "seed = 4048")
            .replace("instances = 20000", f"instances = 40\nauthorities = {AUTHORITIES}"))
    path = tmp_path_factory.mktemp("datasets") / "var-marc.toml"
    path.write_text(text)
    code, _, err = run("seed", str(path), "--db", target.dsn, "--tenant", target.tenant)
    assert code == 0, err
    return dataset.load(str(path))


def test_each_authority_has_its_marc_record_in_srs(target, with_authorities):
    ids = with_authorities.ids
    listed = target.get("/source-storage/source-records", recordType="MARC_AUTHORITY", limit=1000,
                        snapshotId=target.get("/source-storage/source-records", instanceId=ids.of("instance")(0))
                        ["sourceRecords"][0]["snapshotId"])
    assert listed["totalRecords"] == AUTHORITIES
    authority_id = ids.of("authority")(7)
    record = target.get(f"/source-storage/records/{authority_id}/formatted", idType="AUTHORITY")
    assert record["recordType"] == "MARC_AUTHORITY" and record["id"] == ids.of("srs_record")(40 + 7)
    assert record["externalIdsHolder"] == {"authorityId": authority_id, "authorityHrid": ids.authority_natural_id(7)}
    fields = record["parsedRecord"]["content"]["fields"]
    assert fields[0] == {"001": ids.authority_natural_id(7)}
    heading = next(f["100"] for f in fields if "100" in f)["subfields"][0]["a"]
    assert ", " in heading and f"100 1 $a{heading}\n" in record["parsedRecord"]["formattedContent"]
    assert record["parsedRecord"]["content"]["leader"][5:10] == "nz  a"
    view = target.get("/records-editor/records", externalId=authority_id)  # quickMARC reads it as an authority
    assert view["marcFormat"] == "AUTHORITY" and view["externalHrid"] == ids.authority_natural_id(7)
    bib = target.get(f"/source-storage/records/{ids.of('instance')(39)}/formatted", idType="INSTANCE")
    assert bib["recordType"] == "MARC_BIB" and bib["id"] == ids.of("srs_record")(39)


def test_replace_removes_the_authorities_records_with_the_rest(target, with_authorities):
    rows = target.sql(f"SELECT count(*) FROM {target.tenant}_mod_source_record_storage.records_lb "
                      "WHERE record_type = 'MARC_AUTHORITY' AND external_hrid LIKE 'varmn%%'")
    assert rows == [(AUTHORITIES,)]
    code, _, err = run("seed", with_authorities.path, "--db", target.dsn, "--tenant", target.tenant, "--replace")
    assert code == 0, err
    again = target.sql(f"SELECT count(*) FROM {target.tenant}_mod_source_record_storage.records_lb "
                       "WHERE record_type = 'MARC_AUTHORITY' AND external_hrid LIKE 'varmn%%'")
    assert again == [(AUTHORITIES,)]
