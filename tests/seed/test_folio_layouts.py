"""Seeding a FOLIO database that is not a fresh sandbox: no superuser, a module's own trigger, reference
records under other ids or missing, circulation rules that do not use the dataset's policy, big loads
that rebuild indexes."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from psycopg import sql

from folioperf.seed import dataset

from .conftest import run

SCHEMAS = ("mod_users", "mod_permissions", "mod_inventory_storage", "mod_circulation_storage", "mod_source_record_storage",
           "mod_feesfines", "mod_patron_blocks", "mod_notify", "mod_configuration")


def _state(dsn: str, ds: dataset.Dataset) -> dict:
    """What a seed leaves behind, minus timestamps: FK and metadata columns, versions, audit rows."""
    items, loans = ds.ids.of("item"), ds.ids.of("loan")
    with psycopg.connect(dsn) as conn:
        return {
            "items": conn.execute(
                "SELECT id::text, holdingsrecordid::text, materialtypeid::text, permanentloantypeid::text, "
                "effectivelocationid::text, creation_date IS NOT NULL, created_by, jsonb->'_version', jsonb->>'id' = id::text, "
                "jsonb->>'barcode' FROM diku_mod_inventory_storage.item WHERE id BETWEEN %s AND %s ORDER BY id",
                (items.low, items.high)).fetchall(),
            "holdings": conn.execute(
                "SELECT count(*), count(instanceid), count(permanentlocationid), count(effectivelocationid), count(sourceid) "
                "FROM diku_mod_inventory_storage.holdings_record").fetchall(),
            "audit": conn.execute(
                "SELECT jsonb->'loan'->>'id', jsonb->>'operation' FROM diku_mod_circulation_storage.audit_loan "
                "WHERE jsonb->'loan'->>'id' BETWEEN %s AND %s ORDER BY 1", (loans.low, loans.high)).fetchall(),
            "users": conn.execute("SELECT count(patrongroup), count(creation_date) FROM diku_mod_users.users").fetchall(),
        }


def test_without_superuser_folios_triggers_write_what_the_fast_path_writes(scratch_db):
    fast, slow = scratch_db(), scratch_db()
    role = f"seeder_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(slow, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        for module in SCHEMAS:
            schema = sql.Identifier(f"diku_{module}")
            conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(schema, sql.Identifier(role)))
            conn.execute(sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {} TO {}").format(
                schema, sql.Identifier(role)))
    try:
        code, out, err = run("seed", "renewals", "--db", fast, "--scale", "0.1")
        assert code == 0, err
        assert "FOLIO's" not in out
        as_role = psycopg.conninfo.make_conninfo(slow, user=role)
        code, out, err = run("seed", "renewals", "--db", as_role, "--scale", "0.1")
        assert code == 0, err
        assert "bypassed" not in out and out.count("FOLIO's") == 11  # every table; audit_loan rows come from the trigger
        ds = dataset.load("renewals")
        a, b = _state(fast, ds), _state(slow, ds)
        assert a == b
        assert len(a["items"]) == 400 and all(row[1] and row[2] and row[3] and row[4] for row in a["items"])
        assert len(a["audit"]) == 360 and {op for _, op in a["audit"]} == {"I"}
        code, out, err = run("reset", "renewals", "--db", as_role)
        assert code == 0, err
        assert _state(slow, ds)["items"] == a["items"]
    finally:
        with psycopg.connect(slow, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_a_modules_own_trigger_sends_its_table_through_folios_triggers(scratch_db):
    dsn = scratch_db()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE FUNCTION diku_mod_inventory_storage.stamp() RETURNS trigger AS $$ BEGIN "
                     "NEW.jsonb = jsonb_set(NEW.jsonb, '{stamped}', 'true'); RETURN NEW; END $$ LANGUAGE plpgsql")
        conn.execute("CREATE TRIGGER stamp_item BEFORE INSERT ON diku_mod_inventory_storage.item "
                     "FOR EACH ROW EXECUTE FUNCTION diku_mod_inventory_storage.stamp()")
    code, out, err = run("seed", "cico", "--db", dsn, "--scale", "0.01")
    assert code == 0, err
    assert [line.split()[0] for line in out.splitlines() if "FOLIO's" in line] == ["item"]
    with psycopg.connect(dsn) as conn:
        stamped, linked, versioned = conn.execute(
            "SELECT count(*) FILTER (WHERE jsonb->'stamped' = 'true'), count(holdingsrecordid), "
            "count(*) FILTER (WHERE jsonb->'_version' = '1') FROM diku_mod_inventory_storage.item").fetchone()
    assert stamped == linked == versioned == 250


def test_reference_records_are_found_by_name_or_added(scratch_db):
    dsn = scratch_db()
    moved = str(uuid.uuid4())
    with psycopg.connect(dsn, autocommit=True) as conn:  # a tenant whose Main Library has another id and no "Can circulate"
        conn.execute("UPDATE diku_mod_inventory_storage.location SET id = %s WHERE jsonb->>'name' = 'Main Library'", (moved,))
        conn.execute("DELETE FROM diku_mod_inventory_storage.loan_type WHERE jsonb->>'name' = 'Can circulate'")
    code, out, err = run("seed", "cico", "--db", dsn, "--scale", "0.01")
    assert code == 0, err
    assert "reference records added: loan_types 'Can circulate'" in out
    assert f"existing reference records used: locations 'Main Library' (id {moved})" in out
    with psycopg.connect(dsn) as conn:
        locations = conn.execute("SELECT DISTINCT permanentlocationid::text FROM diku_mod_inventory_storage.holdings_record").fetchall()
        at_checkout = conn.execute("SELECT DISTINCT jsonb->>'itemEffectiveLocationIdAtCheckOut' "
                                   "FROM diku_mod_circulation_storage.loan").fetchall()
        loan_types = conn.execute("SELECT count(*) FROM diku_mod_inventory_storage.loan_type WHERE jsonb->>'name' = 'Can circulate'")
        assert loan_types.fetchone()[0] == 1
    assert locations == at_checkout == [(moved,)]


def test_instances_refer_to_the_tenants_identifier_and_contributor_name_types(scratch_db):
    """ISBN and Personal name are reference records like any other: found by name under another id, or added."""
    dsn = scratch_db()
    isbn = str(uuid.uuid4())
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE diku_mod_inventory_storage.identifier_type SET id = %s WHERE jsonb->>'name' = 'ISBN'", (isbn,))
        conn.execute("DELETE FROM diku_mod_inventory_storage.contributor_name_type WHERE jsonb->>'name' = 'Personal name'")
    code, out, err = run("seed", "rih", "--db", dsn, "--scale", "0.005")
    assert code == 0, err
    assert "contributor_name_types 'Personal name'" in out and f"identifier_types 'ISBN' (id {isbn})" in out
    with psycopg.connect(dsn) as conn:
        used = conn.execute(
            "SELECT DISTINCT i->>'identifierTypeId', c->>'contributorNameTypeId' FROM diku_mod_inventory_storage.instance, "
            "jsonb_array_elements(jsonb->'identifiers') i, jsonb_array_elements(jsonb->'contributors') c").fetchall()
        personal = conn.execute("SELECT id::text FROM diku_mod_inventory_storage.contributor_name_type "
                                "WHERE jsonb->>'name' = 'Personal name'").fetchall()
    assert used == [(isbn, personal[0][0])]


def test_circulation_rules_that_do_not_use_the_policy_are_reported_not_changed(scratch_db):
    dsn = scratch_db()
    rules = ("priority: t, s, c, b, a, m, g\n"
             "fallback-policy: l 43198de5-f56a-4a53-a0bd-5a324418967a r 0218a5be-a651-5730-8640-0b85c8ad66e5\n")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE diku_mod_circulation_storage.circulation_rules"
                     " SET jsonb = jsonb_set(jsonb, '{rulesAsText}', to_jsonb(%s::text))",
                     (rules,))
    code, out, err = run("seed", "renewals", "--db", dsn, "--scale", "0.1")
    assert code == 0
    assert err == ("folioperf: warning: the circulation rules of tenant diku do not mention loan policy 'Example Loan Policy' "
                   "(340e491a-f3e3-55bd-b3f0-7d9e813aefa2): check-out, renewal and due dates of the seeded items follow the "
                   "tenant's own rules (folioperf does not change them)\n")
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT jsonb->>'rulesAsText' FROM diku_mod_circulation_storage.circulation_rules").fetchone()[0] == rules


def _indexes(dsn: str) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT schemaname, indexname, indexdef FROM pg_indexes WHERE schemaname LIKE 'diku_%%' "
                            "ORDER BY 1, 2").fetchall()


@pytest.mark.long_run(10)
def test_a_big_load_rebuilds_every_index_it_dropped(scratch_db):
    dsn = scratch_db()
    before = _indexes(dsn)
    code, out, err = run("seed", "cico", "--db", dsn, "--scale", "0.5")
    assert code == 0, err
    assert "rebuilt 10" in [line for line in out.splitlines() if line.split()[:1] == ["item"]][0]
    assert _indexes(dsn) == before
    with psycopg.connect(dsn) as conn:  # the rebuilt unique index still refuses a duplicate barcode
        duplicate = conn.execute("SELECT count(*) FROM diku_mod_inventory_storage.item").fetchone()[0]
        assert duplicate == 12_500
        try:
            conn.execute("INSERT INTO diku_mod_inventory_storage.item (id, jsonb) SELECT gen_random_uuid(), jsonb - 'id' "
                         "FROM diku_mod_inventory_storage.item LIMIT 1")
            raise AssertionError("a duplicate barcode was accepted")
        except psycopg.errors.UniqueViolation:
            pass
