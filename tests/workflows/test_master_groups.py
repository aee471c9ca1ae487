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
import re
import subprocess
import tomllib
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from folioperf.jmeter import AS_RUN, PercentController
from folioperf.timers import Timers
from tests.locust_process import REPO, LocustRun, clean_env, folioperf_command, only_results
from tests.workflows import derived
from tests.workflows.conftest import CEILING_SECONDS, FINISH_SECONDS, calls_of, finish, start_locust, workflow_args
from tests.workflows.test_ptf_plans import _check_headers, _fields, _login

pytestmark = [pytest.mark.xdist_group("workflow-runs"), pytest.mark.long_run]

# run → (the master plan's group it sends, derived.MASTER_GROUPS; Locust arguments; STOP_AFTER: whole iterations
# enough to see each split both ways). The workflow is the group's name up to a "-".
RUNS = {
    "vir": ("vir", [], "VIR_TC:  inventory record monitoring:10"),
    "prv": ("prv", [], "PRV_TC: View Patron record Group:6"),
    "vih": ("vih", [], "TC: VIH_View instance holdings details:5"),
    "vih-as-written": ("vih", ["--plan", "as-written"], "TC: VIH_View instance holdings details:5"),
    "ilr": ("ilr", [], "ILR_TC: Create ILR:5"),
}
# the group's workflow → its group in scenarios/ptf-master.toml
GROUPS = {"vir": "VIR", "prv": "PRV", "vih": "VIH", "ilr": "ILR", "mps-locations": "MPS-LOCATIONS",
          "mps-requests": "MPS-REQUESTS", "mps-pick-slips": "MPS-PICK-SLIPS"}
WITH_POOLS = ("vir", "prv", "ilr", "mps")
# the option that sets a group's Throughput Controller's percent
SPLITS = {"vir": "item-view", "prv": "requests-view"}
# MPS's thread groups: one workflow, `--poll` the group
POLLS = {"mps-locations": "locations", "mps-requests": "requests", "mps-pick-slips": "pick-slips"}


def _options(group: str) -> list[str]:
    return ["--poll", POLLS[group]] if group in POLLS else []
FAKE_PAUSE_SECONDS = "0.05"


@pytest.fixture(scope="session")
def master_pools(seeded, tmp_path_factory) -> dict[str, Path]:
    """Each workflow's pools, as `folioperf pools --workflow NAME` draws them from the seeded tenant."""
    directory = tmp_path_factory.mktemp("master-pools")
    running = {name: subprocess.Popen(folioperf_command("pools", "--workflow", name, "--db", seeded.dsn, "--tenant",
                                                        seeded.tenant, "--limit", "1000", "-o", str(directory / f"{name}.json")),
                                      env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for name in WITH_POOLS}
    for proc in running.values():
        _, stderr = proc.communicate(timeout=180)
        assert proc.returncode == 0, stderr
    # ilr's requesters each request once: these runs take the second half, `folioperf run ilr` (which draws its own,
    # from the first) the first, so no requester asks twice for one item
    document = json.loads((directory / "ilr.json").read_text())
    requesters = document["pools"]["requesters"]
    document["pools"]["requesters"] = requesters[len(requesters) // 2:]
    (directory / "ilr.json").write_text(json.dumps(document))
    return {name: directory / f"{name}.json" for name in WITH_POOLS}


@pytest.fixture(scope="session")
def plan_runs(seeded, master_pools, tmp_path_factory) -> dict[str, LocustRun]:
    """Each workflow under plain Locust, one user, with the call log and the fake clock, at once."""
    root = tmp_path_factory.mktemp("master-group-runs")
    started = {}
    for name, (group, args, stop) in RUNS.items():
        out = root / name
        out.mkdir()
        workflow = group.split("-")[0]
        pools = ["--pools", str(master_pools[workflow])] if workflow in master_pools else []
        command = workflow_args(seeded, out, f"{workflow}.py", "-t", str(CEILING_SECONDS), "-u", "1", "-r", "1",
                                *pools, *args)
        started[name] = (start_locust(command, out, seeded.env(CALL_LOG=str(out / "calls.json"), STOP_AFTER=stop,
                                                               FAKE_PAUSES=FAKE_PAUSE_SECONDS)), out)
    return {name: finish(proc, out, timeout=FINISH_SECONDS) for name, (proc, out) in started.items()}


def _iterations(run: LocustRun, group: str) -> list[list[tuple[str, list[dict]]]]:
    """The run's iterations, each its transactions with their entries (derived.transactions), one user's."""
    assert run.returncode == 0, run.output[-3000:]
    assert "Traceback" not in run.output
    recorded = derived.transactions(calls_of(run))
    per_iteration = len(derived.master_group(group).transaction_names())
    assert recorded, "no transaction recorded"
    return [recorded[i:i + per_iteration] for i in range(0, len(recorded) - per_iteration + 1, per_iteration)]


def _check_iteration(transactions: list[tuple[str, list[dict]]], plan: derived.Derived, mode: str) -> None:
    """An iteration's transactions are the plan's, in order, and send its calls with its headers and pauses."""
    assert [name for name, _ in transactions] == plan.transaction_names()
    entries = [e for _, es in transactions for e in es]
    for entry, sample in derived.matched(entries, plan, mode):
        _check_headers(entry, sample)
        assert not entry["failed"], entry


@pytest.mark.parametrize("name", list(RUNS))
def test_sends_the_master_plan_iteration_by_iteration(plan_runs, name):
    group, args, _ = RUNS[name]
    mode = args[args.index("--plan") + 1] if "--plan" in args else AS_RUN
    iterations = _iterations(plan_runs[name], group)
    assert len(iterations) >= 5
    for index, transactions in enumerate(iterations):
        _check_iteration(transactions, derived.master_group(group, index, mode), mode)


def _viewed(run: LocustRun) -> list[str]:
    """The instances whose holdings VIH's iterations read, in order."""
    return [parse_qs(urlsplit(e["url"]).query)["query"][0] for e in calls_of(run)
            if e["name"] == "GET /holdings-storage/holdings"]


def test_ilr_places_the_plans_hold(plan_runs):
    """Every iteration posts the plan's body (line 14903): its fields in its order, a Hold to the hold shelf under
    the older spelling, the requester and item the look-ups found, the date as the plan formats it; FOLIO takes it."""
    (post,) = [s for s in derived.master_group("ilr").calls() if s.method == "POST"]
    shape = derived.body(post)
    assert shape.dates == {"requestDate": "yyyy-MM-dd'T'HH:mm:ss'Z'"}
    sent = [e for e in calls_of(plan_runs["ilr"]) if e["name"] == "POST /circulation/requests"]
    assert len(sent) >= 5
    for entry in sent:
        assert _fields(entry["body"]) == list(shape.fields) and not entry["failed"]
        assert {f: entry["body"][f] for f in shape.fixed} == shape.fixed
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", entry["body"]["requestDate"])
    assert len({(e["body"]["requesterId"], e["body"]["itemId"]) for e in sent}) == len(sent)


def test_vih_views_the_first_instance_as_run_and_each_in_turn_as_written(plan_runs):
    """The plan's pre-processor removes the first id of the page fetched in the same iteration (line 46807): as
    run, the same instance every time; as written, the page's instances in turn."""
    as_run, as_written = _viewed(plan_runs["vih"]), _viewed(plan_runs["vih-as-written"])
    assert len(as_run) >= 5 and len(set(as_run)) == 1
    assert len(set(as_written)) == len(as_written) >= 5


@pytest.fixture(scope="session")
def mps_runs(seeded, master_pools, tmp_path_factory) -> dict[str, LocustRun]:
    """MPS's thread groups under plain Locust with the call log and the fake clock, 8 s each, at once (the plan
    names no transactions to stop after)."""
    root = tmp_path_factory.mktemp("mps-runs")
    started = {}
    for group in POLLS:
        out = root / group
        out.mkdir()
        command = workflow_args(seeded, out, "mps.py", "-t", "8", "-u", "1", "-r", "1", "--pools",
                                str(master_pools["mps"]), *_options(group))
        started[group] = (start_locust(command, out, seeded.env(CALL_LOG=str(out / "calls.json"),
                                                                FAKE_PAUSES=FAKE_PAUSE_SECONDS)), out)
    return {group: finish(proc, out, timeout=FINISH_SECONDS) for group, (proc, out) in started.items()}


@pytest.mark.parametrize("group", list(POLLS))
def test_mps_polls_as_its_thread_group(mps_runs, group):
    """Each of MPS's thread groups: its first two iterations send the plan's calls with its headers, and pause
    where and as long as the plan does (the locations' hour between them)."""
    run = mps_runs[group]
    assert run.returncode == 0, run.output[-3000:]
    assert "Traceback" not in run.output
    first, second = derived.master_group(group, 0), derived.master_group(group, 1)
    plan = derived.Derived(derived.MASTER, first.lines, first.events + second.events, first.variables)
    made = [e for e in calls_of(run) if not e["name"].startswith("POST /authn/")]
    calls = [i for i, e in enumerate(made) if e["type"] not in ("Pause", "Script")]
    assert len(calls) >= len(plan.calls()), [e["name"] for e in made]
    entries = made[:calls[len(plan.calls()) - 1] + 1]
    for entry, sample in derived.matched(entries, plan):
        _check_headers(entry, sample)
    assert not any(e.get("failed") for e in made), [e for e in made if e.get("failed")]


def test_mps_pick_slips_list_the_open_page_requests(seeded, master_pools):
    """The desks MPS polls are those whose pick slips list the dataset's open Page requests (datasets/holds.toml's
    page_requests): every one of them is on one of their slips."""
    headers = _login(seeded)
    desks = json.loads(master_pools["mps"].read_text())["pools"]["service_points"]
    slips = set()
    for desk in desks:
        r = requests.get(f"{seeded.url}/circulation/pick-slips/{desk['id']}", headers=headers, timeout=30)
        assert r.status_code == 200, r.text
        slips |= {slip["request"]["requestID"] for slip in r.json()["pickSlips"]}
    seeded_pages = requests.get(f"{seeded.url}/request-storage/requests", headers=headers, timeout=30, params={
        "query": 'requestType=="Page" and status=="Open - Not yet filled"', "limit": 1000}).json()["requests"]
    assert seeded_pages and {r["id"] for r in seeded_pages} <= slips


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
    per_minute = derived.master_throughput(name)
    assert group.get("pace") == (f"{per_minute:g}/m" if per_minute else None)
    assert name not in POLLS or group["options"]["poll"] == POLLS[name]
    if name in SPLITS:  # the percent of its Throughput Controller
        assert float(group["options"][SPLITS[name]]) == derived.master_percent(name)


@pytest.fixture(scope="session")
def default_runs(seeded, tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    """`folioperf run NAME --users 1` at the plan's pace against the seeded sandbox, all at once, each long enough
    for its first iteration at that pace (its samples after the first come 60/pace s apart) and 10 s more."""
    root = tmp_path_factory.mktemp("master-group-defaults")
    started = {}
    for name in GROUPS:
        per_minute = derived.master_throughput(name)
        samples = len(derived.master_group(name).samples)
        seconds = 10 + (round(60 * (samples - 1) / per_minute) if per_minute else 0)
        pace = ["--pace", f"{per_minute:g}/m"] if per_minute else []
        out = root / name
        out.mkdir()
        command = folioperf_command("run", name.split("-")[0], "--users", "1", "--duration", f"{seconds}s", *pace,
                                    *_options(name), "--okapi-url", seeded.url, "--tenant", seeded.tenant,
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


def test_a_flow_control_action_is_paced_and_its_pause_is_its_own():
    """VIH's Flow Control Action, as JMeter runs it under a 3-a-minute throughput timer: the action is due 20 s
    after the call before it, sleeps its 0.4 s, and the next call is due 20 s after the action, not 20.4 s."""
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(round(seconds, 6))
        now[0] += seconds

    timers = Timers(sleep, per_minute=3, clock=lambda: now[0])
    timers.before_sample()  # the page of instances, at 0
    timers.before_sample()  # the action, at 20
    timers.pause(0.4)  # its sleep
    timers.spent_in_sample()
    timers.before_sample()  # the holdings, at 40
    assert slept == [20.0, 0.4, 19.6] and now[0] == pytest.approx(40.0)
