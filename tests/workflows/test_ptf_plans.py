"""The built-in workflows as the PTF's plans send them and wait, derived from the plans' .jmx files by
folioperf.jmx with JMeter's rules (tests/workflows/derived.py), release by release and in both readings of the
plans' timers: every call with its CORS preflights and the plan's headers, every pause where JMeter takes it
and as long as JMeter made it (a fake clock records the pauses a workflow asks for:
tests/fixtures/locust_call_log.py), the script steps JMeter counts as samples, the renewal's transactions and its
loop over every listed loan, the holds' dates. Its runs use pools of their own, apart from test_workflows.py's.

Where folioperf deliberately differs from a plan, the test says so (the README's table lists it): a preflight
asks about the method of the call it precedes and carries no token and no Content-Type, as a browser's does; a
call asks for no
compression with `Accept-Encoding: identity` where JMeter sends no Accept-Encoding; a POST body says it is JSON."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import requests
from folioperf.workflows import cico_pages

from folioperf.jmeter import AS_RUN, AS_WRITTEN, PLAN_MODES, Timer
from folioperf.page import Together
from tests.locust_process import LocustRun
from tests.workflows import derived
from tests.workflows.conftest import CEILING_SECONDS, FINISH_SECONDS, calls_of, finish, start_locust, workflow_args

pytestmark = [pytest.mark.xdist_group("workflow-runs"), pytest.mark.long_run]  # on one xdist worker: its runs are made once

# A run quits once it has recorded TRANSACTIONS (a CICO run both of its transactions: it checks out and in at
# random, half and half); -t is only a ceiling (a fixed run time was not: the first of many runs started at once
# spent theirs while the others were still starting)
TRANSACTIONS = "*:3"
CICO_TRANSACTIONS = "Check-out:2,Check-in:2"
# Each pause really takes 50 ms (tests/fixtures/locust_call_log.py): not 0, so a run does not take the CPU from
# the others while they start
FAKE_PAUSE_SECONDS = "0.05"
HOLD_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")  # the holds plans' date, in UTC
TRANSACTION = {"check-out": "Check-out", "check-in": "Check-in"}
PAGES = ("check-out", "check-in")
CICO_RUNS = [(release, page, AS_RUN) for release in derived.RELEASES for page in PAGES] + \
            [("lotus", page, AS_WRITTEN) for page in PAGES]


def _run_id(release: str, mode: str = AS_RUN) -> str:
    """The run that checks out and in with a release's pages, in a reading of the plan's timers."""
    return release + ("" if mode == AS_RUN else f"-{mode}")


def _login(seeded) -> dict[str, str]:
    r = requests.post(seeded.url + "/authn/login", json={"username": seeded.username, "password": seeded.password},
                      headers={"X-Okapi-Tenant": seeded.tenant}, timeout=10)
    assert r.status_code == 201, r.text
    return {"X-Okapi-Tenant": seeded.tenant, "X-Okapi-Token": r.headers["x-okapi-token"]}


@pytest.fixture(scope="session")
def returned_loan_borrowers(seeded) -> list[dict]:
    """Two borrowers of the 10-loan group, one of whose loans is returned first: the plans' first listing shows
    it (status.name==Open is no part of its CQL), so the plans renew it too, and that renewal fails."""
    borrowers = seeded.pools["renew"]["loan_users_10"][:2]
    headers = _login(seeded)
    point = requests.get(seeded.url + "/service-points", params={"limit": 1}, headers=headers, timeout=10).json()
    for borrower in borrowers:
        loans = requests.get(seeded.url + "/circulation/loans", params={
            "query": f"(userId=={borrower['id']} and status.name==Open)", "limit": 1}, headers=headers, timeout=10).json()["loans"]
        r = requests.post(seeded.url + "/circulation/check-in-by-barcode", headers=headers, timeout=10, json={
            "itemBarcode": loans[0]["item"]["barcode"], "servicePointId": point["servicepoints"][0]["id"],
            "checkInDate": "2026-01-01T10:00:00.000Z"})
        assert r.status_code == 200, r.text
    return borrowers


@pytest.fixture(scope="session")
def runs(seeded, returned_loan_borrowers, tmp_path_factory) -> dict[str, LocustRun]:
    """Every run of this module, at once (their data do not overlap), with the fake clock."""
    root = tmp_path_factory.mktemp("ptf-plan-runs")
    cico, holds_pools = seeded.part("check-in-check-out", 1), seeded.part("holds", 1)  # test_workflows.py takes part 0
    plans: dict[str, tuple[str, str, list[str], dict]] = {}
    cico_runs = [(_run_id(release, mode), ["--ui-release", release, "--plan", mode])
                 for release, mode in dict.fromkeys((r, m) for r, _, m in CICO_RUNS)]
    cico_runs += [("master", ["--ptf-plan", "master"]), ("orchid-no-preflight", ["--no-preflight"])]
    parts = len(cico_runs)
    for index, (name, args) in enumerate(cico_runs):
        plans[name] = ("check_in_check_out.py", "check-in-check-out", ["--mix", "50-50", *args],
                       {"available_items": cico["available_items"][index::parts],
                        "checked_out_items": cico["checked_out_items"][index::parts]})
    plans["renew"] = ("renew.py", "renew", ["--loans-per-user", "10"], {"loan_users_10": [returned_loan_borrowers[0]]})
    plans["renew-master"] = ("renew.py", "renew", ["--loans-per-user", "10", "--ptf-plan", "master"],
                             {"loan_users_10": [returned_loan_borrowers[1]]})
    reserved = {i["id"] for i in holds_pools["instances"][2::3]}
    for variant, pools in (("patron", {"instances": holds_pools["instances"][0::3]}),
                           ("instance", {"instances": holds_pools["instances"][1::3]}),
                           ("item", {"items": [i for i in holds_pools["items"] if i["instanceId"] in reserved]})):
        plans[f"holds-{variant}"] = ("holds.py", "holds", ["--variant", variant], pools)
    started = {}
    for name, (file, workflow, args, pools) in plans.items():
        out: Path = root / name
        out.mkdir()
        pools_file = seeded.pools_file(out, workflow, **pools)
        command = workflow_args(seeded, out, file, "-t", str(CEILING_SECONDS), "-u", "1", "-r", "1", "--pools", str(pools_file), *args)
        stop = CICO_TRANSACTIONS if workflow == "check-in-check-out" else TRANSACTIONS
        started[name] = (start_locust(command, out, seeded.env(CALL_LOG=str(out / "calls.json"), STOP_AFTER=stop,
                                                               FAKE_PAUSES=FAKE_PAUSE_SECONDS)), out)
    return {name: finish(proc, out, timeout=FINISH_SECONDS) for name, (proc, out) in started.items()}


def _ran(run: LocustRun, code: int = 0) -> list[tuple[str, list[dict]]]:
    assert run.returncode == code, run.output[-3000:]
    assert "Traceback" not in run.output
    recorded = derived.transactions(calls_of(run))
    assert recorded, "no transaction recorded"
    return recorded


def _plan_headers(sample) -> dict[str, str]:
    """The headers a plan's sampler sends, by lower-case name, the token and tenant aside (Okapi's business)."""
    return {k.lower(): v for k, v in sample.headers if k.lower() not in ("x-okapi-token", "x-okapi-tenant")}


def _sent_headers(entry: dict) -> dict[str, str]:
    return {k.lower(): v for k, v in entry.get("headers", {}).items()
            if k.lower() not in ("x-okapi-token", "x-okapi-tenant", "host", "content-length")}


def _check_headers(entry: dict, sample) -> None:
    """A call sends the plan's headers, but for the differences the README lists."""
    want = _plan_headers(sample)
    sent = _sent_headers(entry)
    if entry["type"] == "OPTIONS":  # a browser's preflight: the method it asks about, no token, no body's type
        want["access-control-request-method"] = "POST" if entry["name"].startswith("OPTIONS /circulation/check-") else "GET"
        want.pop("content-type", None)
        assert "x-okapi-token" not in {k.lower() for k in entry["headers"]}
    want.setdefault("accept-encoding", "identity")  # JMeter asks for no compression by sending none
    if "user-agent" not in want:  # where a plan sets none, JMeter's HTTP client sends its own, as folioperf's does
        sent.pop("user-agent", None)
    if entry["type"] == "POST":
        want.setdefault("content-type", "application/json")  # JMeter's raw body would say text/plain
    assert sent == want, f"{entry['name']}: sent {sent}, the plan's {want}"


def _fields(body: dict, prefix: str = "") -> list[str]:
    out: list[str] = []
    for key, value in body.items():
        out += _fields(value, f"{prefix}{key}.") if isinstance(value, dict) else [prefix + key]
    return out


# -- the pages as written in the workflow, against the plans, without running them --------------------------

def _page_calls(steps: tuple) -> list[tuple[str, list[Timer]]]:
    """(call name, the timers written before it) in page order; a together block's calls in their order."""
    out, waiting = [], []
    for step in steps:
        inner = step.steps if isinstance(step, Together) else (step,)
        for s in inner:
            if isinstance(s, Timer):
                waiting.append(s)
            else:
                out.append((s.name, waiting))
                waiting = []
    return out


@pytest.mark.parametrize("release", derived.RELEASES)
@pytest.mark.parametrize("page", PAGES)
def test_pages_pause_as_the_plans_in_both_readings(release, page):
    """workflows/cico_pages.py writes the plans' timers: before every call, the pauses the plan's timers make,
    as JMeter ran them and as written, for every release. (The runs below check the calls' URLs.)"""
    pages = cico_pages.CHECK_OUT if page == "check-out" else cico_pages.CHECK_IN
    written = _page_calls(pages[release])
    plan = derived.cico(release, page)
    calls = plan.calls()
    assert len(written) == len(calls), f"{len(written)} calls written, the plan's {len(calls)}"
    for (name, _), sample in zip(written, calls):
        assert derived.api_matches(name, sample), f"{name} is not {derived.api(sample)} (line {sample.lines[0]})"
    variables = {"thinktime_offset": "0"}
    for mode in PLAN_MODES:
        for (name, timers), sample in zip(written, calls):
            ours = sorted((d.kind, d.low, d.high) for d in (t.wait(mode, variables) for t in timers))
            theirs = sorted((d.kind, d.low, d.high) for d in plan.pauses(sample, mode))
            assert ours == theirs, f"{release} {page} {mode}: before {name} (line {sample.lines[0]})"


def test_the_master_plan_drives_the_orchid_pages():
    """master-script-longevity.jmx's CICO group: the Orchid plan's calls, timer for timer."""
    for page in PAGES:
        master, orchid = derived.cico("orchid", page, master=True), derived.cico("orchid", page)
        assert [(derived.url(s), [str(d) for d in master.pauses(s)]) for s in master.calls()] == \
               [(derived.url(s), [str(d) for d in orchid.pauses(s)]) for s in orchid.calls()]


# -- the runs ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("release,page,mode", CICO_RUNS, ids=[f"{r}-{p}-{m}" for r, p, m in CICO_RUNS])
def test_cico_sends_the_plan(runs, release, page, mode):
    """Each iteration takes the plan's two script steps, then its transaction sends the plan's calls and
    preflights in the plan's order with the plan's headers, the pauses right before the calls JMeter delays and
    as long as JMeter made them (or as written, with --plan as-written), and the POST the plan's body fields."""
    plan = derived.cico(release, page)
    scripts = derived.cico_iteration(page, release=release).scripts()
    recorded = _ran(runs[_run_id(release, mode)])
    assert {name for name, _ in recorded} <= set(TRANSACTION.values())
    ours = [entries for name, entries in recorded if name == TRANSACTION[page]]
    assert ours, f"no {TRANSACTION[page]} recorded"
    (post,) = [s for s in plan.calls() if s.method == "POST"]
    for entries in ours:
        assert [e["name"] for e in entries if e["type"] == "Script"] == scripts
        assert derived.mismatch(entries, plan) is None, f"{plan.source}: {derived.mismatch(entries, plan)}"
        problem = derived.pause_mismatch(entries, plan, mode)
        assert problem is None, f"{plan.source}: {problem}"
        pairs = dict((id(e), s) for e, s in derived._match(entries, plan, True)[0])
        for entry in entries:
            if entry["type"] in ("GET", "POST", "OPTIONS"):
                _check_headers(entry, pairs[id(entry)])
            if entry["type"] == "POST":
                assert _fields(entry["body"]) == list(derived.body(post).fields)


@pytest.mark.parametrize("page", PAGES)
def test_master_cico_sends_the_master_plan(runs, page):
    """--ptf-plan master: the master plan's CICO group's calls, script steps and headers (its browser headers)."""
    plan = derived.cico("orchid", page, master=True)
    scripts = derived.cico_iteration(page, master=True).scripts()
    ours = [entries for name, entries in _ran(runs["master"]) if name == TRANSACTION[page]]
    assert ours, f"no {TRANSACTION[page]} recorded"
    for entries in ours:
        assert [e["name"] for e in entries if e["type"] == "Script"] == scripts
        pairs, problem = derived._match(entries, plan, True)
        assert problem is None, problem
        for entry, sample in pairs:
            _check_headers(entry, sample)


def test_check_ins_happen_at_the_service_points_the_page_lists(runs, seeded):
    """The plans' check-in takes a random match of GET /service-points (match number 0), not the data's one: the
    check-ins of the runs went to more than one service point."""
    points = {e["body"]["servicePointId"] for release in derived.RELEASES
              for e in calls_of(runs[release]) if e["name"] == "POST /circulation/check-in-by-barcode"}
    listed = requests.get(seeded.url + "/service-points", params={"limit": 1000}, headers=_login(seeded), timeout=10).json()
    assert len(points) > 1 and points <= {p["id"] for p in listed["servicepoints"]}


def test_no_preflight_drops_only_the_preflights(runs):
    for name, entries in _ran(runs["orchid-no-preflight"]):
        plan = derived.cico("orchid", "check-out" if name == "Check-out" else "check-in")
        assert derived.mismatch(entries, plan, preflight=False) is None, derived.mismatch(entries, plan, preflight=False)
        assert derived.pause_mismatch(entries, plan, AS_RUN, preflight=False) is None


def _iterations(run: LocustRun) -> list[list[dict]]:
    log = [e for e in calls_of(run) if not e["name"].startswith("POST /authn/")]
    iterations, current = [], []
    for entry in log:
        current.append(entry)
        if entry["type"] == "Transaction" and entry["name"] == "Renew all loans":
            iterations.append(current)
            current = []
    assert iterations
    return iterations


def _listed(seeded, borrower: dict) -> int:
    return requests.get(seeded.url + "/circulation/loans", headers=_login(seeded), timeout=10, params={
        "query": f"(userId=={borrower['id']})", "limit": 0}).json()["totalRecords"]


def test_renewal_renews_every_listed_loan_in_an_inner_transaction(runs, seeded, returned_loan_borrowers):
    """users_loanRenewals.jmx: every loan the first listing shows is renewed (the returned one too, which fails,
    and the loop goes on), each renewal followed by the plan's counter step, then the loans are listed again;
    the renewals and the last listing are a transaction of their own inside "Renew all loans"."""
    assert runs["renew"].returncode == 1, runs["renew"].output[-3000:]  # the returned loan's renewal failed
    listed = _listed(seeded, returned_loan_borrowers[0])
    plan = derived.renewal(listed)
    for entries in _iterations(runs["renew"]):
        made = [e for e in entries if e["type"] not in ("Transaction", "Pause")]
        assert derived.mismatch(made, plan) is None, derived.mismatch(made, plan)
        assert [e["name"] for e in made if e["type"] == "Script"] == plan.scripts()
        assert sum(e["failed"] for e in made if e["name"] == "POST /circulation/renew-by-barcode") == 1
        inner, outer = [e for e in entries if e["type"] == "Transaction"]
        assert inner["name"] != "Renew all loans" and outer["name"] == "Renew all loans"
        assert entries[-2:] == [inner, outer]
        assert plan.transaction_names() == ["Users loan Renewal Transaction", "Loan renewal Transaction Controller"]


def test_master_renewal_ends_the_iteration_at_a_failed_renewal(runs, seeded, returned_loan_borrowers):
    """The master plan's RENEW group: one transaction; a failed renewal starts the next thread loop (its
    ResultAction, master-script-longevity.jmx line 36498), so the borrower's later loans and the last listing
    are not sent, and the transaction fails."""
    run = runs["renew-master"]
    assert run.returncode == 1, run.output[-3000:]
    plan = derived.renewal(_listed(seeded, returned_loan_borrowers[1]), master=True)
    assert plan.transaction_names() == ["ULR_TC: Users loan Renewal Transaction"]
    for entries in _iterations(run):
        made = [e for e in entries if e["type"] not in ("Transaction", "Pause")]
        (transaction,) = [e for e in entries if e["type"] == "Transaction"]
        assert transaction["failed"]
        renewals = [e for e in made if e["name"] == "POST /circulation/renew-by-barcode"]
        assert renewals[-1]["failed"] and not any(e["failed"] for e in renewals[:-1])
        assert made[-1] is renewals[-1]  # nothing after the failed renewal: no counter step, no last listing
        pairs, _ = derived._match(made[:-1] + [renewals[-1]], derived.renewal(len(renewals), master=True), True)
        for entry, sample in pairs:
            _check_headers(entry, sample)


@pytest.mark.parametrize("variant", derived.HOLDS)
def test_hold_follows_the_plan(runs, variant):
    """placeHolds_*.jmx: the 3 s pause (a plain number: as written) comes before the request; the request's date
    is UTC with milliseconds and a Z, and an instance or item request expires at that very date."""
    plan = derived.hold(variant)
    (post,) = plan.calls()
    shape = derived.body(post)
    for _, entries in _ran(runs[f"holds-{variant}"]):
        assert derived.mismatch(entries, plan) is None, derived.mismatch(entries, plan)
        assert derived.pause_mismatch(entries, plan, AS_RUN) is None, derived.pause_mismatch(entries, plan, AS_RUN)
        (sent,) = [e for e in entries if e["type"] == "POST"]
        _check_headers(sent, post)
        assert _fields(sent["body"]) == list(shape.fields)
        for field, value in shape.fixed.items():
            assert sent["body"][field] == value
        for a, b in shape.same:
            assert sent["body"][a] == sent["body"][b]
        for field in shape.dates or ("requestDate",):
            assert HOLD_DATE.match(sent["body"][field]), sent["body"][field]
