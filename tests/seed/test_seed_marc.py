"""A dataset's MARC records as the PTF's MARC groups use them: its MARC authorities (SRS records of type
MARC_AUTHORITY after the instances' MARC bibs, their external ids the dataset's `authority` id range, the
authority records' own ids) as VAR reads them, and a seeded MARC bib edited in quickMARC as ETT edits it."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

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


def test_replace_removes_every_generation_of_the_datasets_srs_records(target, with_authorities):
    """`seed --replace` after a quickMARC edit: the edit's generation (a new id, the seeded one as matched id) goes
    with the seeded record, so each instance and authority has one current record again."""
    ids = with_authorities.ids
    _ett_edit(target, ids.of("instance")(6))
    srs = f"{target.tenant}_mod_source_record_storage.records_lb"
    assert target.sql(f"SELECT count(*) FROM {srs} WHERE external_id = %s", ids.of("instance")(6)) == [(2,)]
    code, _, err = run("seed", with_authorities.path, "--db", target.dsn, "--tenant", target.tenant, "--replace")
    assert code == 0, err
    assert target.sql(f"SELECT id::text, generation, state FROM {srs} WHERE external_id = %s",
                      ids.of("instance")(6)) == [(ids.of("srs_record")(6), 0, "ACTUAL")]
    assert target.sql(f"SELECT count(*) FROM {srs} WHERE record_type = 'MARC_AUTHORITY' AND external_hrid LIKE %s",
                      "varmn%") == [(AUTHORITIES,)]


def test_a_seeded_bib_takes_a_quickmarc_edit(target, with_authorities):
    """ETT on seeded data: the seeded instance and its MARC bib, 520 appended, saved."""
    instance_id = with_authorities.ids.of("instance")(5)
    version = target.get(f"/inventory/instances/{instance_id}")["_version"]
    record = _ett_edit(target, instance_id)
    assert record["parsedRecordDtoId"] == with_authorities.ids.of("srs_record")(5)
    instance = target.get(f"/inventory/instances/{instance_id}")
    assert instance["_version"] == version + 1
    assert [n["note"] for n in instance["notes"]] == ["UpdatedField"]
    assert instance["identifiers"][0]["value"] and instance["contributors"][0]["primary"] is True


def _ett_edit(target, instance_id: str) -> dict:
    """ETT's save: the editor's record with the instance's `_version`, 520 appended; 202 asserted."""
    record = target.get("/records-editor/records", externalId=instance_id)
    record["relatedRecordVersion"] = str(target.get(f"/inventory/instances/{instance_id}")["_version"])
    record["fields"].append({"isProtected": "false", "tag": "520", "indicators": ["\\", "\\"], "content": "$a UpdatedField"})
    r = requests.put(f"{target.url}/records-editor/records/{record['parsedRecordId']}", json=record,
                     headers=target.headers(), timeout=30)
    assert (r.status_code, r.text) == (202, "")
    return record
