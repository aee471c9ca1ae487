"""`folioperf seed`: datasets land in the sandbox and FOLIO's APIs show them; seeding is idempotent,
deterministic, transactional (an error or Ctrl-C leaves nothing) and says clearly what is wrong."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import psycopg
import pytest

from folioperf import db
from folioperf.seed import dataset

from .conftest import SCALES, run, run_process

DEADLINE = 120.0


def _in_range(dsn: str, table: str, ds: dataset.Dataset, kind: str, tenant: str = "diku") -> int:
    r = ds.ids.of(kind)
    with psycopg.connect(dsn) as conn:
        return conn.execute(f"SELECT count(*) FROM {tenant}_{table} WHERE id BETWEEN %s AND %s", (r.low, r.high)).fetchone()[0]


def test_renewals_gives_borrowers_with_exactly_n_open_loans_on_checked_out_items(target, seeded):
    ds = seeded("renewals")
    c = ds.scaled(SCALES["renewals"])
    borrowers = [ds.ids.of("user")(c.users + b) for b in range(c.borrowers)]
    lent: set[str] = set()
    for user_id, n in zip(borrowers, c.loans_per_user):  # one borrower per loan count at this scale
        body = target.get("/circulation/loans", query=f"(userId=={user_id} and status.name==Open)", limit=1000)
        assert body["totalRecords"] == n and len(body["loans"]) == n
        assert {loan["loanPolicyId"] for loan in body["loans"]} == {ds.used("loan_policy")[0]["id"]}
        lent |= {loan["itemId"] for loan in body["loans"]}
    assert len(lent) == c.loans == 360
    out = target.get("/inventory/items", query=f'(barcode=="{ds.ids.item_barcode_prefix}*" and status.name=="Checked out")',
                     limit=1000)
    assert out["totalRecords"] == 360 and {i["id"] for i in out["items"]} == lent
    available = target.get("/inventory/items", query=f'barcode=="{ds.ids.item_barcode(c.loans)}"')["items"][0]
    assert available["status"]["name"] == "Available"
    assert available["effectiveLocation"]["name"] == "Main Library" and available["materialType"]["name"] == "book"
    user = target.get(f"/users/{borrowers[3]}")
    assert user["barcode"] == ds.ids.user_barcode(c.users + 3) and user["active"] is True and user["type"] == "patron"


def test_cico_holds_and_rih_are_visible_through_the_api(target, seeded):
    cico = seeded("cico")
    c = cico.scaled(SCALES["cico"])
    assert target.get("/users", query=f'barcode=="{cico.ids.user_barcode_prefix}*"', limit=0)["totalRecords"] == c.all_users
    items = target.get("/item-storage/items", query=f'barcode=="{cico.ids.item_barcode_prefix}*" and status.name=="Available"',
                       limit=0)
    assert items["totalRecords"] == c.items - c.loans

    holds = seeded("holds")
    h = holds.scaled(SCALES["holds"])
    requests_ = target.get("/circulation/requests", query='status=="Open - Not yet filled"', limit=1000)["requests"]
    ours = [r for r in requests_ if r["id"].startswith(holds.ids.of("request").prefix)]
    assert len(ours) == h.open_requests + h.page_requests and h.open_requests > 0 and h.page_requests > 0
    for r in ours:
        item = target.get(f"/inventory/items/{r['itemId']}")
        # Holds on checked-out items; Pages (datasets/holds.toml's page_requests) on Paged ones
        assert (item["status"]["name"], r["requestType"]) in (("Checked out", "Hold"), ("Paged", "Page"))
        assert r["position"] == 1
        # stored as mod-circulation 24.3 on stores a request: the item's location and its primary desk
        assert r["item"]["itemEffectiveLocationId"] == item["effectiveLocation"]["id"]
        assert r["item"]["itemEffectiveLocationName"] == item["effectiveLocation"]["name"]
        assert r["item"]["retrievalServicePointName"]

    rih = seeded("rih")
    hrid = rih.ids.instance_hrid(7)
    instance = target.get("/instance-storage/instances", query=f'hrid=="{hrid}"')["instances"][0]
    srs = target.get("/source-storage/source-records", instanceHrid=hrid, limit=1000)
    assert srs["totalRecords"] == 1
    record = srs["sourceRecords"][0]
    assert record["externalIdsHolder"] == {"instanceId": instance["id"], "instanceHrid": hrid}
    fields = {tag: value for f in record["parsedRecord"]["content"]["fields"] for tag, value in f.items()}
    assert fields["001"] == hrid and fields["999"]["subfields"][0] == {"i": instance["id"]}
    holdings = target.get("/holdings-storage/holdings", query=f"instanceId=={instance['id']}", limit=1000)
    assert holdings["totalRecords"] == 2
    # the instance's identifiers and contributors refer to the tenant's reference records
    identifier_types = {t["id"]: t["name"] for t in target.get("/identifier-types", limit=100)["identifierTypes"]}
    name_types = {t["id"]: t["name"] for t in target.get("/contributor-name-types", limit=100)["contributorNameTypes"]}
    assert [identifier_types[i["identifierTypeId"]] for i in instance["identifiers"]] == ["ISBN"]
    assert [name_types[c["contributorNameTypeId"]] for c in instance["contributors"]] == ["Personal name"]


def test_seeding_again_adds_nothing_and_replace_starts_afresh(scratch_db):
    dsn = scratch_db()
    ds = dataset.load("cico")
    code, out, err = run("seed", "cico", "--db", dsn, "--scale", "0.01")
    assert code == 0, err
    assert "seeded cico at scale 0.01" in out
    before = {t: _in_range(dsn, t, ds, k) for t, k in (("mod_users.users", "user"), ("mod_inventory_storage.item", "item"),
                                                       ("mod_circulation_storage.loan", "loan"))}
    assert before == {"mod_users.users": 60, "mod_inventory_storage.item": 250, "mod_circulation_storage.loan": 50}

    code, out, err = run("seed", "cico", "--db", dsn, "--scale", "0.01")
    assert code == 0 and "already seeded" in out and "nothing to add" in out
    assert {t: _in_range(dsn, t, ds, k) for t, k in (("mod_users.users", "user"), ("mod_inventory_storage.item", "item"),
                                                     ("mod_circulation_storage.loan", "loan"))} == before

    code, out, err = run("seed", "cico", "--db", dsn, "--scale", "0.02")
    assert code == 2 and err.count("\n") == 1
    assert "holds 250 instances and 60 users of dataset cico, not the 500 and 120 it has at scale 0.02; it was seeded at scale 0.01" in err
    assert "pass --replace" in err

    with psycopg.connect(dsn) as conn:  # a run checked an item in: the seeded loan closed, the item Available
        conn.execute("UPDATE diku_mod_circulation_storage.loan SET jsonb = jsonb_set(jsonb, '{status,name}', '\"Closed\"') "
                     "WHERE id = %s", (ds.ids.of("loan")(0),))
        conn.execute("UPDATE diku_mod_inventory_storage.item SET jsonb = jsonb_set(jsonb, '{status,name}', '\"Available\"') "
                     "WHERE id = %s", (ds.ids.of("item")(0),))
    code, out, err = run("seed", "cico", "--db", dsn, "--scale", "0.02", "--replace")
    assert code == 0, err
    assert _in_range(dsn, "mod_users.users", ds, "user") == 120 and _in_range(dsn, "mod_circulation_storage.loan", ds, "loan") == 100
    with psycopg.connect(dsn) as conn:
        loan = conn.execute("SELECT jsonb->'status'->>'name' FROM diku_mod_circulation_storage.loan WHERE id = %s",
                            (ds.ids.of("loan")(0),)).fetchone()
        item = conn.execute("SELECT jsonb->'status'->>'name' FROM diku_mod_inventory_storage.item WHERE id = %s",
                            (ds.ids.of("item")(0),)).fetchone()
    assert loan == ("Open",) and item == ("Checked out",)


def _identities(dsn: str) -> dict[str, list[tuple]]:
    queries = {
        "users": "SELECT id::text, jsonb->>'barcode', jsonb->>'username' FROM diku_mod_users.users ORDER BY id",
        "items": "SELECT id::text, jsonb->>'barcode', jsonb->>'hrid', holdingsrecordid::text"
                 " FROM diku_mod_inventory_storage.item ORDER BY id",
        "instances": "SELECT id::text, jsonb->>'hrid', jsonb->>'title' FROM diku_mod_inventory_storage.instance ORDER BY id",
        "loans": "SELECT id::text, jsonb->>'userId', jsonb->>'itemId' FROM diku_mod_circulation_storage.loan ORDER BY id",
        "requests": "SELECT id::text, jsonb->>'requesterId', jsonb->>'itemId' FROM diku_mod_circulation_storage.request ORDER BY id",
        "srs": "SELECT id::text, external_id::text, external_hrid FROM diku_mod_source_record_storage.records_lb ORDER BY id",
    }
    with psycopg.connect(dsn) as conn:
        return {name: conn.execute(q).fetchall() for name, q in queries.items()}


def test_two_seeds_into_two_databases_give_identical_ids_and_barcodes(scratch_db):
    first, second = scratch_db(), scratch_db()
    for dsn in (first, second):
        code, _, err = run("seed", "holds", "--db", dsn, "--scale", "0.01")
        assert code == 0, err
    a, b = _identities(first), _identities(second)
    assert a == b
    c = dataset.load("holds").scaled(0.01)
    assert (len(a["users"]), len(a["items"]), len(a["loans"]), len(a["requests"])) == (
        c.all_users + 1, 100, 4, c.open_requests + c.page_requests) == (c.all_users + 1, 100, 4, 3)  # + the admin


@pytest.mark.long_run(12)
@pytest.mark.parametrize("scale, generator_process", [("1", True), ("0.1", False)], ids=["97,000 rows", "9,700 rows"])
def test_an_interrupted_seed_leaves_zero_rows(scratch_db, scale, generator_process):
    """Ctrl-C while the seed is far into its transaction (users, inventory and SRS copied; it waits for the loan
    table, which this test holds) rolls everything back, whether its records come from a generator process
    or, for a job small enough, from the seeding process itself (no second interpreter to start)."""
    dsn = scratch_db()
    with psycopg.connect(dsn) as holder, psycopg.connect(dsn, autocommit=True) as conn:
        holder.execute("LOCK TABLE diku_mod_circulation_storage.loan IN SHARE MODE")  # COPY must wait for it
        # as from a terminal, Ctrl-C's default action: a suite started in the background (`&`, nohup) has
        # SIGINT ignored, and its children would inherit that and never see the interrupt
        proc = subprocess.Popen([sys.executable, "-m", "folioperf", "seed", "cico", "--db", dsn, "--scale", scale],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + DEADLINE
        while not conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'folioperf-seed' "
                               "AND datname = current_database() AND wait_event_type = 'Lock'").fetchone()[0]:
            assert proc.poll() is None and time.monotonic() < deadline, "the seed never reached the loan table"
            time.sleep(0.05)  # polling pg_stat_activity, not waiting for readiness
        # the generator process, if any, is alive or unreaped until the seed ends
        assert bool(psutil.Process(proc.pid).children()) == generator_process
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=DEADLINE)
        holder.rollback()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "folioperf: seeding cico interrupted: rolled back, nothing was written"
    assert "Traceback" not in err
    ds = dataset.load("cico")
    for table, kind in (("mod_users.users", "user"), ("mod_inventory_storage.instance", "instance"),
                        ("mod_inventory_storage.item", "item"), ("mod_circulation_storage.loan", "loan"),
                        ("mod_source_record_storage.records_lb", "srs_record")):
        assert _in_range(dsn, table, ds, kind) == 0, table
    with psycopg.connect(dsn) as conn:
        marker = conn.execute("SELECT count(*) FROM diku_mod_configuration.config_data WHERE jsonb->>'module' = 'FOLIOPERF'")
        assert marker.fetchone()[0] == 0
        indexes = conn.execute("SELECT count(*) FROM pg_indexes WHERE schemaname = 'diku_mod_inventory_storage' "
                               "AND tablename = 'item'").fetchone()[0]
    assert indexes >= 11  # the dropped indexes came back with the rollback


def test_a_barcode_collision_rolls_everything_back(scratch_db, tmp_path):
    dsn = scratch_db()
    assert run("seed", "cico", "--db", dsn, "--scale", "0.01")[0] == 0
    twin = tmp_path / "cico2.toml"  # another dataset reusing cico's prefix: same barcodes, other ids
    twin.write_text(Path(dataset.locate("cico")).read_text().replace("seed = 1001", "seed = 77"))
    r = run_process("seed", str(twin), "--db", dsn, "--scale", "0.01")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith("folioperf: error: seeding cico2 into tenant diku failed: ")
    assert "already exists" in r.stderr and "prefix 'cico'" in r.stderr and "nothing was written" in r.stderr
    assert _in_range(dsn, "mod_users.users", dataset.load(str(twin)), "user") == 0


def test_a_tenant_without_folio_schemas_is_one_line(scratch_db):
    dsn = scratch_db()
    r = run_process("seed", "cico", "--db", dsn, "--tenant", "nosuch")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("folioperf: error: tenant nosuch has no FOLIO schemas in ")
    assert lines[0].endswith("; run `folioperf sandbox init` or check --tenant")


@pytest.fixture()
def missing_db(folio_postgres):
    """The DSN of a database that does not exist on the tests' server (dropped after the test if something
    created it)."""
    dsn = db.with_database(folio_postgres, f"folioperf_test_missing_{uuid.uuid4().hex[:10]}")
    yield dsn
    db.drop_database(dsn)


def test_seed_creates_a_missing_database_as_run_does(missing_db):
    r = run_process("seed", "cico", "--db", missing_db, "--scale", str(SCALES["cico"]))
    assert r.returncode == 0, r.stderr
    name = db.database_name(missing_db)
    assert f"created database {name} with the sandbox's tables for tenant diku" in r.stderr
    assert _in_range(missing_db, "mod_users.users", dataset.load("cico"), "user") > 0


def test_cannot_connect_says_why(missing_db):
    """Server not running, database missing, login refused: three causes, three messages, one line each."""
    name = db.database_name(missing_db)
    code, _, err = run("reset", "cico", "--db", missing_db)  # reset never creates a database
    assert code == 2 and err.count("\n") == 1
    assert err.endswith(f'database "{name}" does not exist (check --db; `folioperf run`, `seed` and `sandbox init` '
                        "create a missing one)\n")
    assert "start PostgreSQL" not in err

    nobody = psycopg.conninfo.make_conninfo(missing_db, user="folioperf_no_such_role", dbname="postgres")
    code, _, err = run("pools", "cico", "--db", nobody, "-o", os.devnull)
    assert code == 2 and err.count("\n") == 1
    assert 'the server refused role folioperf_no_such_role: role "folioperf_no_such_role" does not exist; check ' \
           "the user and password of --db" in err

    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    code, _, err = run("seed", "cico", "--db", f"postgresql://postgres@127.0.0.1:{port}/folioperf")
    assert code == 2 and err.count("\n") == 1
    assert f"cannot connect to PostgreSQL at postgresql://postgres@127.0.0.1:{port}/folioperf: no server answers " \
           "(connection refused); start PostgreSQL" in err


def test_a_dataset_edited_since_seeding_is_refused_until_replaced(scratch_db, tmp_path):
    dsn = scratch_db()
    assert run("seed", "cico", "--db", dsn, "--scale", "0.01")[0] == 0
    edited = tmp_path / "cico.toml"
    edited.write_text(Path(dataset.locate("cico")).read_text().replace("seed = 1001", "seed = 77"))
    code, _, err = run("seed", str(edited), "--db", dsn, "--scale", "0.01")
    assert code == 2
    assert err == ("folioperf: error: dataset cico in tenant diku was seeded with seed 1001 and prefix 'cico', but its file now "
                   "says seed 77 and prefix 'cico'; pass --replace to delete those records and seed the file's\n")
    code, _, err = run("reset", str(edited), "--db", dsn)
    assert code == 2 and "restore the file or re-seed it with `folioperf seed cico --replace`" in err
    code, _, err = run("seed", str(edited), "--db", dsn, "--scale", "0.01", "--replace")
    assert code == 0, err
    old, new = dataset.load("cico"), dataset.load(str(edited))
    assert _in_range(dsn, "mod_inventory_storage.item", old, "item") == 0
    assert _in_range(dsn, "mod_inventory_storage.item", new, "item") == 250


def test_seeding_progress_fits_80_columns():
    """The bars padded every table's name to 44 characters: in 80 columns rich cut the figures ("123456/…")."""
    import io

    from rich.console import Console

    from folioperf.seed.load import progress_bar

    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=True, color_system=None)
    progress = progress_bar(console)
    task = progress.add_task("fs09000000_mod_source_record_storage.marc_records_lb", total=200_000)
    progress.advance(task, 123_456)
    progress.add_task("diku_mod_users.users", total=2_000)
    console.print(progress.get_renderable())
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and all(len(line) <= 80 for line in lines), lines
    assert "123456/200000" in lines[0] and lines[1].startswith("diku_mod_users.users ") and "0/2000" in lines[1]


def test_user_records_give_users_request_preferences_and_service_points_that_replace_removes(scratch_db):
    """`counts.user_records`: the first N users each get a request preference (Hold Shelf) and a service-points-user
    record of the dataset's pickup desks, the first the default, with ids of their own kinds; `--replace` removes them."""
    dsn = scratch_db()
    ds = dataset.load("pro")
    code, out, err = run("seed", "pro", "--db", dsn, "--scale", "0.001")
    assert code == 0, err
    desks = [sp["id"] for sp in ds.used("pickup_service_points")]
    users = {ds.ids.of("user")(i) for i in range(20)}
    with psycopg.connect(dsn) as conn:
        preferences = conn.execute("SELECT id::text, jsonb FROM diku_mod_circulation_storage.user_request_preference "
                                   "ORDER BY id").fetchall()
        desks_of = conn.execute("SELECT id::text, jsonb FROM diku_mod_inventory_storage.service_point_user "
                                "WHERE jsonb->>'userId' = ANY(%s) ORDER BY id", (list(users),)).fetchall()  # not the admin's
    assert [i for i, _ in preferences] == [ds.ids.of("request_preference")(i) for i in range(20)]
    assert {p["userId"] for _, p in preferences} == users
    assert all((p["fulfillment"], p["holdShelf"], p["delivery"]) == ("Hold Shelf", True, False) for _, p in preferences)
    assert [i for i, _ in desks_of] == [ds.ids.of("service_point_user")(i) for i in range(20)]
    assert {r["userId"] for _, r in desks_of} == users
    assert all((r["servicePointsIds"], r["defaultServicePointId"]) == (desks, desks[0]) for _, r in desks_of)

    code, out, err = run("seed", "pro", "--db", dsn, "--scale", "0.0005", "--replace")
    assert code == 0, err
    assert _in_range(dsn, "mod_circulation_storage.user_request_preference", ds, "request_preference") == 10
    assert _in_range(dsn, "mod_inventory_storage.service_point_user", ds, "service_point_user") == 10
