"""The built-in PTF workflows under plain Locust (`locust -f workflows/<file>.py`) against the seeded sandbox,
at their default settings but for shorter pauses: each records its transactions and API calls (preflights
included) with no unexpected failure, and sends the calls of the PTF's plans (derived from the plans by
tests/workflows/derived.py: the newest CICO release, the master plan's RIH), in the plans' order. Pauses and the
other releases: test_ptf_plans.py."""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from folioperf.seed import dataset
from tests.locust_process import LocustRun
from tests.workflows import derived
from tests.workflows.conftest import CEILING_SECONDS, FINISH_SECONDS, calls_of, finish, start_locust, workflow_args

pytestmark = [pytest.mark.xdist_group("workflow-runs"), pytest.mark.long_run]  # on one xdist worker: its runs are made once

RENEW_GROUP = 50
# name → (workflow file, Locust arguments), with PTF's think times scaled down. A run quits once it has recorded
# STOP_AFTER's transactions (tests/fixtures/locust_call_log.py), within CEILING_SECONDS; rih runs its 20 s. The runs
# start at once: with a fixed 10 s, the first ready spent theirs while the others started (as test_ptf_plans.py's
# did, where five runs on a slow, busy machine recorded none)
STOP_AFTER = {"check-in-check-out": "Check-out:3,Check-in:3", "renew": "Renew all loans:2",
              "holds-patron": "Place hold:5", "holds-instance": "Place hold:5", "holds-item": "Place hold:5"}
RUNS = {
    "check-in-check-out": ("check_in_check_out.py", ["-u", "4", "-r", "4", "--think-time", "0.02"]),
    "renew": ("renew.py", ["-u", "2", "-r", "2", "--loans-per-user", str(RENEW_GROUP)]),
    "holds-patron": ("holds.py", ["-u", "3", "-r", "3", "--think-time", "0.1"]),  # the default variant
    "holds-instance": ("holds.py", ["-u", "3", "-r", "3", "--think-time", "0.1", "--variant", "instance"]),
    "holds-item": ("holds.py", ["-u", "3", "-r", "3", "--think-time", "0.1", "--variant", "item"]),
    # the open model at its default 3/s, with users enough to hold it through a busy machine's slow moments, for
    # 20 s: in 10 s, two iterations held up at the end by the suite's other runs were 6 % of 30, and the run failed
    # as having missed its rate (exit 4)
    "rih": ("rih.py", ["-u", "10", "-r", "10", "-t", "20"]),
}
# name → {transaction: what the plan sends in it (None: nothing of its own)}
SEQUENCES = {
    "check-in-check-out": {"Check-out": derived.cico("orchid", "check-out"), "Check-in": derived.cico("orchid", "check-in")},
    # derived.transactions() gives the calls made before the inner "Renew loans" ended to it: all of them here
    "renew": {"Renew loans": derived.renewal(RENEW_GROUP), "Renew all loans": None},
    "holds-patron": {"Place hold": derived.hold("patron")},
    "holds-instance": {"Place hold": derived.hold("instance")},
    "holds-item": {"Place hold": derived.hold("item")},
    "rih": {"Retrieve instance and holdings": derived.retrieve()},
}


def _holds_pools(seeded) -> dict[str, dict]:
    """Each holds variant its own instances (and the item variant the items of yet other instances), so the
    three runs at once never request one instance twice."""
    pools = seeded.part("holds", 0)  # test_ptf_plans.py takes part 1
    instances = pools["instances"]
    reserved = {i["id"] for i in instances[2::3]}
    return {
        "holds-patron": {"instances": instances[0::3]},
        "holds-instance": {"instances": instances[1::3]},
        "holds-item": {"items": [i for i in pools["items"] if i["instanceId"] in reserved]},
    }


@pytest.fixture(scope="session")
def runs(seeded, tmp_path_factory) -> dict[str, LocustRun]:
    """Every run above, at once (their data do not overlap)."""
    root = tmp_path_factory.mktemp("workflow-runs")
    replaced = _holds_pools(seeded)
    started = {}
    for name, (file, args) in RUNS.items():
        out: Path = root / name
        out.mkdir()
        workflow = name.split("-")[0] if name.startswith("holds") else name
        pools = seeded.pools_file(out, workflow, **{**seeded.part(workflow, 0), **replaced.get(name, {})})
        stop = {"STOP_AFTER": STOP_AFTER[name]} if name in STOP_AFTER else {}
        started[name] = (start_locust(workflow_args(seeded, out, file, "-t", str(CEILING_SECONDS), "--pools", str(pools), *args),
                                      out, seeded.env(CALL_LOG=str(out / "calls.json"), **stop)), out)
    return {name: finish(proc, out, timeout=FINISH_SECONDS) for name, (proc, out) in started.items()}


@pytest.mark.parametrize("name", list(RUNS))
def test_smoke(runs, name):
    run = runs[name]
    assert run.returncode == 0, run.output[-3000:]
    assert "Traceback" not in run.output
    stats = run.stats()
    for transaction in SEQUENCES[name]:
        assert stats[("Transaction", transaction)]["num_requests"] > 0, transaction
    expected = [s for plan in SEQUENCES[name].values() if plan for s in plan.calls()]
    recorded_apis = {f"{t} {n}" for (t, n) in stats  # Locust's row: type GET, name /path
                     if t not in ("Transaction", "Scheduled", "Script")} - {"POST /authn/login-with-expiry"}
    assert all(any(derived.api_matches(n, s) for s in expected) for n in recorded_apis), recorded_apis
    assert all(any(derived.api_matches(n, s) for n in recorded_apis) for s in expected)
    assert all(stats[(t, n)]["num_requests"] > 0 for (t, n) in stats)
    assert run.failures() == [], run.failures()
    assert all(entry["num_failures"] == 0 for entry in stats.values())


@pytest.mark.parametrize("name", list(RUNS))
def test_sends_the_ptf_sequence(runs, name):
    recorded = derived.transactions(calls_of(runs[name]))
    seen = {transaction for transaction, _ in recorded}
    assert seen == set(SEQUENCES[name])
    for transaction, calls in recorded:
        plan = SEQUENCES[name][transaction]
        problem = derived.mismatch(calls, plan) if plan else (None if not [c for c in calls if c["type"] != "Script"]
                                                               else f"calls of its own: {calls}")
        assert problem is None, f"{transaction}: {problem}"


def test_holds_never_request_an_instance_twice_for_one_requester(runs, seeded):
    """Each requester/instance pair is used once: the request table has no pair twice, and holds (at least:
    a request cut short by the end of a run may have been stored) every request the three runs placed."""
    requesters = [r["id"] for r in seeded.pools["holds"]["requesters"]]
    with psycopg.connect(seeded.dsn) as conn:
        pairs = conn.execute(
            f"SELECT jsonb->>'requesterId', jsonb->>'instanceId', count(*) FROM {seeded.tenant}_mod_circulation_storage.request "
            "WHERE jsonb->>'requesterId' = ANY(%s) GROUP BY 1, 2", (requesters,)).fetchall()
    placed = sum(runs[name].count("Transaction", "Place hold") for name in ("holds-patron", "holds-instance", "holds-item"))
    assert placed > 0
    assert [p for p in pairs if p[2] > 1] == []
    assert sum(p[2] for p in pairs) >= placed


def test_renewals_policy_outlasts_a_30_minute_2_user_run():
    """The renewals dataset's loan policy (datasets/renewals.toml gives the numbers): renewable from the current
    due date, so every renewal moves the due date, and at least 4 x the 24,100 renewals per loan that two users
    back to back on one borrower made in 30 minutes on the sandbox."""
    policy = dataset.load("renewals").used("loan_policy")[0]
    renewals = policy["renewalsPolicy"]
    assert policy["renewable"] and renewals["renewFromId"] == "CURRENT_DUE_DATE"
    assert renewals["numberAllowed"] >= 4 * 24_100


def test_check_ins_of_seeded_loans_are_overdue_and_charged_their_policy_fine(runs, seeded):
    """cico's loans are seeded overdue, as PTF's were: each seeded loan checked in (by this module's run or
    test_ptf_plans.py's, on the same tenant) has the one overdue fine its policy gives for the days it was late,
    and the check-in page of this run read those accounts (`GET /accounts?query=loanId=="..."`)."""
    loan_ids = dataset.load("cico").ids.of("loan")
    tenant = seeded.tenant
    with psycopg.connect(seeded.dsn) as conn:
        closed = conn.execute(
            f"SELECT l.id::text, (l.jsonb->>'dueDate')::timestamptz, (l.jsonb->>'returnDate')::timestamptz, p.jsonb "
            f"FROM {tenant}_mod_circulation_storage.loan l JOIN {tenant}_mod_feesfines.overdue_fine_policy p "
            "ON p.id = (l.jsonb->>'overdueFinePolicyId')::uuid "
            "WHERE l.id BETWEEN %s AND %s AND l.jsonb->'status'->>'name' = 'Closed'", (loan_ids.low, loan_ids.high)).fetchall()
        charged = dict(conn.execute(
            f"SELECT jsonb->>'loanId', array_agg((jsonb->>'amount')::float) FROM {tenant}_mod_feesfines.accounts "
            "WHERE jsonb->>'feeFineType' = 'Overdue fine' GROUP BY 1").fetchall())
    assert closed
    for loan_id, due, returned, policy in closed:
        late = returned.replace(second=0, microsecond=0) - due.replace(second=0, microsecond=0)
        days = math.ceil(late / timedelta(days=1))
        assert days > 2000  # due in 2019-2020
        assert charged.get(loan_id) == [min(policy["overdueFine"]["quantity"] * days, policy["maxOverdueFine"])], loan_id
    read = {parse_qs(urlsplit(call["url"]).query).get("query", [""])[0]
            for call in calls_of(runs["check-in-check-out"]) if call["name"] == "GET /accounts"}
    assert {f'loanId=="{loan_id}"' for loan_id, *_ in closed} & read
