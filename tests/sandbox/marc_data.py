"""MARC records for the sandbox tests, written into mod-source-record-storage's tables the way the seeder and
FOLIO's data import leave them: a snapshot, and per record a records_lb row with its raw and parsed content."""

from __future__ import annotations

import json
import uuid

import psycopg

from tests.sandbox.inventory_data import TEXT_TYPE, Api, unique

BIB_LEADER = "00000nam a2200000 a 4500"
AUTHORITY_LEADER = "00000nz  a2200000n  4500"


def bib_content(hrid: str, title: str, instance_id: str, record_id: str, extra: list[dict] = ()) -> dict:
    """A book's MARC bib as the seeder writes it: 001, 005, 008, 020, 100, 245, 264 and 999 ff."""
    return {"leader": BIB_LEADER, "fields": [
        {"001": hrid}, {"005": "20240101120000.0"}, {"008": "240101s2020    xxu                 eng d"},
        {"020": {"ind1": " ", "ind2": " ", "subfields": [{"a": "9780306406157"}]}},
        {"100": {"ind1": "1", "ind2": " ", "subfields": [{"a": "Author, An,"}, {"e": "author."}]}},
        {"245": {"ind1": "1", "ind2": "0", "subfields": [{"a": title}]}},
        {"264": {"ind1": " ", "ind2": "1", "subfields": [{"a": "Boston"}, {"b": "Press"}, {"c": "2020"}]}},
        *extra,
        {"999": {"ind1": "f", "ind2": "f", "subfields": [{"i": instance_id}, {"s": record_id}]}}]}


def authority_content(hrid: str, heading: str, natural_id: str, authority_id: str, record_id: str) -> dict:
    """A personal-name MARC authority: 001, 005, 008, 010 (the natural id), 100 and 999 ff."""
    return {"leader": AUTHORITY_LEADER, "fields": [
        {"001": hrid}, {"005": "20240101120000.0"}, {"008": "240101n| azannaabn          |a aaa      "},
        {"010": {"ind1": " ", "ind2": " ", "subfields": [{"a": natural_id}]}},
        {"100": {"ind1": "1", "ind2": " ", "subfields": [{"a": heading}]}},
        {"999": {"ind1": "f", "ind2": "f", "subfields": [{"i": authority_id}, {"s": record_id}]}}]}


def insert_records(dsn: str, tenant: str, records: list[dict]) -> str:
    """Each of `records` (id, matched_id, generation, record_type, external_id, state, hrid, content) under one new
    COMMITTED snapshot, whose id is returned."""
    schema = f"{tenant}_mod_source_record_storage"
    snapshot = str(uuid.uuid4())
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {schema}.snapshots_lb (id, status) VALUES (%s, 'COMMITTED')", (snapshot,))
        for r in records:
            conn.execute(
                f"INSERT INTO {schema}.records_lb (id, snapshot_id, matched_id, generation, record_type, external_id, state, "
                f"leader_record_status, \"order\", created_date, updated_date, external_hrid) "
                f"VALUES (%s, %s, %s, %s, %s, %s, %s, %s, 0, now(), now(), %s)",
                (r["id"], snapshot, r.get("matched_id", r["id"]), r.get("generation", 0), r["record_type"], r["external_id"],
                 r.get("state", "ACTUAL"), r["content"]["leader"][5], r["hrid"]))
            conn.execute(f"INSERT INTO {schema}.raw_records_lb (id, content) VALUES (%s, %s)", (r["id"], json.dumps(r["content"])))
            conn.execute(f"INSERT INTO {schema}.marc_records_lb (id, content) VALUES (%s, %s)", (r["id"], json.dumps(r["content"])))
    return snapshot


def marc_instance(api: Api, folio_sandbox, title: str | None = None) -> dict:
    """An instance (source MARC) with its MARC bib in SRS, generation 0 (record id = matched id)."""
    title = title or unique("A MARC book ")
    instance = api.created("/instance-storage/instances", {"title": title, "source": "MARC", "instanceTypeId": TEXT_TYPE})
    record_id = str(uuid.uuid4())
    content = bib_content(instance["hrid"], title, instance["id"], record_id)
    insert_records(folio_sandbox.dsn, folio_sandbox.tenant, [{"id": record_id, "record_type": "MARC_BIB",
                                                               "external_id": instance["id"], "hrid": instance["hrid"],
                                                               "content": content}])
    return {"instance": instance, "recordId": record_id, "content": content}
