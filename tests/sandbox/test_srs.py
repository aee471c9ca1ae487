"""mod-source-record-storage reads over HTTP (docs/folio.md §3.5 RIH, §4.8): source records by instance
HRID or id, in SRS's shapes, from its relational tables."""

from __future__ import annotations

import json
import threading
import uuid

import psycopg
import pytest

from folioperf.sandbox import srs
from tests.sandbox.inventory_data import Api, unique
from tests.sandbox.marc_data import BIB_LEADER, authority_content, insert_records


@pytest.fixture(scope="module")
def marc(folio_sandbox):
    """Three instances with MARC records as PTF's generator writes them: one current, one superseded by a
    newer generation, one deleted."""
    made, rows = [], []
    for n, state in enumerate(("ACTUAL", "ACTUAL", "DELETED")):
        instance_id, hrid = str(uuid.uuid4()), unique("cenin")
        generations = [("OLD", 0), ("ACTUAL", 1)] if n == 1 else [(state, 0)]
        for record_state, generation in generations:
            record_id = str(uuid.uuid4())
            content = {"leader": BIB_LEADER, "fields": [
                {"001": hrid}, {"245": {"ind1": "1", "ind2": "0", "subfields": [{"a": f"Title {hrid} g{generation}"}]}},
                {"999": {"ind1": "f", "ind2": "f", "subfields": [{"i": instance_id}, {"s": record_id}]}}]}
            rows.append({"id": record_id, "matched_id": instance_id, "generation": generation, "record_type": "MARC_BIB",
                         "external_id": instance_id, "state": record_state, "hrid": hrid, "content": content})
        made.append({"instanceId": instance_id, "hrid": hrid, "recordId": record_id})
    snapshot = insert_records(folio_sandbox.dsn, folio_sandbox.tenant, rows)
    return [{**m, "snapshotId": snapshot} for m in made]


def test_source_records_by_instance_hrid(folio_sandbox, admin_token, marc):
    api = Api.of(folio_sandbox, admin_token)
    r = api.get("/source-storage/source-records", instanceHrid=marc[0]["hrid"], limit=1000)
    assert r.status_code == 200
    body = r.json()
    assert body["totalRecords"] == 1
    record = body["sourceRecords"][0]
    assert record["recordId"] == marc[0]["recordId"] and record["snapshotId"] == marc[0]["snapshotId"]
    assert record["recordType"] == "MARC_BIB" and record["deleted"] is False
    assert record["externalIdsHolder"] == {"instanceId": marc[0]["instanceId"], "instanceHrid": marc[0]["hrid"]}
    assert record["additionalInfo"] == {"suppressDiscovery": False}
    fields = record["parsedRecord"]["content"]["fields"]
    assert fields[0] == {"001": marc[0]["hrid"]} and fields[-1]["999"]["subfields"][0] == {"i": marc[0]["instanceId"]}
    assert "rawRecord" not in record  # sourceRecord.json lost it in mod-source-record-storage 5.8.0 (MODSOURCE-506)
    assert record["metadata"]["createdDate"].endswith("Z")


def test_poppy_source_records_carry_the_raw_record(folio_sandbox_factory, marc):
    poppy = folio_sandbox_factory(folio_release="poppy")  # mod-source-record-storage 5.7.7, the same database
    api = Api.of(poppy, poppy.login())
    record = api.get("/source-storage/source-records", instanceHrid=marc[0]["hrid"]).json()["sourceRecords"][0]
    assert record["rawRecord"]["id"] == marc[0]["recordId"]
    assert json.loads(record["rawRecord"]["content"])["leader"] == record["parsedRecord"]["content"]["leader"]


def test_only_the_current_generation_and_not_deleted(folio_sandbox, admin_token, marc):
    api = Api.of(folio_sandbox, admin_token)
    current = api.get("/source-storage/source-records", instanceId=marc[1]["instanceId"]).json()
    assert current["totalRecords"] == 1
    assert current["sourceRecords"][0]["parsedRecord"]["content"]["fields"][1]["245"]["subfields"][0]["a"].endswith("g1")
    assert api.get("/source-storage/source-records", instanceHrid=marc[2]["hrid"]).json()["totalRecords"] == 0
    deleted = api.get("/source-storage/source-records", instanceHrid=marc[2]["hrid"], deleted="true").json()
    assert deleted["totalRecords"] == 1 and deleted["sourceRecords"][0]["deleted"] is True


def test_stand_alone_rih_quirk_uuid_as_hrid_finds_nothing(folio_sandbox, admin_token, marc):
    body = Api.of(folio_sandbox, admin_token).get("/source-storage/source-records", instanceHrid=marc[0]["instanceId"], limit=1000).json()
    assert body == {"sourceRecords": [], "totalRecords": 0}


def test_limit_and_offset(folio_sandbox, admin_token, marc):
    api = Api.of(folio_sandbox, admin_token)
    page = api.get("/source-storage/source-records", snapshotId=marc[0]["snapshotId"], limit=1, offset=1).json()
    assert page["totalRecords"] == 2 and len(page["sourceRecords"]) == 1


def test_formatted_record_by_instance_id(folio_sandbox, admin_token, marc):
    api = Api.of(folio_sandbox, admin_token)
    r = api.get(f"/source-storage/records/{marc[0]['instanceId']}/formatted", idType="INSTANCE")
    assert r.status_code == 200
    record = r.json()
    assert record["id"] == marc[0]["recordId"] and record["state"] == "ACTUAL"
    assert record["externalIdsHolder"] == {"instanceId": marc[0]["instanceId"], "instanceHrid": marc[0]["hrid"]}
    # marc4j's MarcTxtWriter: subfields as `$a` and their data, no spaces; the writer's own line break at the end
    assert record["parsedRecord"]["formattedContent"] == (
        f"LEADER 00000nam a2200000 a 4500\n001 {marc[0]['hrid']}\n245 10$aTitle {marc[0]['hrid']} g0\n"
        f"999 ff$i{marc[0]['instanceId']}$s{marc[0]['recordId']}\n\n")
    missing = api.get(f"/source-storage/records/{uuid.uuid4()}/formatted", idType="INSTANCE")
    assert (missing.status_code, missing.text) == (404, f"Couldn't find record with id type INSTANCE and id {missing.url.split('/')[-2]}")


def test_formatted_record_id_types(api, marc):
    """RECORD (the default) is the matched id, SRS_RECORD the record's own id, EXTERNAL and INSTANCE the instance's;
    the newest generation in state ACTUAL or DELETED."""
    current, deleted = marc[1], marc[2]
    newest = api.get(f"/source-storage/records/{current['instanceId']}/formatted").json()  # matched id = instance id here
    assert newest["id"] == current["recordId"] and newest["generation"] == 1
    by_id = api.get(f"/source-storage/records/{current['recordId']}/formatted", idType="SRS_RECORD").json()
    assert by_id["matchedId"] == current["instanceId"]
    assert api.get(f"/source-storage/records/{current['instanceId']}/formatted", idType="EXTERNAL").json()["id"] == current["recordId"]
    gone = api.get(f"/source-storage/records/{deleted['instanceId']}/formatted", idType="INSTANCE").json()
    assert gone["state"] == "DELETED" and gone["deleted"] is True
    for id_type, record_id, status, text in (
            ("instance", current["instanceId"], 400, "Unknown id type instance"),
            ("INSTANCE", "not-a-uuid", 400, "Invalid UUID not-a-uuid"),
            ("AUTHORITY", current["instanceId"], 404, f"Couldn't find record with id type AUTHORITY and id {current['instanceId']}")):
        r = api.get(f"/source-storage/records/{record_id}/formatted", idType=id_type)
        assert (r.status_code, r.text) == (status, text)


def test_marc_authority_record_by_authority_id(api, folio_sandbox):
    """VAR's `source-storage/records/{authorityId}/formatted?idType=AUTHORITY`."""
    authority_id, record_id, hrid = str(uuid.uuid4()), str(uuid.uuid4()), unique("auth")
    content = authority_content(hrid, "Twain, Mark,", "n79021164", authority_id, record_id)
    insert_records(folio_sandbox.dsn, folio_sandbox.tenant, [{"id": record_id, "record_type": "MARC_AUTHORITY",
                                                               "external_id": authority_id, "hrid": hrid, "content": content}])
    r = api.get(f"/source-storage/records/{authority_id}/formatted", idType="AUTHORITY")
    assert r.status_code == 200
    record = r.json()
    assert (record["id"], record["recordType"], record["state"]) == (record_id, "MARC_AUTHORITY", "ACTUAL")
    assert record["externalIdsHolder"] == {"authorityId": authority_id, "authorityHrid": hrid}
    assert record["parsedRecord"]["content"] == content
    assert "100 1 $aTwain, Mark,\n" in record["parsedRecord"]["formattedContent"]
    assert api.get(f"/source-storage/records/{authority_id}/formatted", idType="INSTANCE").status_code == 404
    listed = api.get("/source-storage/source-records", recordType="MARC_AUTHORITY", recordId=record_id).json()
    assert listed["sourceRecords"][0]["externalIdsHolder"] == {"authorityId": authority_id, "authorityHrid": hrid}


def test_two_edits_of_one_record_take_generations_in_turn(folio_sandbox):
    """Two quickMARC edits of the same record at once: the second waits for the first and writes the next
    generation after it, so one generation stays ACTUAL."""
    record_id, external_id, hrid = str(uuid.uuid4()), str(uuid.uuid4()), unique("in")
    content = {"leader": BIB_LEADER, "fields": [{"001": hrid}]}
    insert_records(folio_sandbox.dsn, folio_sandbox.tenant, [{"id": record_id, "record_type": "MARC_BIB",
                                                               "external_id": external_id, "hrid": hrid, "content": content}])
    tenant, saved = folio_sandbox.tenant, []

    def edit(conn: psycopg.Connection) -> None:
        saved.append(srs.save_generation(conn, tenant, record_id, content, False, external_id, hrid, None))

    with psycopg.connect(folio_sandbox.dsn) as first, psycopg.connect(folio_sandbox.dsn, autocommit=True) as second:
        edit(first)  # its transaction stays open
        other = threading.Thread(target=lambda: _in_transaction(second, edit))
        other.start()
        other.join(0.5)
        assert other.is_alive()  # the second edit waits for the first
        first.commit()
        other.join(10)
    with psycopg.connect(folio_sandbox.dsn) as conn:
        rows = conn.execute(f"SELECT generation, state FROM {tenant}_mod_source_record_storage.records_lb "
                            "WHERE matched_id = %s ORDER BY generation", (record_id,)).fetchall()
    assert rows == [(0, "OLD"), (1, "OLD"), (2, "ACTUAL")] and len(saved) == 2


def _in_transaction(conn: psycopg.Connection, work) -> None:
    with conn.transaction():
        work(conn)
