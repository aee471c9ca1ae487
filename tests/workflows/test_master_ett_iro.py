"""The PTF master plan's ETT (workflows/ett.py) group under plain Locust against the seeded sandbox: it runs at its
defaults with no failure, and sends the calls, headers, bodies and pauses the plan's thread group makes (derived
from master-script-longevity.jmx by tests/workflows/derived.py); scenarios/ptf-master.toml runs it at the plan's
threads and throughput."""

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
from tests.workflows.conftest import CEILING_SECONDS, FINISH_SECONDS, TENANT, calls_of, finish, start_locust, workflow_args
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


def _ran(run: LocustRun) -> list[tuple[str, list[dict]]]:
    assert run.returncode == 0, run.output[-3000:]
    assert "Traceback" not in run.output
    assert run.failures() == [], run.failures()
    recorded = derived.transactions(calls_of(run))
    assert recorded, "no transaction recorded"
    return recorded


def _scenario_group(name: str) -> dict:
    (group,) = [g for g in tomllib.loads(SCENARIO.read_text())["group"] if g["name"] == name]
    return group


# -- ETT ----------------------------------------------------------------------------------------------------

def test_ett_runs_at_its_defaults_without_failures(ett_run):
    _ran(ett_run)
    stats = ett_run.stats()
    assert stats[("Transaction", ETT)]["num_requests"] >= ITERATIONS
    assert all(entry["num_failures"] == 0 for entry in stats.values())


def test_ett_sends_the_plan(ett_run):
    """One transaction, named as the plan names it, of the plan's calls in its order (the SRS record found, the
    instance with holdings: every If taken), each with the plan's headers, and no pause."""
    plan = derived.ett()
    assert plan.transaction_names() == [ETT]
    recorded = _ran(ett_run)
    assert len(recorded) >= ITERATIONS
    for transaction, entries in recorded:
        assert transaction == ETT
        assert derived.mismatch(entries, plan) is None, derived.mismatch(entries, plan)
        assert derived.pause_mismatch(entries, plan, AS_RUN) is None, derived.pause_mismatch(entries, plan, AS_RUN)
        pairs, _ = derived._match(entries, plan, True)
        for entry, sample in pairs:
            _check_headers(entry, sample)


def test_ett_edits_the_instance_its_item_hrid_found(ett_run, seeded):
    """Each iteration's searches, views and edit are about the instance of the item HRID searched; the PUT is the
    quickMARC record with relatedRecordVersion the instance's `_version` as text and one 520 field, the plan's
    (line 7780); in the database the instance's MARC record now has it and a later `_version`."""
    edited = []
    with psycopg.connect(seeded.dsn) as conn:
        for _, entries in _ran(ett_run):
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
    resets: the derived iteration without it is the plan's first 41 calls, the one with it all 67."""
    assert len(derived.ett().calls()) == 67
    without = derived.ett(source_viewed=False)
    assert len(without.calls()) == 41 and without.calls() == derived.ett().calls()[:41]


def test_the_master_scenario_runs_ett_at_the_plans_threads_and_throughput():
    """scenarios/ptf-master.toml's ETT group: the plan's threads and its ConstantThroughputTimer (this thread
    only) as --pace, in samples a minute: 67 calls an iteration, about one iteration a minute."""
    threads, per_minute = derived.master_pace(derived.ETT_GROUP)
    group = _scenario_group("ETT")
    assert (group["workflow"], group["users"], group["pace"]) == ("ett", threads, f"{per_minute:g}/m")
