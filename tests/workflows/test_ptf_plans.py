"""The built-in workflows as the PTF's plans send them (ptf_sequences.py), release by release: every call with
its CORS preflights and their browser headers, every pause where JMeter takes it (a fake clock records them:
tests/fixtures/locust_call_log.py), the renewal's nested transactions and its loop over every listed loan,
the holds' dates. Its CICO runs use pools of their own, apart from test_workflows.py's.

Where folioperf deliberately differs from a plan, the test says so: a preflight asks about the method of the
call it precedes (the plans' header manager says GET before POSTs too) and carries no token, as a browser's
does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import requests

from tests.locust_process import LocustRun
from tests.workflows import ptf_sequences as ptf
from tests.workflows.conftest import CEILING_SECONDS, FINISH_SECONDS, calls_of, finish, start_locust, workflow_args

pytestmark = [pytest.mark.xdist_group("workflow-runs"), pytest.mark.long_run]  # on one xdist worker: its runs are made once

# A run quits once it has recorded TRANSACTIONS (the renewal's: an iteration and the inner one of the next);
# -t is only a ceiling. A fixed run time was not: 17 runs start at once, and the first ready spent their 8 s
# while the others were still starting; on a slow, busy machine five check-out runs recorded none
TRANSACTIONS = "*:3"
# Each of the plans' pauses really takes 50 ms (tests/fixtures/locust_call_log.py): not 0, so a run does not
# take the CPU from the others while they start
FAKE_PAUSE_SECONDS = "0.05"
PREFLIGHT_HEADERS = ("Origin", "Access-Control-Request-Method", "Access-Control-Request-Headers", "User-Agent")
HOLD_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")  # ptf.HOLD_DATE, UTC
TRANSACTION = {"check-out": "Check-out", "check-in": "Check-in"}
MIX = {"check-out": "0-100", "check-in": "100-0"}

CICO_RUNS = [(release, page) for release in ptf.RELEASES for page in ("check-out", "check-in")]
PLAN = {"check-out": ptf.CHECK_OUT, "check-in": ptf.CHECK_IN}


def _share(pool: list[dict], index: int, parts: int) -> list[dict]:
    return pool[index::parts]


def _login(seeded) -> dict[str, str]:
    r = requests.post(seeded.url + "/authn/login", json={"username": seeded.username, "password": seeded.password},
                      headers={"X-Okapi-Tenant": seeded.tenant}, timeout=10)
    assert r.status_code == 201, r.text
    return {"X-Okapi-Tenant": seeded.tenant, "X-Okapi-Token": r.headers["x-okapi-token"]}


@pytest.fixture(scope="session")
def returned_loan_borrower(seeded) -> dict:
    """A borrower of the 10-loan group, one of whose loans is returned first: the plan's first listing shows
    it (status.name==Open is no part of its CQL), so the plan renews it too, and that renewal fails."""
    borrower = seeded.pools["renew"]["loan_users_10"][0]
    headers = _login(seeded)
    loans = requests.get(seeded.url + "/circulation/loans", params={"query": f"(userId=={borrower['id']} and status.name==Open)",
                                                                     "limit": 1}, headers=headers, timeout=10).json()["loans"]
    point = requests.get(seeded.url + "/service-points", params={"limit": 1}, headers=headers, timeout=10).json()
    r = requests.post(seeded.url + "/circulation/check-in-by-barcode", headers=headers, timeout=10, json={
        "itemBarcode": loans[0]["item"]["barcode"], "servicePointId": point["servicepoints"][0]["id"],
        "checkInDate": "2026-01-01T10:00:00.000Z"})
    assert r.status_code == 200, r.text
    return borrower


@pytest.fixture(scope="session")
def runs(seeded, returned_loan_borrower, tmp_path_factory) -> dict[str, LocustRun]:
    """Every run of this module, at once (their data do not overlap), with the fake clock."""
    root = tmp_path_factory.mktemp("ptf-plan-runs")
    cico, holds = seeded.part("check-in-check-out", 1), seeded.part("holds", 1)  # test_workflows.py takes part 0
    parts = len(CICO_RUNS) + 1
    plans: dict[str, tuple[str, str, list[str], dict]] = {}
    for index, (release, page) in enumerate(CICO_RUNS):
        plans[f"{release}-{page}"] = ("check_in_check_out.py", "check-in-check-out",
                                      ["--ui-release", release, "--mix", MIX[page]],
                                      {"available_items": _share(cico["available_items"], index, parts),
                                       "checked_out_items": _share(cico["checked_out_items"], index, parts)})
    plans["orchid-no-preflight"] = ("check_in_check_out.py", "check-in-check-out",
                                    ["--ui-release", "orchid", "--mix", MIX["check-out"], "--no-preflight"],
                                    {"available_items": _share(cico["available_items"], parts - 1, parts),
                                     "checked_out_items": []})
    plans["renew"] = ("renew.py", "renew", ["--loans-per-user", "10"],
                      {"loan_users_10": [returned_loan_borrower]})
    reserved = {i["id"] for i in holds["instances"][2::3]}
    for variant, pools in (("patron", {"instances": holds["instances"][0::3]}),
                           ("instance", {"instances": holds["instances"][1::3]}),
                           ("item", {"items": [i for i in holds["items"] if i["instanceId"] in reserved]})):
        plans[f"holds-{variant}"] = ("holds.py", "holds", ["--variant", variant], pools)
    started = {}
    for name, (file, workflow, args, pools) in plans.items():
        out: Path = root / name
        out.mkdir()
        pools_file = seeded.pools_file(out, workflow, **pools)
        command = workflow_args(seeded, out, file, "-t", str(CEILING_SECONDS), "-u", "1", "-r", "1", "--pools", str(pools_file), *args)
        started[name] = (start_locust(command, out, seeded.env(CALL_LOG=str(out / "calls.json"), STOP_AFTER=TRANSACTIONS,
                                                               FAKE_PAUSES=FAKE_PAUSE_SECONDS)), out)
    return {name: finish(proc, out, timeout=FINISH_SECONDS) for name, (proc, out) in started.items()}


def _ran(run: LocustRun) -> list[tuple[str, list[dict]]]:
    assert run.returncode == 0, run.output[-3000:]
    assert "Traceback" not in run.output
    recorded = ptf.transactions(calls_of(run))
    assert recorded, "no transaction recorded"
    return recorded


def _fields(body: dict, prefix: str = "") -> set[str]:
    out: set[str] = set()
    for key, value in body.items():
        out |= _fields(value, f"{prefix}{key}.") if isinstance(value, dict) else {prefix + key}
    return out


def _posts(steps: tuple) -> list[ptf.Call]:
    return [c for c in ptf.calls(steps) if c.method == "POST"]


@pytest.mark.parametrize("release,page", CICO_RUNS, ids=[f"{r}-{p}" for r, p in CICO_RUNS])
def test_cico_sends_the_plan(runs, release, page):
    """Each transaction sends the plan's calls and preflights in the plan's order, with its pauses right
    before the calls JMeter delays, the preflights carrying the browser's CORS headers and the POST the
    plan's body fields."""
    plan = PLAN[page][release]
    recorded = _ran(runs[f"{release}-{page}"])
    assert {name for name, _ in recorded} <= set(TRANSACTION.values())
    ours = [entries for name, entries in recorded if name == TRANSACTION[page]]
    assert ours, f"no {TRANSACTION[page]} recorded"
    (post,) = _posts(plan.steps)
    for entries in ours:
        assert ptf.mismatch(entries, plan.steps) is None, f"{plan.source}: {ptf.mismatch(entries, plan.steps)}"
        assert ptf.pause_mismatch(entries, plan.steps) is None, f"{plan.source}: {ptf.pause_mismatch(entries, plan.steps)}"
        for entry in entries:
            sent = {k.lower(): v for k, v in entry.get("headers", {}).items()}
            if entry["type"] in ("GET", "POST"):  # the plans' Okapi headers, no more (Okapi makes the request id)
                assert {k for k in sent if k.startswith("x-okapi-")} == {"x-okapi-tenant", "x-okapi-token"}, entry["name"]
            if entry["type"] == "OPTIONS":
                # the plan's header values, but the method a browser asks about (the plans say GET even before
                # a POST): the POST's own preflight asks for POST
                want = {**{h: ptf.CICO_HEADERS[h] for h in PREFLIGHT_HEADERS},
                        "Access-Control-Request-Method": "POST" if entry["name"].startswith("OPTIONS /circulation/check-") else "GET"}
                assert {h: sent.get(h.lower()) for h in PREFLIGHT_HEADERS} == want
                assert "x-okapi-token" not in sent  # a browser's preflight carries no credentials
            if entry["type"] == "POST":
                assert _fields(entry["body"]) == set(post.body)


def test_no_preflight_drops_only_the_preflights(runs):
    plan = ptf.CHECK_OUT["orchid"]
    for _, entries in _ran(runs["orchid-no-preflight"]):
        assert ptf.mismatch(entries, plan.steps, preflight=False) is None, ptf.mismatch(entries, plan.steps, preflight=False)
        assert ptf.pause_mismatch(entries, plan.steps, preflight=False) is None


def test_renewal_renews_every_listed_loan_in_an_inner_transaction(runs, seeded, returned_loan_borrower):
    """users_loanRenewals.jmx: every loan the first listing shows is renewed (the returned one too, which
    fails, and the loop goes on), then the loans are listed again; the renewals and the last listing are a
    transaction of their own inside "Renew all loans"."""
    log = [e for e in calls_of(runs["renew"]) if not e["name"].startswith("POST /authn/")]
    assert runs["renew"].returncode == 1, runs["renew"].output[-3000:]  # the returned loan's renewal failed
    iterations, current = [], []
    for entry in log:
        current.append(entry)
        if entry["type"] == "Transaction" and entry["name"] == "Renew all loans":
            iterations.append(current)
            current = []
    assert iterations
    listed = requests.get(seeded.url + "/circulation/loans", headers=_login(seeded), timeout=10, params={
        "query": f"(userId=={returned_loan_borrower['id']})", "limit": 0}).json()["totalRecords"]
    for entries in iterations:
        made = [e for e in entries if e["type"] not in ("Transaction", "Pause")]
        assert ptf.mismatch(made, ptf.RENEW_ALL.steps, loops=listed) is None, ptf.mismatch(made, ptf.RENEW_ALL.steps, loops=listed)
        assert sum(e["failed"] for e in made if e["name"] == "POST /circulation/renew-by-barcode") == 1
        inner, outer = [e for e in entries if e["type"] == "Transaction"]
        assert inner["name"] != "Renew all loans" and outer["name"] == "Renew all loans"
        assert entries[-2:] == [inner, outer]


@pytest.mark.parametrize("variant", list(ptf.PLACE_HOLD))
def test_hold_follows_the_plan(runs, variant):
    """placeHolds_*.jmx: the 3 s pause comes before the request; the request's date is UTC with
    milliseconds and a Z, and an instance or item request expires at that very date."""
    plan = ptf.PLACE_HOLD[variant]
    (post,) = _posts(plan.steps)
    for _, entries in _ran(runs[f"holds-{variant}"]):
        assert ptf.mismatch(entries, plan.steps) is None, ptf.mismatch(entries, plan.steps)
        assert ptf.pause_mismatch(entries, plan.steps) is None, ptf.pause_mismatch(entries, plan.steps)
        (sent,) = [e for e in entries if e["type"] == "POST"]
        assert _fields(sent["body"]) == set(post.body)
        for field, _pattern in post.dates:
            assert HOLD_DATE.match(sent["body"][field]), sent["body"][field]
        for field, other in post.same:
            assert sent["body"][field] == sent["body"][other]
