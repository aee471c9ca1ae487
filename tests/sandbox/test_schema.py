"""FOLIO's invariants are enforced by PostgreSQL itself, as in a real FOLIO database (docs/folio.md §6)."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from psycopg.types.json import Jsonb

TENANT = "diku"


@pytest.fixture()
def conn(folio_sandbox):
    with psycopg.connect(folio_sandbox.dsn) as c:
        yield c
        c.rollback()


def _insert(conn, schema_table: str, record: dict) -> str:
    rid = str(uuid.uuid4())
    conn.execute(f"INSERT INTO {TENANT}_{schema_table} (id, jsonb) VALUES (%s, %s)", (rid, Jsonb(record)))
    return rid


def _violates(conn, schema_table: str, record: dict) -> bool:
    try:
        with conn.transaction():
            _insert(conn, schema_table, record)
    except psycopg.errors.UniqueViolation:
        return True
    return False


def test_item_barcode_unique_case_insensitive(conn):
    code = uuid.uuid4().hex[:10]
    _insert(conn, "mod_inventory_storage.item", {"barcode": code.upper(), "status": {"name": "Available"}})
    assert _violates(conn, "mod_inventory_storage.item", {"barcode": code.lower(), "status": {"name": "Available"}})


def test_user_barcode_and_username_unique(conn):
    name = "u" + uuid.uuid4().hex[:8]
    _insert(conn, "mod_users.users", {"username": name, "barcode": name})
    assert _violates(conn, "mod_users.users", {"username": name.upper(), "barcode": "other" + name})
    assert _violates(conn, "mod_users.users", {"username": "other" + name, "barcode": name})


def test_one_open_loan_per_item(conn):
    item = str(uuid.uuid4())
    _insert(conn, "mod_circulation_storage.loan", {"itemId": item, "status": {"name": "Open"}, "action": "checkedout"})
    assert _violates(conn, "mod_circulation_storage.loan", {"itemId": item, "status": {"name": "Open"}, "action": "checkedout"})
    # closed loans of the same item are fine
    _insert(conn, "mod_circulation_storage.loan", {"itemId": item, "status": {"name": "Closed"}, "action": "checkedin"})
    _insert(conn, "mod_circulation_storage.loan", {"itemId": item, "status": {"name": "Closed"}, "action": "checkedin"})


def test_request_queue_position_unique_per_item(conn):
    item = str(uuid.uuid4())
    _insert(conn, "mod_circulation_storage.request", {"itemId": item, "position": 1, "status": "Open - Not yet filled"})
    _insert(conn, "mod_circulation_storage.request", {"itemId": item, "position": 2, "status": "Open - Not yet filled"})
    assert _violates(conn, "mod_circulation_storage.request", {"itemId": item, "position": 2, "status": "Open - Not yet filled"})
    # closed requests have no position
    _insert(conn, "mod_circulation_storage.request", {"itemId": item, "status": "Closed - Filled"})
    _insert(conn, "mod_circulation_storage.request", {"itemId": item, "status": "Closed - Filled"})


def test_rmb_triggers_fill_id_metadata_and_foreign_keys(conn):
    loan_type = conn.execute(f"SELECT id FROM {TENANT}_mod_inventory_storage.loan_type LIMIT 1").fetchone()[0]
    rid = _insert(conn, "mod_inventory_storage.item", {
        "barcode": uuid.uuid4().hex, "status": {"name": "Available"}, "permanentLoanTypeId": str(loan_type),
        "metadata": {"createdDate": "2024-05-01T10:00:00.000+00:00", "createdByUserId": "x"},
    })
    row = conn.execute(
        f"SELECT jsonb->>'id', jsonb->'_version', permanentloantypeid, creation_date, created_by"
        f" FROM {TENANT}_mod_inventory_storage.item WHERE id = %s",
        (rid,),
    ).fetchone()
    assert row[0] == rid and row[1] == 1 and row[2] == loan_type
    assert str(row[3]).startswith("2024-05-01 10:00:00") and row[4] == "x"


def test_schemas_follow_folio_layout(conn):
    schemas = {r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s", (f"{TENANT}_mod_%",))}
    for module in ("mod_users", "mod_inventory_storage", "mod_circulation_storage", "mod_source_record_storage",
                   "mod_feesfines", "mod_patron_blocks", "mod_configuration", "mod_login", "mod_permissions"):
        assert f"{TENANT}_{module}" in schemas
    indexes = {r[0] for r in conn.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = %s", (f"{TENANT}_mod_users",))}
    assert any("lower(diku_mod_users.f_unaccent((jsonb ->> 'barcode'::text)))" in d and "UNIQUE" in d for d in indexes)
