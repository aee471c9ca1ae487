"""Seeded overdue loans in the sandbox: a check-in of one charges the fine its overdue fine policy gives, as
PTF's check-ins of its 2019-2020 loans did; `folioperf reset` puts the loan back, dated the same, and takes the
fine away; a dataset whose file says `loans = "current"` gets loans due in the future, and the marker makes
`seed` say when the tenant's loans are not dated as the file says."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg

from folioperf.seed import dataset

from .conftest import SCALES, run

CIRC_DESK_1 = "3a40852d-49fd-4df2-a1f9-6e2641a6e91f"  # the desk of cico's location, served by the owner "Main Circ"


def _seeded_loan(target, ds: dataset.Dataset, j: int = 0) -> dict:
    return target.get(f"/circulation/loans/{ds.ids.of('loan')(j)}")


def _check_in(target, barcode: str, when: datetime) -> dict:
    r = target.post("/circulation/check-in-by-barcode", {"itemBarcode": barcode, "servicePointId": CIRC_DESK_1,
                                                          "checkInDate": when.strftime("%Y-%m-%dT%H:%M:%S.000Z")})
    assert r.status_code == 200, r.text
    return r.json()


def test_check_in_of_a_seeded_loan_is_overdue_and_charged_until_reset(target, seeded):
    cico = seeded("cico")
    loan = _seeded_loan(target, cico)
    due = datetime.fromisoformat(loan["dueDate"])
    assert due < datetime(2020, 5, 13, tzinfo=timezone.utc)
    policy = target.get(f"/overdue-fines-policies/{loan['overdueFinePolicyId']}")
    assert policy["name"] == "Faculty standard"
    returned = datetime.now(timezone.utc).replace(microsecond=0)
    try:
        body = _check_in(target, loan["item"]["barcode"], returned)
        assert body["loan"]["id"] == loan["id"] and body["item"]["status"]["name"] == "Available"
        # the policy's fine for the whole days the loan is late, at most its maximum
        days = math.ceil((returned - due) / timedelta(days=1))
        fine = min(policy["overdueFine"]["quantity"] * days, policy["maxOverdueFine"])
        assert days > 2000 and fine == 50.0
        accounts = target.get("/accounts", query=f'loanId=="{loan["id"]}"')["accounts"]
        assert [(a["amount"], a["feeFineType"], a["feeFineOwner"], a["userId"]) for a in accounts] == [
            (fine, "Overdue fine", "Main Circ", loan["userId"])]
        assert target.get("/feefineactions", query=f"accountId=={accounts[0]['id']}")["totalRecords"] == 1
    finally:
        code, _, err = run("reset", "cico", "--db", target.dsn, "--tenant", target.tenant)
        assert code == 0, err
    # the same loan, open again and as overdue, and no fine
    again = _seeded_loan(target, cico)
    assert (again["status"], again["dueDate"], again["loanDate"]) == ({"name": "Open"}, loan["dueDate"], loan["loanDate"])
    assert again["item"]["status"]["name"] == "Checked out"
    assert target.get("/accounts", query=f'loanId=="{loan["id"]}"')["totalRecords"] == 0
    assert target.get("/feefineactions", query=f"userId=={loan['userId']}")["totalRecords"] == 0


def test_renewals_are_overdue_and_renewed_from_their_due_date_without_a_fine(target, seeded):
    renewals = seeded("renewals")
    loan = _seeded_loan(target, renewals)
    user = target.get(f"/users/{loan['userId']}")
    try:
        r = target.post("/circulation/renew-by-barcode", {"itemBarcode": loan["item"]["barcode"], "userBarcode": user["barcode"]})
        assert r.status_code == 200, r.text
        renewed = datetime.fromisoformat(r.json()["dueDate"])
        assert renewed.date() == (datetime.fromisoformat(loan["dueDate"]) + timedelta(weeks=3)).date()
        assert renewed < datetime.now(timezone.utc)  # still overdue
        assert target.get("/accounts", query=f'loanId=="{loan["id"]}"')["totalRecords"] == 0  # the policy forgives
    finally:
        assert run("reset", "renewals", "--db", target.dsn, "--tenant", target.tenant)[0] == 0


def test_current_loans_on_request_and_the_marker_says_how_loans_were_dated(scratch_db, tmp_path):
    """A cico file with `loans = "current"`, seeded where cico was seeded overdue: `seed` refuses and names the
    change, `reset` re-loads the loans as the file says (due in the future: a check-in charges nothing)."""
    dsn = scratch_db()
    scale = str(SCALES["cico"])
    code, out, _ = run("seed", "cico", "--db", dsn, "--tenant", "diku", "--scale", scale)
    assert code == 0 and "50 loans, overdue as PTF's were: due between 12 May 2019 and 12 May 2020" in out
    current = tmp_path / "cico.toml"
    current.write_text(Path(dataset.locate("cico")).read_text().replace('\nloans = "overdue"', '\nloans = "current"'))
    code, _, err = run("seed", str(current), "--db", dsn, "--tenant", "diku", "--scale", scale)
    assert code == 2
    assert err.strip().endswith("was seeded with overdue loans, but its file now says loans = 'current'; "
                                "`folioperf reset cico` re-loads them so (or pass --replace)"), err
    code, out, err = run("reset", str(current), "--db", dsn, "--tenant", "diku")
    assert code == 0 and "50 loans, current: lent in the two weeks before" in out, err
    ds = dataset.load(str(current))
    with psycopg.connect(dsn) as conn:
        dues = [r[0] for r in conn.execute("SELECT (jsonb->>'dueDate')::timestamptz FROM diku_mod_circulation_storage.loan "
                                           "WHERE id BETWEEN %s AND %s", (ds.ids.of("loan").low, ds.ids.of("loan").high))]
    assert dues and min(dues) > datetime.now(timezone.utc)
    assert run("seed", str(current), "--db", dsn, "--tenant", "diku", "--scale", scale)[0] == 0  # as the file says now
    code, _, err = run("seed", "cico", "--db", dsn, "--tenant", "diku", "--scale", scale)
    assert code == 2 and "was seeded with current loans, but its file now says loans = 'overdue'" in err


def test_seeding_overdue_loans_where_no_fee_fine_owner_serves_the_desk_says_so(scratch_db):
    dsn = scratch_db()
    with psycopg.connect(dsn) as conn:
        conn.execute("DELETE FROM diku_mod_feesfines.owners")
    code, out, err = run("seed", "cico", "--db", dsn, "--tenant", "diku", "--scale", str(SCALES["cico"]))
    assert code == 0, err
    assert "no fee/fine owner of tenant diku serves 'Circ Desk 1': check-ins of the dataset's overdue loans charge no fines" in out + err
