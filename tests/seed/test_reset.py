"""`folioperf reset`: after a burst of check-outs, check-ins and renewals over HTTP, the dataset is back
to its seeded state — item statuses, open loans, renewal counts — and other datasets are untouched."""

from __future__ import annotations

from datetime import datetime, timezone

from .conftest import SCALES, run


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _pools(target, workflow: str, tmp_path) -> dict:
    import json

    path = tmp_path / f"{workflow}.json"
    code, _, err = run("pools", "--workflow", workflow, "--db", target.dsn, "--tenant", target.tenant, "-o", str(path))
    assert code == 0, err
    return json.loads(path.read_text())["pools"]


def _status(target, item_id: str) -> str:
    return target.get(f"/inventory/items/{item_id}")["status"]["name"]


def _open_loans(target, query: str) -> dict:
    return target.get("/circulation/loans", query=f"({query}) and status.name==Open", limit=1000)


def test_reset_after_a_check_out_burst_restores_item_statuses_and_loans(target, seeded, tmp_path):
    cico = seeded("cico")
    holds = seeded("holds")
    c = cico.scaled(SCALES["cico"])
    pools = _pools(target, "check-in-check-out", tmp_path)
    sp = pools["service_points"][0]["id"]
    borrowed = list(zip(pools["users"][:6], pools["available_items"][:6]))
    for user, item in borrowed:
        r = target.post("/circulation/check-out-by-barcode",
                        {"itemBarcode": item["barcode"], "userBarcode": user["barcode"], "servicePointId": sp})
        assert r.status_code == 201, r.text
    returned = pools["checked_out_items"][:3]
    for item in returned:
        r = target.post("/circulation/check-in-by-barcode",
                        {"itemBarcode": item["barcode"], "servicePointId": sp, "checkInDate": _now()})
        assert r.status_code == 200, r.text
    # a loan of another dataset made during the same run
    holds_pools = _pools(target, "holds", tmp_path)
    other_user, other_item = holds_pools["requesters"][0], holds_pools["items"][0]
    r = target.post("/circulation/check-out-by-barcode",
                    {"itemBarcode": other_item["barcode"], "userBarcode": other_user["barcode"], "servicePointId": sp})
    assert r.status_code == 201, r.text
    assert [_status(target, item["id"]) for _, item in borrowed] == ["Checked out"] * 6
    assert [_status(target, item["id"]) for item in returned] == ["Available"] * 3
    ours = f'userId=="{cico.ids.of("user").prefix}*"'
    assert _open_loans(target, ours)["totalRecords"] == c.loans + 6 - 3

    code, out, err = run("reset", "cico", "--db", target.dsn, "--tenant", target.tenant)
    assert code == 0, err
    assert "reset cico (scale 0.01)" in out

    assert [_status(target, item["id"]) for _, item in borrowed] == ["Available"] * 6
    assert [_status(target, item["id"]) for item in returned] == ["Checked out"] * 3
    loans = _open_loans(target, ours)
    assert loans["totalRecords"] == c.loans
    assert {loan["id"] for loan in loans["loans"]} == {cico.ids.of("loan")(j) for j in range(c.loans)}
    for b in range(c.borrowers):
        borrower = cico.ids.of("user")(c.users + b)
        assert _open_loans(target, f"userId=={borrower}")["totalRecords"] == c.loans_per_user[0]
    after = _pools(target, "check-in-check-out", tmp_path)
    assert after == pools
    # reset is scoped to the dataset: the other dataset's loan is still open
    assert _open_loans(target, f"itemId=={other_item['id']}")["totalRecords"] == 1
    assert _status(target, other_item["id"]) == "Checked out"
    assert run("reset", "holds", "--db", target.dsn, "--tenant", target.tenant)[0] == 0
    assert _status(target, other_item["id"]) == "Available"
    assert _open_loans(target, f'userId=="{holds.ids.of("user").prefix}*"')["totalRecords"] == holds.scaled(SCALES["holds"]).loans
    # the items of its seeded Page requests stay Paged, for the pick slips that list them
    h = holds.scaled(SCALES["holds"])
    assert [_status(target, holds.ids.of("item")(h.loans + p)) for p in range(h.page_requests)] == ["Paged"] * h.page_requests


def test_reset_after_renewals_gives_the_seeded_due_dates_back(target, seeded, tmp_path):
    renewals = seeded("renewals")
    user = _pools(target, "renew", tmp_path)["loan_users_10"][0]
    before = {loan["id"]: loan for loan in _open_loans(target, f"userId=={user['id']}")["loans"]}
    for loan in before.values():
        r = target.post("/circulation/renew-by-barcode", {"itemBarcode": loan["item"]["barcode"], "userBarcode": user["barcode"]})
        assert r.status_code == 200, r.text
    renewed = _open_loans(target, f"userId=={user['id']}")["loans"]
    assert {loan["renewalCount"] for loan in renewed} == {1}
    assert all(loan["dueDate"] > before[loan["id"]]["dueDate"] for loan in renewed)

    assert run("reset", "--workflow", "renew", "--db", target.dsn, "--tenant", target.tenant)[0] == 0
    after = _open_loans(target, f"userId=={user['id']}")["loans"]
    assert {loan["id"] for loan in after} == set(before) == {loan["id"] for loan in renewed}
    assert {loan["renewalCount"] for loan in after} == {0}
    assert {loan["action"] for loan in after} == {"checkedout"}
    assert all(loan["id"].startswith(renewals.ids.of("loan").prefix) for loan in after)


def test_reset_of_a_dataset_that_is_not_seeded_is_one_line(scratch_db):
    dsn = scratch_db()
    code, out, err = run("reset", "rih", "--db", dsn)
    assert code == 2
    assert err == "folioperf: error: dataset rih is not seeded in tenant diku; run `folioperf seed rih` first\n"
