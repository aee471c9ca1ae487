"""The PTF master plan's VIR, PRV, VIH, ILR and MPS groups (workflows/vir.py, prv.py, vih.py, ilr.py, mps.py)
against the seeded sandbox, as the plan sends them and waits, derived from master-script-longevity.jmx by
tests/workflows/derived.py with JMeter's rules:

- `folioperf run NAME --users 1` at the group's defaults (its throughput timer as --pace) ends with no failure;
- a run with the call log and the fake clock (tests/fixtures/locust_call_log.py) sends, iteration by iteration,
  the calls of that iteration of the plan's thread group (its Throughput Controllers decided as JMeter's are),
  with the plan's headers, in its transactions, and pauses where and as long as the plan's timers and Flow
  Control Actions do;
- scenarios/ptf-master.toml runs each group with the plan's threads and throughput timer.
"""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import pytest

from folioperf.jmeter import AS_RUN, PercentController
from tests.locust_process import REPO, LocustRun, clean_env, folioperf_command, only_results
from tests.workflows import derived
from tests.workflows.conftest import CEILING_SECONDS, FINISH_SECONDS, calls_of, finish, start_locust, workflow_args
from tests.workflows.test_ptf_plans import _check_headers

pytestmark = [pytest.mark.xdist_group("workflow-runs"), pytest.mark.long_run]

# workflow → (its file, Locust arguments, STOP_AFTER: whole iterations enough to see each split both ways)
RUNS = {
    "vir": ("vir.py", [], "VIR_TC:  inventory record monitoring:10"),
    "prv": ("prv.py", [], "PRV_TC: View Patron record Group:6"),
}
# workflow → its group in scenarios/ptf-master.toml
GROUPS = {"vir": "VIR", "prv": "PRV"}
FAKE_PAUSE_SECONDS = "0.05"


@pytest.fixture(scope="session")
def master_pools(seeded, tmp_path_factory) -> dict[str, Path]:
    """Each workflow's pools, as `folioperf pools --workflow NAME` draws them from the seeded tenant."""
    directory = tmp_path_factory.mktemp("master-pools")
    running = {name: subprocess.Popen(folioperf_command("pools", "--workflow", name, "--db", seeded.dsn, "--tenant",
                                                        seeded.tenant, "--limit", "1000", "-o", str(directory / f"{name}.json")),
                                      env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for name in RUNS}
    for name, proc in running.items():
        _, stderr = proc.communicate(timeout=180)
        assert proc.returncode == 0, stderr
    return {name: directory / f"{name}.json" for name in RUNS}


@pytest.fixture(scope="session")
def plan_runs(seeded, master_pools, tmp_path_factory) -> dict[str, LocustRun]:
    """Each workflow under plain Locust, one user, with the call log and the fake clock, at once."""
    root = tmp_path_factory.mktemp("master-group-runs")
    started = {}
    for name, (file, args, stop) in RUNS.items():
        out = root / name
        out.mkdir()
        command = workflow_args(seeded, out, file, "-t", str(CEILING_SECONDS), "-u", "1", "-r", "1",
                                "--pools", str(master_pools[name]), *args)
        started[name] = (start_locust(command, out, seeded.env(CALL_LOG=str(out / "calls.json"), STOP_AFTER=stop,
                                                               FAKE_PAUSES=FAKE_PAUSE_SECONDS)), out)
    return {name: finish(proc, out, timeout=FINISH_SECONDS) for name, (proc, out) in started.items()}


def _iterations(run: LocustRun, name: str) -> list[list[tuple[str, list[dict]]]]:
    """The run's iterations, each its transactions with their entries (derived.transactions), one user's."""
    assert run.returncode == 0, run.output[-3000:]
    assert "Traceback" not in run.output
    recorded = derived.transactions(calls_of(run))
    per_iteration = len(derived.master_group(name).transaction_names())
    assert recorded, "no transaction recorded"
    return [recorded[i:i + per_iteration] for i in range(0, len(recorded) - per_iteration + 1, per_iteration)]


def _check_iteration(transactions: list[tuple[str, list[dict]]], plan: derived.Derived) -> None:
    """An iteration's transactions are the plan's, in order, and send its calls with its headers and pauses."""
    assert [name for name, _ in transactions] == plan.transaction_names()
    entries = [e for _, es in transactions for e in es]
    assert derived.mismatch(entries, plan) is None, derived.mismatch(entries, plan)
    problem = derived.pause_mismatch(entries, plan, AS_RUN)
    assert problem is None, problem
    for entry, sample in derived._match(entries, plan, True)[0]:
        _check_headers(entry, sample)
        assert not entry["failed"], entry


@pytest.mark.parametrize("name", list(RUNS))
def test_sends_the_master_plan_iteration_by_iteration(plan_runs, name):
    iterations = _iterations(plan_runs[name], name)
    assert len(iterations) >= 5
    for index, transactions in enumerate(iterations):
        _check_iteration(transactions, derived.master_group(name, index))


def test_percent_controller_is_jmeters():
    """JMeter's Throughput Controller by percent (ThroughputController.decide): not random, the share exact over
    every whole cycle; at 20 % the 3rd, 8th, 13th ... iteration; at 50 % every second from the second."""
    twenty, fifty = PercentController(20), PercentController(50)
    assert [i for i in range(15) if twenty.runs()] == [2, 7, 12]
    assert [i for i in range(6) if fifty.runs()] == [1, 3, 5]
    hundred = PercentController(100)
    assert all(hundred.runs() for _ in range(10))


@pytest.mark.parametrize("name", list(GROUPS))
def test_the_master_scenario_runs_the_group_at_the_plans_defaults(name):
    """scenarios/ptf-master.toml: the group's workflow, the plan's threads and throughput timer (samples a minute)."""
    scenario = tomllib.loads((REPO / "scenarios" / "ptf-master.toml").read_text())
    (group,) = [g for g in scenario["group"] if g["name"] == GROUPS[name]]
    assert group["workflow"] == name.split("-")[0]
    assert group["users"] == derived.master_threads(name)
    assert group["pace"] == f"{derived.master_throughput(name):g}/m"


@pytest.fixture(scope="session")
def default_runs(seeded, tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    """`folioperf run NAME --users 1` at the plan's pace against the seeded sandbox, all at once, each long enough
    for its first iteration at that pace (its samples after the first come 60/pace s apart) and 10 s more."""
    root = tmp_path_factory.mktemp("master-group-defaults")
    started = {}
    for name in GROUPS:
        per_minute = derived.master_throughput(name)
        seconds = 10 + round(60 * (len(derived.master_group(name).samples) - 1) / per_minute)
        out = root / name
        out.mkdir()
        command = folioperf_command("run", name.split("-")[0], "--users", "1", "--duration", f"{seconds}s",
                                    "--pace", f"{per_minute:g}/m", "--okapi-url", seeded.url, "--tenant", seeded.tenant,
                                    "--username", seeded.username, "--db", seeded.dsn)
        started[name] = (subprocess.Popen(command, cwd=out, env=clean_env(FOLIOPERF_PASSWORD=seeded.password),
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), out)
    done = {}
    for name, (proc, out) in started.items():
        output, _ = proc.communicate(timeout=FINISH_SECONDS + 120)
        done[name] = (subprocess.CompletedProcess(proc.args, proc.returncode, output, ""), out)
    return done


@pytest.mark.parametrize("name", list(GROUPS))
def test_folioperf_runs_it_at_its_defaults(default_runs, name):
    """At the plan's pace: exit 0, no failure, the plan's transactions recorded."""
    proc, out = default_runs[name]
    assert proc.returncode == 0, proc.stdout[-4000:]
    res = only_results(out / "results")
    for transaction in derived.master_group(name).transaction_names():
        entry = res.entry("Transaction", transaction)
        assert entry is not None and entry.count > 0 and entry.failures == 0, transaction
    assert res.apis() and all(e.failures == 0 for e in res.apis()), [(e.name, e.failures) for e in res.apis()]
