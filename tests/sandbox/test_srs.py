"""mod-source-record-storage reads over HTTP (docs/folio.md §3.5 RIH, §4.8): source records by instance
HRID or id, in SRS's shapes, from its relational tables."""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest

from tests.sandbox.inventory_data import Api, unique


@pytest.fixture(scope="module")
def marc(folio_sandbox):
    """Three instances with MARC records as PTF's generator writes them: one current, one superseded by a
    newer generation, one deleted."""
    schema = f"{folio_sandbox.tenant}_mod_source_record_storage"
    snapshot = str(uuid.uuid4())
    made = []
    with psycopg.connect(folio_sandbox.dsn, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {schema}.snapshots_lb (id, status) VALUES (%s, 'COMMITTED')", (snapshot,))
        for n, state in enumerate(("ACTUAL", "ACTUAL", "DELETED")):
            instance_id, hrid = str(uuid.uuid4()), unique("cenin")
            generations = [("OLD", 0), ("ACTUAL", 1)] if n == 1 else [(state, 0)]
            for record_state, generation in generations:
                record_id = str(uuid.uuid4())
                content = {"leader": "00000nam a2200000 a 4500", "fields": [
                    {"001": hrid}, {"245": {"ind1": "1", "ind2": "0", "subfields": [{"a": f"Title {hrid} g{generation}"}]}},
                    {"999": {"ind1": "f", "ind2": "f", "subfields": [{"i": instance_id}, {"s": record_id}]}}]}
                conn.execute(
                    f"INSERT INTO {schema}.records_lb (id, snapshot_id, matched_id, generation, record_type, external_id, state, "
                    f"\"order\", created_date, updated_date, external_hrid) VALUES (%s, %s, %s, %s, 'MARC_BIB', %s, %s, 0, now(), now(), %s)",
                    (record_id, snapshot, instance_id, generation, instance_id, record_state, hrid))
                conn.execute(f"INSERT INTO {schema}.raw_records_lb (id, content) VALUES (%s, %s)", (record_id, json.dumps(content)))
                conn.execute(f"INSERT INTO {schema}.marc_records_lb (id, content) VALUES (%s, %s)", (record_id, json.dumps(content)))
            made.append({"instanceId": instance_id, "hrid": hrid, "recordId": record_id, "snapshotId": snapshot})
    return made


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
    assert record["parsedRecord"]["formattedContent"].splitlines()[:2] == ["LEADER 00000nam a2200000 a 4500", f"001 {marc[0]['hrid']}"]
    assert f"245 10 $a Title {marc[0]['hrid']} g0" in record["parsedRecord"]["formattedContent"]
    missing = api.get(f"/source-storage/records/{uuid.uuid4()}/formatted", idType="INSTANCE")
    assert missing.status_code == 404
