"""The PTF master plan's inventory views, VB, VTT and VH (workflows/vb.py, vtt.py, vh.py), against the seeded
sandbox (the rih dataset's instances, with holdings, items and MARC records), as the plan sends them, derived
from master-script-longevity.jmx by tests/workflows/derived.py with JMeter's rules:

- `folioperf run NAME --users 1` at the group's pace ends with no failure, every transaction recorded;
- a plain Locust run with the call log and the fake clock sends, iteration by iteration, that iteration of the
  plan's thread group (its ForEach run over the hits the search found, up to the CSV's count), with the plan's
  headers, and no pause (the groups have no timer but their throughput timer);
- the throughput timer paces what JMeter's scope gives it; scenarios/ptf-master.toml runs each group with the
  plan's threads and throughput timer.
"""

from __future__ import annotations

import json
import subprocess
import tomllib
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from folioperf import jmx
from folioperf.jmeter import AS_WRITTEN
from folioperf.timers import Timers
from tests.locust_process import REPO, LocustRun, clean_env, folioperf_command, only_results
from tests.workflows import derived
from tests.workflows.conftest import CEILING_SECONDS, FINISH_SECONDS, calls_of, finish, start_locust, workflow_args
from tests.workflows.test_ptf_plans import _check_headers, _login

pytestmark = [pytest.mark.xdist_group("inventory-view-runs"), pytest.mark.long_run]

ITERATIONS = 3
# workflow → (its transactions: load, search, the ForEach's; the CSV's count column)
VIEWS = {
    "vb": (("VB_Load Inventory", "VB_Inventory Search Instance", "VB_Inventory Choose Instance"), "iterations_count"),
    "vh": (("VH_Load Inventory", "VH_Inventory Search Holdings", "VH_Inventory Choose Holdings",
            "VH_Inventory View Holdings"), "iterations_count"),
    "vtt": (("VTT_Load Inventory", "VTT_Inventory Search Instance", "VTT_Inventory Choose Instance",
             "VTT_Inventory View Instance Source"), "instances_count"),
}
# run → (workflow, Locust arguments)
RUNS = {"vb": ("vb", []), "vb-as-written": ("vb", ["--plan", AS_WRITTEN]), "vh": ("vh", []), "vtt": ("vtt", []),
        "vtt-as-written": ("vtt", ["--plan", AS_WRITTEN])}
# the Ifs a run's iterations skip, the seeded instances having holdings and MARC records: VTT's holdings
# extractor, `$.holdingsRecords.id` (line 42984), finds none as JMeter ran it
SKIPPED = {"vtt": {"If Holdings Exist": False}}
GROUPS = {"vb": "VB", "vh": "VH", "vtt": "VTT"}  # the workflow's group in scenarios/ptf-master.toml
UNSOURCED = "qwxzunsourced"  # the title word of an instance without a MARC record
FAKE_PAUSE_SECONDS = "0.05"


@pytest.fixture(scope="session")
def view_pools(seeded, tmp_path_factory) -> dict[str, Path]:
    """Each workflow's pools, as `folioperf pools --workflow NAME` draws them from the seeded tenant."""
    directory = tmp_path_factory.mktemp("view-pools")
    running = {name: subprocess.Popen(folioperf_command("pools", "--workflow", name, "--db", seeded.dsn, "--tenant",
                                                        seeded.tenant, "--limit", "1000", "-o", str(directory / f"{name}.json")),
                                      env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for name in VIEWS}
    for proc in running.values():
        _, stderr = proc.communicate(timeout=180)
        assert proc.returncode == 0, stderr
    return {name: directory / f"{name}.json" for name in VIEWS}


@pytest.fixture(scope="session")
def unsourced(seeded) -> str:
    """An instance without a MARC record (source FOLIO), its title's word UNSOURCED: its id."""
    headers = _login(seeded)
    (kind,) = requests.get(f"{seeded.url}/instance-types", headers=headers, timeout=30,
                           params={"query": 'name=="text"'}).json()["instanceTypes"]
    instance_id = str(uuid.uuid4())
    r = requests.post(f"{seeded.url}/instance-storage/instances", headers=headers, timeout=30, json={
        "id": instance_id, "title": f"The {UNSOURCED} record", "source": "FOLIO", "instanceTypeId": kind["id"]})
    assert r.status_code == 201, r.text
    return instance_id


@pytest.fixture(scope="session")
def view_runs(seeded, view_pools, unsourced, tmp_path_factory) -> dict[str, LocustRun]:
    """Each run under plain Locust, one user, with the call log and the fake clock, at once, until it has made
    ITERATIONS whole iterations (it quits as the next one ends its first transaction). The "-404" runs search
    first the instance without a MARC record, then the seeded ones."""
    root = tmp_path_factory.mktemp("view-runs")
    started = {}
    runs = {**{name: (*run, view_pools[run[0]]) for name, run in RUNS.items()},
            "vtt-404": ("vtt", [], None), "vtt-404-as-written": ("vtt", ["--plan", AS_WRITTEN], None)}
    for name, (workflow, args, pools) in runs.items():
        out = root / name
        out.mkdir()
        if pools is None:
            document = json.loads(view_pools[workflow].read_text())
            keywords = [{"keyword": UNSOURCED, "instances_count": 1}, *document["pools"]["keywords"]]
            pools = out / "pools.json"
            pools.write_text(json.dumps({**document, "pools": {**document["pools"], "keywords": keywords}}))
        command = workflow_args(seeded, out, f"{workflow}.py", "-t", str(CEILING_SECONDS), "-u", "1", "-r", "1",
                                "--pools", str(pools), *args)
        stop = f"{VIEWS[workflow][0][0]}:{ITERATIONS + 1}"
        started[name] = (start_locust(command, out, seeded.env(CALL_LOG=str(out / "calls.json"), STOP_AFTER=stop,
                                                               FAKE_PAUSES=FAKE_PAUSE_SECONDS)), out)
    return {name: finish(proc, out, timeout=FINISH_SECONDS) for name, (proc, out) in started.items()}


def _iterations(run: LocustRun, workflow: str) -> list[list[tuple[str, list[dict]]]]:
    """The run's whole iterations, each its transactions with their entries (derived.transactions)."""
    assert run.returncode == 0, run.output[-3000:]
    assert "Traceback" not in run.output
    assert run.failures() == [], run.failures()
    load = VIEWS[workflow][0][0]
    recorded = derived.transactions(calls_of(run))
    starts = [i for i, (name, _) in enumerate(recorded) if name == load]
    return [recorded[a:b] for a, b in zip(starts, starts[1:])]


def _searched(entries: list[dict]) -> str:
    (search,) = [e for e in entries if e["name"] == "GET /search/instances"]
    return parse_qs(urlsplit(search["url"]).query)["query"][0]


def _hits(seeded, query: str) -> list[str]:
    r = requests.get(f"{seeded.url}/search/instances", headers=_login(seeded), timeout=30,
                     params={"query": query, "limit": 100})
    assert r.status_code == 200, r.text
    return [i["id"] for i in r.json()["instances"]]


def _counts(view_pools, workflow: str) -> dict[str, int]:
    column = VIEWS[workflow][1]
    rows = json.loads(view_pools[workflow].read_text())["pools"]["keywords"]
    return {row["keyword"]: int(row[column]) for row in rows}


@pytest.mark.parametrize("name", ["vtt-404", "vtt-404-as-written"])
def test_vtt_views_no_source_again_after_a_404_as_run(seeded, view_runs, unsourced, name):
    """The first iteration views the instance without a MARC record: its record answers 404 (accepted, line 42891)
    and its source is not viewed. As JMeter ran it (`instance_source` stays NOT_FOUND, line 42908), no source is
    viewed after that; as written, every later instance's is."""
    iterations = _iterations(view_runs[name], "vtt")
    assert len(iterations) >= ITERATIONS
    first, *later = iterations
    assert _viewed([e for _, es in first for e in es]) == [unsourced]
    (srs,) = [e for _, es in first for e in es if e["name"] == "GET /source-storage/records/{id}/formatted"]
    assert not srs["failed"]
    r = requests.get(f"{seeded.url}/source-storage/records/{unsourced}/formatted", headers=_login(seeded),
                     params={"idType": "INSTANCE"}, timeout=30)
    assert r.status_code == 404, r.text
    names = [[t for t, _ in transactions] for transactions in iterations]
    assert "VTT_Inventory View Instance Source" not in names[0]
    for transactions in later:
        viewed = _viewed([e for _, es in transactions for e in es])
        sources = [t for t, _ in transactions].count("VTT_Inventory View Instance Source")
        assert sources == (0 if name == "vtt-404" else len(viewed)) and viewed


def _viewed(entries: list[dict]) -> list[str]:
    """The instances viewed, in order (VH reads each twice: in Choose Holdings and View Holdings)."""
    return list(dict.fromkeys(e["url"].split("?")[0].rsplit("/", 1)[1] for e in entries if e["name"] == "GET /inventory/instances/{id}"))


@pytest.mark.parametrize("name", list(RUNS))
def test_sends_the_master_plan_iteration_by_iteration(seeded, view_pools, view_runs, name):
    """Each iteration: the plan's transactions and calls in its order, with its headers and no pause; its ForEach
    views the search's first hits, in the search's order, as many as the CSV's count (fewer if fewer are found)."""
    workflow, _ = RUNS[name]
    iterations = _iterations(view_runs[name], workflow)
    assert len(iterations) >= ITERATIONS
    counts = _counts(view_pools, workflow)
    for transactions in iterations:
        entries = [e for _, es in transactions for e in es]
        query = _searched(entries)
        keyword = query.split()[2]
        hits = _hits(seeded, query)
        assert hits, f"{keyword!r} finds no seeded instance"
        viewed = hits[:counts[keyword]]
        assert len(viewed) == counts[keyword], f"{keyword!r} finds fewer instances than the CSV's count"
        plan = derived.inventory_view(workflow, len(viewed), SKIPPED.get(name, {}))
        assert [t for t, _ in transactions] == plan.transaction_names()
        for entry, sample in derived.matched(entries, plan):
            _check_headers(entry, sample)
        assert _viewed(entries) == viewed


def test_vb_paces_only_its_foreach_as_run():
    """VB's throughput timer (line 41676) is in its ForEach: JMeter's scope gives it the ForEach's samplers only,
    not the reference data load and the search before it. As the workflow runs them (Timers.unpaced), the calls
    before the ForEach neither wait nor count: the views are paced 60/39 s apart, from the last view on."""
    plan = derived.inventory_view("vb", 2)
    inside = {s.lines for s in jmx.samples(derived.foreach_of("vb"))}
    assert len(inside) == 12 and len(plan.samples) == 26 + 1 + 2 * 12
    for sample in plan.samples:
        assert {t.line for t in sample.throughput} == ({41676} if sample.lines in inside else set()), sample.name
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(round(seconds, 3))
        now[0] += seconds

    timers = Timers(sleep, per_minute=39, clock=lambda: now[0])
    interval = round(60 / 39, 3)
    timers.before_sample()  # a view, at 0
    with timers.unpaced():
        for _ in range(27):  # the next iteration's load and search: no wait
            timers.before_sample()
            now[0] += 0.01
    timers.before_sample()  # its first view: due an interval after the last view
    assert slept == [round(interval - 0.27, 3)]


@pytest.fixture(scope="session")
def default_runs(seeded, tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    """`folioperf run NAME --users 1` at the plan's pace against the seeded sandbox, all at once, long enough for
    the first iteration's first view (its paced samples come 60/pace s apart) and 15 s more."""
    root = tmp_path_factory.mktemp("view-defaults")
    started = {}
    for name in VIEWS:
        threads, per_minute = derived.master_pace(derived.VIEW_GROUPS[name])
        first = derived.inventory_view(name, 1)
        paced = [s for s in first.samples if s.throughput]
        seconds = 15 + round(60 * len(paced) / per_minute)
        out = root / name
        out.mkdir()
        command = folioperf_command("run", name, "--users", str(threads), "--duration", f"{seconds}s", "--pace",
                                    f"{per_minute:g}/m", "--okapi-url", seeded.url, "--tenant", seeded.tenant,
                                    "--username", seeded.username, "--db", seeded.dsn)
        started[name] = (subprocess.Popen(command, cwd=out, env=clean_env(FOLIOPERF_PASSWORD=seeded.password),
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), out)
    done = {}
    for name, (proc, out) in started.items():
        output, _ = proc.communicate(timeout=FINISH_SECONDS + 120)
        done[name] = (subprocess.CompletedProcess(proc.args, proc.returncode, output, ""), out)
    return done


@pytest.mark.parametrize("name", list(VIEWS))
def test_folioperf_runs_it_at_its_defaults(default_runs, name):
    """At the plan's threads and pace: exit 0, no failure, the plan's transactions recorded."""
    proc, out = default_runs[name]
    assert proc.returncode == 0, proc.stdout[-4000:]
    res = only_results(out / "results")
    for transaction in dict.fromkeys(derived.inventory_view(name, 1).transaction_names()):
        entry = res.entry("Transaction", transaction)
        assert entry is not None and entry.count > 0 and entry.failures == 0, transaction
    assert res.apis() and all(e.failures == 0 for e in res.apis()), [(e.name, e.failures) for e in res.apis()]


@pytest.mark.parametrize("name", list(GROUPS))
def test_the_master_scenario_runs_the_group_at_the_plans_defaults(name):
    """scenarios/ptf-master.toml: the group's workflow, the plan's threads and throughput timer (samples a minute)."""
    scenario = tomllib.loads((REPO / "scenarios" / "ptf-master.toml").read_text())
    (group,) = [g for g in scenario["group"] if g["name"] == GROUPS[name]]
    threads, per_minute = derived.master_pace(derived.VIEW_GROUPS[name])
    assert (group["workflow"], group["users"], group["pace"]) == (name, threads, f"{per_minute:g}/m")


def test_vh_views_a_holdings_record_of_each_instance_it_chose(seeded, view_runs):
    """Each View Holdings transaction opens a holdings record of the instance its Choose Holdings viewed (the
    extractor's match 0 on that instance's holdings, line 44180), and counts that record's items."""
    headers = _login(seeded)
    views = 0
    for transactions in _iterations(view_runs["vh"], "vh"):
        for (_, chose), (name, viewed) in zip(transactions, transactions[1:]):
            if name != "VH_Inventory View Holdings":
                continue
            (instance_id,) = _viewed(chose)
            holdings_id = viewed[0]["url"].split("?")[0].rsplit("/", 1)[1]
            r = requests.get(f"{seeded.url}/holdings-storage/holdings/{holdings_id}", headers=headers, timeout=30)
            assert r.status_code == 200 and r.json()["instanceId"] == instance_id
            (count,) = [e for e in chose if e["name"] == "GET /inventory/items"]
            assert parse_qs(urlsplit(count["url"]).query)["query"] == [f"holdingsRecordId=={holdings_id}"]
            views += 1
    assert views >= ITERATIONS * 2
