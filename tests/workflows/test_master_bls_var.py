"""The PTF master plan's BLS (workflows/bls.py) and VAR (workflows/var.py) groups under plain Locust against the
seeded sandbox: each runs at its defaults with no failure, and sends the calls, headers, bodies and pauses the
plan's thread group makes (derived from master-script-longevity.jmx by tests/workflows/derived.py); the
scenario scenarios/ptf-master.toml runs them at the plan's threads and throughput."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest

from folioperf.jmeter import AS_RUN
from folioperf.seed import dataset, seeding
from tests.locust_process import REPO, LocustRun, clean_env, folioperf_command
from tests.workflows import derived
from tests.workflows.conftest import (
    CEILING_SECONDS,
    FINISH_SECONDS,
    TENANT,
    calls_of,
    finish,
    start_locust,
    transactions_ran,
    workflow_args,
)

pytestmark = [pytest.mark.xdist_group("master-bls-var-runs"), pytest.mark.long_run]

SCALES = {"bls": 0.01, "var": 0.02}  # 50 items and patrons; 100 MARC authorities: a few iterations each run
BLS = "BLS_TC: Blacklight simulation"
GOTO, SEARCH, CLICK = "VAR_TC: GoTo Marc Authority", "VAR_TC: Search Marc Authority", "VAR_TC: Click Authorized Record"
ITERATIONS = 3
DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")  # the plan's requestDate, in UTC
SCENARIO = REPO / "scenarios" / "ptf-master.toml"


@pytest.fixture(scope="session")
def master_pools(seeded, tmp_path_factory) -> dict[str, dict]:
    """The BLS and VAR datasets seeded small into the workflow tests' tenant, and each workflow's pools as
    `folioperf pools --workflow` draws them (limited to its dataset's records)."""
    directory = tmp_path_factory.mktemp("master-pools")
    documents = {}
    for name, scale in SCALES.items():
        seeding.seed(seeded.dsn, TENANT, dataset.load(name), scale, False, None)
        out = directory / f"{name}.json"
        proc = subprocess.run(folioperf_command("pools", "--workflow", name, "--db", seeded.dsn, "--tenant", TENANT,
                                                "--limit", "1000", "-o", str(out)),
                              env=clean_env(), capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr
        documents[name] = json.loads(out.read_text())
    return documents


def _pools_file(directory: Path, document: dict, **replace: list[dict]) -> Path:
    path = directory / "pools.json"
    path.write_text(json.dumps({**document, "pools": {**document["pools"], **replace}}))
    return path


@pytest.fixture(scope="session")
def runs(seeded, master_pools, tmp_path_factory) -> dict[str, LocustRun]:
    """At once: BLS as JMeter ran it with a single item in its pool (each iteration then pages the copy the
    previous one made), BLS with --plan as-written on the other items, and VAR until it has made 3 whole
    iterations (it quits as the fourth starts its first transaction)."""
    root = tmp_path_factory.mktemp("master-bls-var-runs")
    items = master_pools["bls"]["pools"]["items"]
    plans = {"bls": ("bls.py", [], {"items": items[:1]}, f"{BLS}:{ITERATIONS}"),
             "bls-as-written": ("bls.py", ["--plan", "as-written"], {"items": items[1:]}, f"{BLS}:2"),
             "var": ("var.py", [], {}, f"{GOTO}:{ITERATIONS + 1}")}
    started = {}
    for name, (file, args, pools, stop) in plans.items():
        out = root / name
        out.mkdir()
        pools_file = _pools_file(out, master_pools[file.removesuffix(".py")], **pools)
        command = workflow_args(seeded, out, file, "-t", str(CEILING_SECONDS), "-u", "1", "-r", "1", "--pools",
                                str(pools_file), *args)
        started[name] = (start_locust(command, out, seeded.env(CALL_LOG=str(out / "calls.json"), STOP_AFTER=stop,
                                                               FAKE_PAUSES="0.05")), out)
    return {name: finish(proc, out, timeout=FINISH_SECONDS) for name, (proc, out) in started.items()}


def _check_headers(entry: dict, sample) -> None:
    """A call sends the plan's headers (those its group's header managers merge), Okapi's token and tenant
    aside."""
    okapi = ("x-okapi-token", "x-okapi-tenant")
    want = {k.lower(): v for k, v in sample.headers if k.lower() not in okapi}
    sent = {k.lower(): v for k, v in entry["headers"].items() if k.lower() not in (*okapi, "host", "content-length")}
    assert sent == want, f"{entry['name']}: sent {sent}, the plan's {want}"


def _fields(body: dict, prefix: str = "") -> list[str]:
    out: list[str] = []
    for key, value in body.items():
        out += _fields(value, f"{prefix}{key}.") if isinstance(value, dict) else [prefix + key]
    return out


# -- BLS ----------------------------------------------------------------------------------------------------

def test_bls_runs_at_its_defaults_without_failures(runs):
    run = runs["bls"]
    transactions_ran(run)
    stats = run.stats()
    assert stats[("Transaction", BLS)]["num_requests"] >= ITERATIONS
    assert all(entry["num_failures"] == 0 for entry in stats.values())


@pytest.mark.parametrize("name", ["bls", "bls-as-written"])
def test_bls_sends_the_plan(runs, name):
    """One transaction, named as the plan names it, of the plan's 7 calls in its order, each with the group's
    headers (`Accept: text/plain` over the plan-wide ones) and no pause (the plan's 300 ms timer is disabled)."""
    plan = derived.bls()
    assert plan.transaction_names() == [BLS]
    for transaction, entries in transactions_ran(runs[name]):
        assert transaction == BLS
        for entry, sample in derived.matched(entries, plan):
            _check_headers(entry, sample)
            assert entry["headers"]["Accept"] == "text/plain"


def _bodies(entries: list[dict]) -> dict[str, dict]:
    return {e["name"]: e["body"] for e in entries if e["type"] in ("PUT", "POST")}


@pytest.mark.parametrize("name", ["bls", "bls-as-written"])
def test_bls_bodies_are_the_plans(runs, name):
    """The PUT is the item read, its descriptionOfPieces `SomeDescription_<epoch ms>` (line 46216); the new item
    has the plan's fields, Available, in the same holdings with the same loan and material types; the Page
    request has the plan's fields and fixed values (its 2023 expiry as JMeter sent it; as written, a date to
    come), for the item read, by the patron whose account was read."""
    plan = derived.bls()
    new_item, request = (derived.body(s) for s in plan.calls() if s.method == "POST")
    for _, entries in transactions_ran(runs[name]):
        bodies = _bodies(entries)
        put, copy, page = (bodies["PUT /item-storage/items/{id}"], bodies["POST /item-storage/items"],
                           bodies["POST /circulation/requests"])
        read = next(e["url"] for e in entries if e["name"] == "GET /item-storage/items/{id}")
        assert read.rsplit("/", 1)[1] == put["id"] == page["itemId"]
        assert re.fullmatch(r"SomeDescription_\d{13}", put["descriptionOfPieces"])
        assert _fields(copy) == list(new_item.fields) and _fields(page) == list(request.fields)
        assert copy["status"] == {"name": "Available"} and copy["id"] != put["id"]
        same = ("holdingsRecordId", "permanentLoanTypeId", "materialTypeId")
        assert [copy[f] for f in same] == [put[f] for f in same] and page["holdingsRecordId"] == put["holdingsRecordId"]
        user = next(e["url"] for e in entries if e["name"] == "GET /users/{id}").rsplit("/", 1)[1]
        assert page["requesterId"] == user
        assert DATE.match(page["requestDate"])
        for field, value in request.fixed.items():
            if field == "requestExpirationDate" and name == "bls-as-written":
                assert datetime.fromisoformat(value) < datetime.now(timezone.utc) < datetime.fromisoformat(page[field])
            else:
                assert page[field] == value


def test_bls_pages_the_copy_it_made_so_its_items_never_run_out(runs, seeded):
    """With a single item in its pool, each iteration pages the Available copy the one before made: the pool
    never shrinks, however long the run. In the database, every item paged has its open Page request and the
    last copy is Available."""
    recorded = transactions_ran(runs["bls"])
    pages = [_bodies(entries) for _, entries in recorded]
    assert len(pages) >= ITERATIONS
    for before, after in zip(pages, pages[1:]):
        assert after["POST /circulation/requests"]["itemId"] == before["POST /item-storage/items"]["id"]
    paged = [p["POST /circulation/requests"]["itemId"] for p in pages]
    assert len(set(paged)) == len(paged)
    last = pages[-1]["POST /item-storage/items"]["id"]
    with psycopg.connect(seeded.dsn) as conn:
        status = dict(conn.execute(
            f"SELECT id::text, jsonb->'status'->>'name' FROM {TENANT}_mod_inventory_storage.item WHERE id = ANY(%s::uuid[])",
            (paged + [last],)).fetchall())
        requests = dict(conn.execute(
            f"SELECT jsonb->>'itemId', jsonb->>'status' FROM {TENANT}_mod_circulation_storage.request "
            "WHERE jsonb->>'itemId' = ANY(%s) AND jsonb->>'requestType' = 'Page'", (paged + [last],)).fetchall())
    assert [status[i] for i in paged] == ["Paged"] * len(paged)
    # the last whole iteration's copy is Available, unless an iteration the stop cut off (no whole record) paged it
    cut_off = requests.pop(last, None)
    assert (status[last], cut_off) in (("Available", None), ("Paged", "Open - Not yet filled")), (status[last], cut_off)
    assert requests == {i: "Open - Not yet filled" for i in paged}


def _scenario_group(name: str) -> dict:
    groups = tomllib.loads(SCENARIO.read_text())["group"]
    (group,) = [g for g in groups if g["name"] == name]
    return group


def test_the_master_scenario_runs_bls_at_the_plans_threads_and_throughput():
    """scenarios/ptf-master.toml's BLS group: the plan's threads, and its ConstantThroughputTimer (this thread
    only) as --pace, in samples a minute: 7 calls an iteration, one iteration a minute."""
    threads, per_minute = derived.master_pace(derived.BLS_GROUP)
    group = _scenario_group("BLS")
    assert (group["workflow"], group["users"], group["pace"]) == ("bls", threads, f"{per_minute:g}/m")
    assert len(derived.bls().samples) == 7


# -- VAR ----------------------------------------------------------------------------------------------------

def _var_iterations(run: LocustRun) -> list[list[dict]]:
    """The whole iterations of the run's one user: each starts with its Flow Control Action's pause, the only
    pause VAR takes."""
    log = [e for e in calls_of(run) if not e["name"].startswith("POST /authn/")]
    starts = [i for i, e in enumerate(log) if e["type"] == "Pause"]
    return [log[a:b] for a, b in zip(starts, starts[1:])]


def test_var_runs_at_its_defaults_without_failures(runs):
    run = runs["var"]
    transactions_ran(run)
    stats = run.stats()
    for transaction in (GOTO, SEARCH, CLICK):
        assert stats[("Transaction", transaction)]["num_requests"] >= ITERATIONS, transaction
    assert all(entry["num_failures"] == 0 for entry in stats.values())


def test_var_sends_the_plan(runs):
    """Each iteration: the Flow Control Action's pause (`__Random(1000,3000)` ms, taken before anything else and
    no pause elsewhere), the GoTo and Search transactions, then as many Click Authorized Record transactions as
    the plan's `__Random(1,3)` loop runs, each on one id; the plan's calls, in its order, with its headers."""
    transactions_ran(runs["var"])
    low, high = derived.var_clicks()
    action, (shortest, longest) = derived.var_action()
    iterations = _var_iterations(runs["var"])
    assert len(iterations) >= ITERATIONS
    for entries in iterations:
        pause, *rest = entries
        assert (pause["kind"], pause["low"], pause["high"]) == ("uniform", shortest, longest), pause
        clicks = [e["name"] for e in rest if e["type"] == "Transaction"].count(CLICK)
        assert low <= clicks <= high
        plan = derived.var(clicks)
        assert [e["name"] for e in rest if e["type"] == "Transaction"] == plan.transaction_names()
        made = [e for e in rest if e["type"] != "Transaction"]
        assert derived.mismatch(made, plan) is None, derived.mismatch(made, plan)
        # the action's pause is the pause before the first call, as derived.pause_mismatch reads Flow Control Actions
        assert derived.pause_mismatch([pause, *made], plan, AS_RUN) is None, derived.pause_mismatch([pause, *made], plan, AS_RUN)
        pairs, _ = derived._match(made, plan, True)
        for entry, sample in pairs:
            _check_headers(entry, sample)
        calls: list[dict] = []
        for e in rest:  # each Click Authorized Record transaction's three calls are about one record
            if e["type"] != "Transaction":
                calls.append(e)
                continue
            if e["name"] == CLICK:
                source, *by_id = calls
                ids = {source["url"].split("/")[-2]} | {
                    re.search(r"id==([0-9a-f-]+)", derived.decoded(c["url"])).group(1) for c in by_id}
                assert len(ids) == 1, ids
            calls = []


def test_var_opens_authorized_headings_of_the_surname_searched(runs, seeded):
    """The records opened are the dataset's Authorized personal names with the surname the iteration searched."""
    iterations = _var_iterations(runs["var"])
    with psycopg.connect(seeded.dsn) as conn:
        for entries in iterations:
            (search,) = [e for e in entries if e["name"] == "GET /search/authorities" and "keyword" in e["url"]]
            surname = re.search(r'keyword=="([^"]+)"', derived.decoded(search["url"])).group(1)
            for e in entries:
                if e["name"] == "GET /source-storage/records/{id}/formatted":
                    marc_id = e["url"].split("/")[-2]
                    (name,) = conn.execute(f"SELECT jsonb->>'personalName' FROM {TENANT}_mod_entities_links.authority "
                                           "WHERE id = %s", (marc_id,)).fetchone()
                    assert name.split(",")[0] == surname


def test_the_master_scenario_runs_var_at_the_plans_threads_and_throughput():
    """scenarios/ptf-master.toml's VAR group: the plan's threads and throughput timer, which paces the Flow
    Control Action as a sample: 5 samples and 3 a click, 11 an iteration on average (2 clicks)."""
    threads, per_minute = derived.master_pace(derived.VAR_GROUP)
    group = _scenario_group("VAR")
    assert (group["workflow"], group["users"], group["pace"]) == ("var", threads, f"{per_minute:g}/m")
    low, high = derived.var_clicks()
    assert len(derived.var((low + high) // 2).samples) == 11
