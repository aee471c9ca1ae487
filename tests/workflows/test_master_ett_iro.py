"""The PTF master plan's ETT (workflows/ett.py) and IRO (workflows/iro.py) groups under plain Locust against the
seeded sandbox: each runs at its defaults with no failure, and sends the calls, headers, bodies and pauses the
plan's thread group makes (derived from master-script-longevity.jmx by tests/workflows/derived.py);
scenarios/ptf-master.toml runs them at the plan's threads and throughput."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib

import psycopg
import pytest

from folioperf.jmeter import AS_RUN
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
from tests.workflows.test_master_bls_var import _check_headers

pytestmark = [pytest.mark.xdist_group("master-ett-iro-runs"), pytest.mark.long_run]

ETT = "ETT_TC: Edit Bib RecordTagTable Group"
ITERATIONS = 3
SCENARIO = REPO / "scenarios" / "ptf-master.toml"


@pytest.fixture(scope="session")
def ett_pools(seeded, tmp_path_factory) -> dict:
    """ETT's pools as `folioperf pools --workflow ett` draws them from the seeded rih dataset."""
    out = tmp_path_factory.mktemp("ett-pools") / "ett.json"
    proc = subprocess.run(folioperf_command("pools", "--workflow", "ett", "--db", seeded.dsn, "--tenant", TENANT,
                                            "--limit", "1000", "-o", str(out)),
                          env=clean_env(), capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


@pytest.fixture(scope="session")
def ett_run(seeded, ett_pools, tmp_path_factory) -> LocustRun:
    """ETT at its defaults, one user, until it has made 3 whole iterations (the item HRIDs of the pool's last
    part: other modules' workflows on rih take its first items)."""
    out = tmp_path_factory.mktemp("ett-run")
    hrids = ett_pools["pools"]["item_hrids"][-20:]
    pools = out / "pools.json"
    pools.write_text(json.dumps({**ett_pools, "pools": {**ett_pools["pools"], "item_hrids": hrids}}))
    command = workflow_args(seeded, out, "ett.py", "-t", str(CEILING_SECONDS), "-u", "1", "-r", "1", "--pools", str(pools))
    proc = start_locust(command, out, seeded.env(CALL_LOG=str(out / "calls.json"), STOP_AFTER=f"{ETT}:{ITERATIONS}",
                                                 FAKE_PAUSES="0.05"))
    return finish(proc, out, timeout=FINISH_SECONDS)


def _scenario_group(name: str) -> dict:
    (group,) = [g for g in tomllib.loads(SCENARIO.read_text())["group"] if g["name"] == name]
    return group


# -- ETT ----------------------------------------------------------------------------------------------------

def test_ett_runs_at_its_defaults_without_failures(ett_run):
    transactions_ran(ett_run)
    stats = ett_run.stats()
    assert stats[("Transaction", ETT)]["num_requests"] >= ITERATIONS
    assert all(entry["num_failures"] == 0 for entry in stats.values())


def test_ett_sends_the_plan(ett_run):
    """One transaction, named as the plan names it, of the plan's calls in its order (the SRS record found, the
    instance with holdings: every If taken), each with the plan's headers, and no pause."""
    plan = derived.ett()
    assert plan.transaction_names() == [ETT]
    recorded = transactions_ran(ett_run)
    assert len(recorded) >= ITERATIONS
    for transaction, entries in recorded:
        assert transaction == ETT
        for entry, sample in derived.matched(entries, plan):
            _check_headers(entry, sample)


def test_ett_edits_the_instance_its_item_hrid_found(ett_run, seeded):
    """Each iteration's searches, views and edit are about the instance of the item HRID searched; the PUT is the
    quickMARC record with relatedRecordVersion the instance's `_version` as text and one 520 field, the plan's
    (line 7780); in the database the instance's MARC record now has it and a later `_version`."""
    edited = []
    with psycopg.connect(seeded.dsn) as conn:
        for _, entries in transactions_ran(ett_run):
            search = next(e for e in entries if "items.hrid" in derived.decoded(e["url"]))
            hrid = re.search(r'items.hrid=="([^"]+)"', derived.decoded(search["url"])).group(1)
            (instance_id,) = conn.execute(
                f"SELECT h.instanceid::text FROM {TENANT}_mod_inventory_storage.item i JOIN "
                f"{TENANT}_mod_inventory_storage.holdings_record h ON h.id = i.holdingsrecordid "
                "WHERE i.jsonb->>'hrid' = %s", (hrid,)).fetchone()
            (put,) = [e for e in entries if e["type"] == "PUT"]
            body = put["body"]
            assert put["url"].rsplit("/", 1)[1] == body["parsedRecordId"]
            assert body["externalId"] == instance_id and isinstance(body["relatedRecordVersion"], str)
            assert [f for f in body["fields"] if f["tag"] == "520"] == [
                {"isProtected": "false", "tag": "520", "indicators": ["\\", "\\"], "content": "$a UpdatedField"}]
            edited.append((instance_id, int(body["relatedRecordVersion"])))
        for instance_id, version in edited:
            (now,) = conn.execute(f"SELECT (jsonb->>'_version')::int FROM {TENANT}_mod_inventory_storage.instance "
                                  "WHERE id = %s", (instance_id,)).fetchone()
            assert now > version
            (content,) = conn.execute(
                f"SELECT m.content::text FROM {TENANT}_mod_source_record_storage.records_lb r JOIN "
                f"{TENANT}_mod_source_record_storage.marc_records_lb m ON m.id = r.id "
                "WHERE r.external_id = %s AND r.state = 'ACTUAL'", (instance_id,)).fetchone()
            assert "UpdatedField" in content


def test_ett_stops_viewing_and_editing_after_one_srs_404_as_jmeter_ran_it():
    """The If around the source view and the edit (line 7628) reads a thread variable a 404 sets and nothing
    resets: the derived iteration without it is the plan's first 40 calls, the one with it all 66 (as run, the
    items count of "If Holdings Exist" is never sent; as written, 67)."""
    assert len(derived.ett().calls()) == 66 and len(derived.ett(holdings_found=True).calls()) == 67
    without = derived.ett(source_viewed=False)
    assert len(without.calls()) == 40 and without.calls() == derived.ett().calls()[:40]


def test_the_master_scenario_runs_ett_at_the_plans_threads_and_throughput():
    """scenarios/ptf-master.toml's ETT group: the plan's threads and its ConstantThroughputTimer (this thread
    only) as --pace, in samples a minute: 66 calls an iteration, about one iteration a minute."""
    threads, per_minute = derived.master_pace(derived.ETT_GROUP)
    group = _scenario_group("ETT")
    assert (group["workflow"], group["users"], group["pace"]) == ("ett", threads, f"{per_minute:g}/m")


# -- IRO ----------------------------------------------------------------------------------------------------

VIEW, EDIT, DELETE = "IRO_TC: View Item", "IRO_TC: Edit Item", "IRO_TC: Delete Item"
IRO_SCALE = 0.003  # 30 instances, each with a holdings record and an item: 15 to view, 15 to edit or delete
FLOWS = {"view": (VIEW, []), "edit": (EDIT, ["--distribution", "0-100-0"]),
         "delete": (DELETE, ["--distribution", "0-0-100"])}


@pytest.fixture(scope="session")
def iro_runs(seeded, tmp_path_factory) -> dict[str, LocustRun]:
    """The iro dataset seeded small; at once, one user each: IRO at its defaults (the plan's 100-0-0: views), all
    edits and all deletes, each until it has made 3 whole iterations; edits and deletes on different items."""
    from folioperf.seed import dataset, seeding
    seeding.seed(seeded.dsn, TENANT, dataset.load("iro"), IRO_SCALE, False, None)
    root = tmp_path_factory.mktemp("iro-runs")
    drawn = root / "iro.json"
    proc = subprocess.run(folioperf_command("pools", "--workflow", "iro", "--db", seeded.dsn, "--tenant", TENANT,
                                            "--limit", "1000", "-o", str(drawn)),
                          env=clean_env(), capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(drawn.read_text())
    editable = document["pools"]["edit_items"]
    parts = {"view": editable[:1], "edit": editable[1:6], "delete": editable[6:]}
    started = {}
    for name, (transaction, args) in FLOWS.items():
        out = root / name
        out.mkdir()
        pools = out / "pools.json"
        pools.write_text(json.dumps({**document, "pools": {**document["pools"], "edit_items": parts[name]}}))
        command = workflow_args(seeded, out, "iro.py", "-t", str(CEILING_SECONDS), "-u", "1", "-r", "1", "--pools",
                                str(pools), *args)
        started[name] = (start_locust(command, out, seeded.env(CALL_LOG=str(out / "calls.json"),
                                                               STOP_AFTER=f"{transaction}:{ITERATIONS + 1}",
                                                               FAKE_PAUSES="0.05")), out)
    return {name: finish(p, out, timeout=FINISH_SECONDS) for name, (p, out) in started.items()}


def _iterations(run: LocustRun) -> list[list[dict]]:
    """The whole iterations of the run's one user: each starts with its "Branch selector randomizer" script."""
    assert run.returncode == 0, run.output[-3000:]
    assert "Traceback" not in run.output
    assert run.failures() == [], run.failures()
    log = [e for e in calls_of(run) if not e["name"].startswith("POST /authn/")]
    starts = [i for i, e in enumerate(log) if e["type"] == "Script" and e["name"] == "Branch selector randomizer"]
    return [log[a:b] for a, b in zip(starts, starts[1:])]


@pytest.mark.parametrize("flow", FLOWS)
def test_iro_runs_without_failures(iro_runs, flow):
    """At its defaults (views), and with all edits or all deletes: every iteration's transaction, no failure."""
    transaction, _ = FLOWS[flow]
    stats = iro_runs[flow].stats()
    assert len(_iterations(iro_runs[flow])) >= ITERATIONS
    assert stats[("Transaction", transaction)]["num_requests"] >= ITERATIONS
    assert all(entry["num_failures"] == 0 for entry in stats.values())


@pytest.mark.parametrize("flow", FLOWS)
def test_iro_sends_the_plan(iro_runs, flow):
    """Each iteration: the plan's script samples, its transaction (named as the plan names it), its calls in its
    order with its headers, no pause but the Flow Control Action's `__Random(1000,3000)` ms at the end."""
    transaction, _ = FLOWS[flow]
    plan = derived.iro(flow)
    (action,) = [s for s in plan.samples if s.kind == "action"]
    assert plan.samples[-1] is action
    think = derived.action_delay(action, AS_RUN, plan.variables)
    for entries in _iterations(iro_runs[flow]):
        assert [e["name"] for e in entries if e["type"] == "Script"] == plan.scripts()
        assert [e["name"] for e in entries if e["type"] == "Transaction"] == [transaction] == plan.transaction_names()
        made = [e for e in entries if e["type"] not in ("Transaction", "Script")]
        *made, pause = made
        assert (pause["type"], pause["kind"], pause["low"], pause["high"]) == ("Pause", "uniform", think.low, think.high)
        for entry, sample in derived.matched(made, plan):
            _check_headers(entry, sample)


def test_iro_edits_and_deletes_the_item_searched(iro_runs, seeded):
    """The PUT is the item read, numberOfPieces 1-50 (line 11733), and the items deleted are gone from the
    database, those edited still there with the last number sent."""
    with psycopg.connect(seeded.dsn) as conn:
        for flow in ("edit", "delete"):
            for entries in _iterations(iro_runs[flow]):
                search = next(e for e in entries if e["name"] == "GET /search/instances")
                hrid = re.search(r'item.hrid=="([^"]+)"', derived.decoded(search["url"])).group(1)
                row = conn.execute(f"SELECT id::text, jsonb->>'numberOfPieces' FROM {TENANT}_mod_inventory_storage.item "
                                   "WHERE jsonb->>'hrid' = %s", (hrid,)).fetchone()
                if flow == "delete":
                    (gone,) = [e for e in entries if e["type"] == "DELETE"]
                    assert row is None and gone["url"].endswith("/inventory/items/" + gone["url"].rsplit("/", 1)[1])
                    continue
                (put,) = [e for e in entries if e["type"] == "PUT"]
                assert put["url"].rsplit("/", 1)[1] == put["body"]["id"] == row[0]
                assert put["body"]["hrid"] == hrid and 1 <= put["body"]["numberOfPieces"] <= 50


def test_iro_splits_as_the_plans_distribution():
    """The option's default is the plan's IRO_DISTRIBUTION default (line 430)."""
    proc = subprocess.run(folioperf_command("workflows", "iro"), env=clean_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert derived.iro_distribution() == "100-0-0" and "--distribution" in proc.stdout
    assert "--distribution (default 100-0-0)" in proc.stdout, proc.stdout


def test_the_master_scenario_runs_iro_at_the_plans_threads_and_throughput():
    """scenarios/ptf-master.toml's IRO group: the plan's threads, its ConstantThroughputTimer (this thread only)
    as --pace, and its default split: views only, 55 samples an iteration (51 calls, 3 scripts, the pause)."""
    threads, per_minute = derived.master_pace(derived.IRO_GROUP)
    group = _scenario_group("IRO")
    assert (group["workflow"], group["users"], group["pace"]) == ("iro", threads, f"{per_minute:g}/m")
    assert group["options"]["distribution"] == derived.iro_distribution()
    assert len(derived.iro("view").samples) == 55
