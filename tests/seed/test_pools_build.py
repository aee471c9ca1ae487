"""`folioperf pools`: the pools file matches what the database holds, the API path writes the same
pools as the database path, and it works on data folioperf did not seed — but refuses a dataset the
tenant does not hold beside others folioperf seeded."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from folioperf.errors import FolioperfError
from folioperf.seed import datapools, dataset
from folioperf.testdata import RECORD_KINDS, Records, TestData

from .conftest import SCALES, run, run_process

WORKFLOWS = {"check-in-check-out": "cico", "renew": "renewals", "holds": "holds", "rih": "rih"}
INV, CIRC, USERS = "seedtest_mod_inventory_storage", "seedtest_mod_circulation_storage", "seedtest_mod_users"


def _write(target, tmp_path, workflow: str, *source: str, dataset_name: str | None = None) -> dict:
    path = tmp_path / f"{workflow}-{len(source)}.json"
    args = [dataset_name] if dataset_name else []
    r = run_process("pools", *args, "--workflow", workflow, "--tenant", target.tenant, *source, "-o", str(path),
                    env={"FOLIOPERF_PASSWORD": "admin"})
    assert r.returncode == 0, r.stderr
    return json.loads(path.read_text())


def _ids(rows) -> list[str]:
    return [r[0] for r in rows]


def test_cico_pools_match_the_database(target, seeded, tmp_path):
    ds = seeded("cico")
    c = ds.scaled(SCALES["cico"])
    doc = _write(target, tmp_path, "check-in-check-out", "--db", target.dsn)
    assert (doc["format"], doc["tenant"], doc["source"], doc["dataset"]) == ("folioperf-pools/1", "seedtest", "database", "cico")
    pools = doc["pools"]
    assert pools["service_points"] == [{"id": "3a40852d-49fd-4df2-a1f9-6e2641a6e91f", "name": "Circ Desk 1"}]
    users = ds.ids.of("user")
    assert [u["id"] for u in pools["users"]] == [users(i) for i in range(c.users)]  # the borrowers have loans
    assert all(u["barcode"] == ds.ids.user_barcode(i) for i, u in enumerate(pools["users"]))
    lent = target.sql(f"SELECT jsonb->>'itemId' FROM {CIRC}.loan WHERE jsonb->'status'->>'name' = 'Open' "
                      "AND jsonb->>'itemId' BETWEEN %s AND %s ORDER BY 1", ds.ids.of("item").low, ds.ids.of("item").high)
    assert [i["id"] for i in pools["checked_out_items"]] == _ids(lent) and len(lent) == c.loans
    available = target.sql(f"SELECT id::text, jsonb->>'barcode' FROM {INV}.item WHERE jsonb->'status'->>'name' = 'Available' "
                           "AND id BETWEEN %s AND %s ORDER BY id", ds.ids.of("item").low, ds.ids.of("item").high)
    assert [(i["id"], i["barcode"]) for i in pools["available_items"]] == available and len(available) == c.items - c.loans


def test_renew_pools_hold_users_with_exactly_n_open_loans(target, seeded, tmp_path):
    ds = seeded("renewals")
    pools = _write(target, tmp_path, "renew", "--db", target.dsn)["pools"]
    assert list(pools) == ["loan_users_10", "loan_users_50", "loan_users_100", "loan_users_200"]
    for n in (10, 50, 100, 200):
        assert len(pools[f"loan_users_{n}"]) == 1
        user = pools[f"loan_users_{n}"][0]
        open_loans = target.sql(f"SELECT count(*) FROM {CIRC}.loan WHERE jsonb->>'userId' = %s AND jsonb->'status'->>'name' = 'Open'",
                                user["id"])[0][0]
        assert open_loans == n
        assert target.sql(f"SELECT jsonb->>'barcode' FROM {USERS}.users WHERE id = %s", user["id"])[0][0] == user["barcode"]
        assert user["barcode"].startswith(ds.ids.user_barcode_prefix)


def test_holds_and_rih_pools_match_the_database(target, seeded, tmp_path):
    ds = seeded("holds")
    c = ds.scaled(SCALES["holds"])
    pools = _write(target, tmp_path, "holds", "--db", target.dsn)["pools"]
    assert [sp["name"] for sp in pools["pickup_service_points"]] == [f"Circ Desk {i}" for i in range(1, 6)]
    requested = target.sql(f"SELECT jsonb->>'requesterId', jsonb->>'itemId', jsonb->>'instanceId' FROM {CIRC}.request "
                           "WHERE jsonb->>'status' LIKE 'Open%%' AND id BETWEEN %s AND %s", ds.ids.of("request").low,
                           ds.ids.of("request").high)
    assert len(requested) == c.open_requests + c.page_requests  # its Holds and Pages
    requesters = {r["id"] for r in pools["requesters"]}
    assert len(requesters) == c.all_users - len(requested) and not requesters & {r[0] for r in requested}
    instances = {i["id"] for i in pools["instances"]}
    assert len(instances) == c.instances - len(requested) and not instances & {r[2] for r in requested}
    items = pools["items"]
    assert len(items) == c.items - c.loans - c.page_requests  # available (not Paged) and without requests
    for item in items[:5]:
        row = target.sql(f"SELECT i.jsonb->>'barcode', i.jsonb->'status'->>'name', h.jsonb->>'instanceId' FROM {INV}.item i "
                         f"JOIN {INV}.holdings_record h ON h.id = i.holdingsrecordid WHERE i.id = %s", item["id"])
        assert row == [(item["barcode"], "Available", item["instanceId"])]
    rih = seeded("rih")
    rih_pools = _write(target, tmp_path, "rih", "--db", target.dsn)["pools"]
    expected = target.sql(f"SELECT id::text, jsonb->>'hrid' FROM {INV}.instance WHERE id BETWEEN %s AND %s ORDER BY id",
                          rih.ids.of("instance").low, rih.ids.of("instance").high)
    assert [(i["id"], i["hrid"]) for i in rih_pools["instances"]] == expected
    assert len(expected) == rih.scaled(SCALES["rih"]).instances


@pytest.mark.parametrize("workflow", list(WORKFLOWS))
def test_the_api_path_writes_the_same_pools_as_the_database_path(target, seeded, tmp_path, workflow):
    seeded(WORKFLOWS[workflow])
    by_db = _write(target, tmp_path, workflow, "--db", target.dsn)
    by_api = _write(target, tmp_path, workflow, "--okapi-url", target.url)
    assert by_api["source"] == "api" and by_api["pools"] == by_db["pools"]


def test_pools_of_data_folioperf_did_not_seed_come_from_the_whole_tenant(scratch_db, tmp_path):
    dsn = scratch_db()
    assert run("seed", "cico", "--db", dsn, "--scale", "0.01")[0] == 0
    with psycopg.connect(dsn) as conn:  # without its marker, cico's records are data folioperf did not seed
        conn.execute("DELETE FROM diku_mod_configuration.config_data WHERE jsonb->>'module' = 'FOLIOPERF'")
    path = tmp_path / "rih.json"
    code, out, err = run("pools", "rih", "--db", dsn, "-o", str(path))
    assert code == 0, err
    instances = json.loads(path.read_text())["pools"]["instances"]
    cico = dataset.load("cico")
    assert [i["id"] for i in instances] == [cico.ids.of("instance")(i) for i in range(250)]
    assert instances[0]["hrid"] == cico.ids.instance_hrid(0)


def test_pools_of_a_dataset_not_seeded_beside_one_that_is_are_refused_as_reset_refuses(scratch_db, tmp_path):
    """Only cico is seeded: the holds pools would be cico's patrons and items under the holds label."""
    dsn = scratch_db()
    assert run("seed", "cico", "--db", dsn, "--scale", "0.01")[0] == 0
    refusal = ("folioperf: error: dataset holds is not seeded in tenant diku (it holds cico); run `folioperf seed "
               "holds` first\n")
    path = tmp_path / "holds.json"
    assert run("pools", "--workflow", "holds", "--db", dsn, "-o", str(path)) == (2, "", refusal)
    assert run("reset", "holds", "--db", dsn) == (2, "", refusal)
    assert list(tmp_path.iterdir()) == []


def test_the_api_path_refuses_a_dataset_the_tenant_does_not_hold_too(target, seeded, tmp_path):
    seeded("cico")
    other = tmp_path / "other.toml"  # a dataset never seeded anywhere: its own ids and prefix
    other.write_text(Path(dataset.locate("cico")).read_text().replace('prefix = "cico"', 'prefix = "othr"'))
    r = run_process("pools", str(other), "--workflow", "rih", "--okapi-url", target.url, "--tenant", target.tenant,
                    "-o", str(tmp_path / "other.json"), env={"FOLIOPERF_PASSWORD": "admin"})
    assert r.returncode == 2
    assert r.stderr.startswith(f"folioperf: error: dataset other is not seeded in tenant {target.tenant} (it holds ")
    assert "cico" in r.stderr and r.stderr.count("\n") == 1
    assert not (tmp_path / "other.json").exists()


def test_an_empty_pool_is_one_line_and_writes_nothing(scratch_db, tmp_path):
    dsn = scratch_db()
    path = tmp_path / "renew.json"
    r = run_process("pools", "--workflow", "renew", "--db", dsn, "-o", str(path))
    assert r.returncode == 2
    assert r.stderr == ("folioperf: error: pool loan_users_10 is empty in tenant diku: the tenant has no matching records "
                        "(seed them with `folioperf seed renewals`, or run `folioperf reset renewals` after a run)\n")
    assert not path.exists() and list(tmp_path.iterdir()) == []


def test_the_api_path_needs_a_password_and_says_so_in_one_line(target, tmp_path):
    import os
    import subprocess
    import sys

    path = tmp_path / "rih.json"
    env = {k: v for k, v in os.environ.items() if k != "FOLIOPERF_PASSWORD"}
    r = subprocess.run([sys.executable, "-m", "folioperf", "pools", "rih", "--okapi-url", target.url, "--tenant", target.tenant,
                        "-o", str(path)], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=60)
    assert (r.returncode, r.stderr) == (2, "folioperf: error: no password for diku_admin: set FOLIOPERF_PASSWORD "
                                           "(or run in a terminal to be asked)\n")
    r = run_process("pools", "rih", "--okapi-url", target.url, "--tenant", target.tenant, "-o", str(path),
                    env={"FOLIOPERF_PASSWORD": "s3cret-guess-x7"})
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith(f"folioperf: error: login as diku_admin at {target.url} (tenant seedtest) failed: HTTP 422")
    assert "s3cret-guess-x7" not in r.stderr and not path.exists()


def _nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)


@pytest.mark.parametrize("workflow", list(WORKFLOWS))
def test_pools_are_read_without_pairwise_joins(target, seeded, monkeypatch, workflow):
    """No pool query compares every row of one table with every row of another. PostgreSQL has no statistics
    on JSON fields: it took cico's 9,100 open loans for 45 rows and compared each of 5,000 items with each
    loan, 33 million comparisons in a nested loop; at full scale, cico's pools took 8 to 15 s before a run could
    start (now under 1 s)."""
    from folioperf.seed import datapools
    from folioperf.workflow import find_workflow  # Locust, unpatched: folioperf.cli has set LOCUST_SKIP_MONKEY_PATCH

    ds = seeded(WORKFLOWS[workflow])
    plans = []

    class Explaining:
        """The connection, planning each query it runs (as it runs: under the transaction's settings) first."""

        def __init__(self, conn):
            self.conn = conn

        def execute(self, query, params=None):
            if isinstance(query, sql.Composable):
                explain = sql.SQL("EXPLAIN (FORMAT JSON) {}").format(query)
                plans.append(self.conn.execute(explain, params).fetchone()[0][0]["Plan"])
            return self.conn.execute(query, params)

        def __getattr__(self, name):
            return getattr(self.conn, name)

    class Source(datapools.DatabaseSource):
        def __init__(self, conn, layout):
            super().__init__(Explaining(conn), layout)

    monkeypatch.setattr(datapools, "DatabaseSource", Source)
    with datapools.database(target.dsn, target.tenant) as source:
        pools = datapools.draw(source, [datapools.Unit(str, find_workflow(workflow), ds)], 100_000)
    assert pools and all(pools.values()) and plans
    # a nested loop with a join filter compares every row of one side with every row of the other (one that
    # looks each row up in an index, as the holdings of items are, is fine)
    pairwise = [f"Nested Loop {node['Join Type']}: {node['Join Filter']}" for plan in plans for node in _nodes(plan)
                if node["Node Type"] == "Nested Loop" and "Join Filter" in node]
    assert pairwise == []


# A query of each kind of record, with the same condition for the database (SQL) and the APIs (CQL)
QUERIES = {
    "users": Records("users", fields={"id": "id", "barcode": "barcode", "last": "personal.lastName"},
                     sql="r.jsonb->>'active' = 'true'", cql="active==true"),
    "items": Records("items", fields=("id", "barcode", "status.name"), sql="r.jsonb->'status'->>'name' = 'Checked out'",
                     cql='status.name=="Checked out"'),
    "instances": Records("instances", fields=("id", "hrid", "title")),
    "holdings": Records("holdings", fields=("id", "instanceId", "permanentLocationId")),
    "loans": Records("loans", fields=("id", "itemId", "userId"), sql="r.jsonb->'status'->>'name' = 'Open'",
                     cql='status.name=="Open"'),
    "requests": Records("requests", fields=("id", "itemId", "requesterId"), sql="r.jsonb->>'status' LIKE 'Open%'",
                        cql='status=="Open*"'),
    "service_points": Records("service_points", fields=("id", "name"), sql="r.jsonb->>'pickupLocation' = 'true'",
                              cql="pickupLocation==true"),
    "locations": Records("locations", fields=("id", "name", "primaryServicePoint")),
    "patron_groups": Records("patron_groups", fields=("id", "group")),
}


@pytest.mark.parametrize("kind", list(RECORD_KINDS))
def test_a_records_query_draws_the_same_entries_from_the_database_and_the_apis(target, seeded, kind):
    """Scoped to the dataset's records where the kind has them, in a tenant that holds several datasets."""
    assert list(QUERIES) == list(RECORD_KINDS)  # a kind added is a kind tested
    ds = seeded("holds")
    query = QUERIES[kind]
    with datapools.database(target.dsn, target.tenant) as source:
        by_db = TestData(source, ds, datapools.scope_of(source, ds), 500).records(query)
    source = datapools.api(target.url, target.tenant, "diku_admin", "admin")
    by_api = TestData(source, ds, datapools.scope_of(source, ds), 500).records(query)
    assert by_db and by_db == by_api
    assert list(by_db[0]) == list(query.fields) and [e["id"] for e in by_db] == sorted(e["id"] for e in by_db)
    scope = RECORD_KINDS[kind].scope
    if scope:  # the holds dataset's own: its ids, or its items'
        ids = ds.ids.of(scope)
        field = "id" if RECORD_KINDS[kind].scope_field == "id" else "itemId"
        assert all(ids.low <= e[field] <= ids.high for e in by_db)


def test_a_records_query_with_a_table_that_does_not_exist_is_one_line(target, seeded):
    ds = seeded("holds")
    query = Records("users", sql="r.id IN (SELECT (jsonb->>'userId')::uuid FROM {loans})")
    with datapools.database(target.dsn, target.tenant) as source:
        with pytest.raises(FolioperfError) as info:
            TestData(source, ds, None, 10).records(query)
    assert str(info.value).startswith(f"no table 'loans' in tenant {target.tenant} (tables: ")


def test_pools_of_nothing_named_is_one_line(tmp_path):
    assert run("pools", "-o", str(tmp_path / "pools.json")) == (
        2, "", "folioperf: error: name a dataset (bls, cico, holds, iro, pro, renewals, rih, var or a .toml file) or a --workflow\n")
    assert list(tmp_path.iterdir()) == []
