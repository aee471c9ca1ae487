"""Overdue fines over HTTP: a check-in (or renewal) of an overdue loan creates the account and action
mod-circulation creates, for the amount the loan's overdue fine policy gives. Expected amounts are worked out
here from the policy's figures and the dates, with round offsets so that there is one obvious answer."""

from __future__ import annotations

import math
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from tests.sandbox.inventory_data import CIRC_DESK_1, OVERDUE_POLICY, Api, unique

MAIN_CIRC = "8166df0e-36be-4bf8-8cb7-97b252d9989d"  # the fee/fine owner of every sandbox desk
OVERDUE_FINE_TYPE = "9523cb96-e752-40c2-89da-60f3961a488d"  # mod-feesfines' automatic "Overdue fine"


def _at(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(second=0, microsecond=0)


def _lent(api: Api, **loan_fields) -> tuple[dict, dict, dict]:
    """(user, item, stored loan): an item checked out, its loan then changed through loan storage."""
    user, item = api.user(), api.item()
    r = api.check_out(item, user)
    assert r.status_code == 201, r.text
    loan = api.get(f"/loan-storage/loans/{r.json()['id']}").json()
    if loan_fields:
        loan = {**loan, **loan_fields}
        assert api.put(f"/loan-storage/loans/{loan['id']}", loan).status_code == 204
    return user, item, loan


def _check_in(api: Api, item: dict, when: datetime) -> dict:
    r = api.post("/circulation/check-in-by-barcode", {"servicePointId": CIRC_DESK_1, "checkInDate": _at(when),
                                                      "itemBarcode": item["barcode"], "id": str(uuid.uuid4())})
    assert r.status_code == 200, r.text
    return r.json()


def _accounts(api: Api, loan_id: str) -> list[dict]:
    return api.get("/accounts", query=f'loanId=="{loan_id}"').json()["accounts"]  # the check-in page's query


def _overdue_policy(api: Api, **fields) -> dict:
    body = {"name": unique("Test overdue fine policy "), "countClosed": True, "forgiveOverdueFine": False,
            "gracePeriodRecall": False, **fields}
    return api.created("/overdue-fines-policies", body)


@pytest.mark.parametrize("late, days_charged", [
    (timedelta(minutes=10), 1),
    (timedelta(days=2, hours=3, minutes=10), 3),  # a started day counts whole
    (timedelta(days=12), 10),  # 12 days' fine is over the 50.00 cap: 10 days' worth
])
def test_check_in_of_an_overdue_loan_charges_the_policy_fine(api, late, days_charged):
    policy = api.get(f"/overdue-fines-policies/{OVERDUE_POLICY}").json()
    assert (policy["overdueFine"], policy["maxOverdueFine"]) == ({"quantity": 5.0, "intervalId": "day"}, 50.0)
    returned = _now()
    user, item, loan = _lent(api, dueDate=_at(returned - late))
    assert loan["overdueFinePolicyId"] == OVERDUE_POLICY
    _check_in(api, item, returned)
    expected = min(policy["overdueFine"]["quantity"] * math.ceil(late / timedelta(days=1)), policy["maxOverdueFine"])
    assert expected == 5.0 * days_charged
    [account] = _accounts(api, loan["id"])
    assert (account["amount"], account["remaining"]) == (expected, expected)
    assert (account["feeFineType"], account["feeFineId"]) == ("Overdue fine", OVERDUE_FINE_TYPE)
    assert (account["ownerId"], account["feeFineOwner"]) == (MAIN_CIRC, "Main Circ")
    assert (account["status"], account["paymentStatus"]) == ({"name": "Open"}, {"name": "Outstanding"})
    assert (account["userId"], account["itemId"], account["barcode"]) == (user["id"], item["id"], item["barcode"])
    assert account["title"] and account["location"] == "Main Library" and account["materialType"] == "book"
    assert account["contributors"] == [{"name": "Author, An"}]
    assert account["dueDate"] == loan["dueDate"] and account["returnedDate"] == _at(returned)
    assert (account["loanPolicyId"], account["overdueFinePolicyId"], account["lostItemFeePolicyId"]) == (
        loan["loanPolicyId"], OVERDUE_POLICY, loan["lostItemPolicyId"])
    [action] = api.get("/feefineactions", query=f"accountId=={account['id']}").json()["feefineactions"]
    assert (action["typeAction"], action["amountAction"], action["balance"]) == ("Overdue fine", expected, expected)
    assert (action["userId"], action["createdAt"], action["notify"]) == (user["id"], CIRC_DESK_1, False)
    admin = api.get("/bl-users/_self").json()["user"]["personal"]
    assert action["source"] == f"{admin['lastName']}, {admin['firstName']}"
    # the check-out page's query for the patron's open fees/fines, and the loan's remaining amount
    open_for_user = api.get("/accounts", query=f"(userId=={user['id']} and status.name<>Closed)").json()
    assert [a["id"] for a in open_for_user["accounts"]] == [account["id"]]
    assert api.get(f"/circulation/loans/{loan['id']}").json()["feesAndFines"] == {"amountRemainingToPay": expected}


def test_check_in_on_time_charges_nothing(api):
    returned = _now()
    _, item, loan = _lent(api, dueDate=_at(returned + timedelta(minutes=5)))
    _check_in(api, item, returned)
    assert _accounts(api, loan["id"]) == []


def test_grace_period_and_recall_fine(api):
    """Within the loan policy's grace period nothing is charged; a due date a recall shortened is charged by the
    policy's recall fine, and its grace period is skipped when the policy says gracePeriodRecall."""
    grace = api.loan_policy(loansPolicy={"gracePeriod": {"duration": 2, "intervalId": "Hours"}})
    hourly = _overdue_policy(api, overdueFine={"quantity": 2.0, "intervalId": "hour"}, maxOverdueFine=0.0,
                             overdueRecallFine={"quantity": 3.0, "intervalId": "hour"}, maxOverdueRecallFine=0.0)
    ignore_grace = _overdue_policy(api, overdueRecallFine={"quantity": 3.0, "intervalId": "hour"},
                                   maxOverdueRecallFine=0.0, gracePeriodRecall=True)
    returned = _now()
    cases = [  # (late, recalled, overdue fine policy, amount): maxima of 0 cap nothing
        (timedelta(hours=1, minutes=50), False, hourly, None),  # within the grace period
        (timedelta(hours=2, minutes=10), False, hourly, 2.0 * 3),  # past it: every started hour
        (timedelta(hours=1, minutes=50), True, hourly, None),  # a recall keeps the grace period ...
        (timedelta(hours=1, minutes=50), True, ignore_grace, 3.0 * 2),  # ... unless the policy skips it
    ]
    for late, recalled, policy, amount in cases:
        _, item, loan = _lent(api, dueDate=_at(returned - late), loanPolicyId=grace["id"], overdueFinePolicyId=policy["id"],
                              **({"dueDateChangedByRecall": True} if recalled else {}))
        _check_in(api, item, returned)
        assert [a["amount"] for a in _accounts(api, loan["id"])] == ([amount] if amount else []), (late, recalled, policy["name"])


def test_renewal_of_an_overdue_loan_is_charged_unless_the_policy_forgives(api):
    late = timedelta(days=3, hours=12)
    _, item, forgiven = _lent(api, dueDate=_at(_now() - late))
    user = api.get(f"/users/{forgiven['userId']}").json()
    assert api.renew(item, user).status_code == 200
    assert _accounts(api, forgiven["id"]) == []  # Faculty standard forgives fines on renewal
    daily = _overdue_policy(api, overdueFine={"quantity": 0.25, "intervalId": "day"}, maxOverdueFine=10.0)
    _, item, charged = _lent(api, dueDate=_at(_now() - late), overdueFinePolicyId=daily["id"])
    user = api.get(f"/users/{charged['userId']}").json()
    assert api.renew(item, user).status_code == 200
    [account] = _accounts(api, charged["id"])
    assert account["amount"] == 0.25 * 4 and "returnedDate" not in account
    [action] = api.get("/feefineactions", query=f"accountId=={account['id']}").json()["feefineactions"]
    assert "createdAt" not in action  # a renewal happens at no service point


def test_open_hours_only_and_the_owner_of_the_desk(api):
    """countClosed false: only the hours the item location's primary desk is open count, by its calendar; an
    item whose desk no fee/fine owner serves is charged nothing."""
    desk = api.created("/service-points", {"name": unique("Desk "), "code": unique("d"), "discoveryDisplayName": "Desk",
                                           "pickupLocation": True, "holdShelfExpiryPeriod": {"duration": 1, "intervalId": "Weeks"}})
    main = api.get("/locations", query='name=="Main Library"').json()["locations"][0]
    location = api.created("/locations", {**{k: main[k] for k in ("institutionId", "campusId", "libraryId")},
                                          "name": unique("Shelf "), "code": unique("s"), "isActive": True,
                                          "primaryServicePoint": desk["id"], "servicePointIds": [desk["id"]]})
    hourly = _overdue_policy(api, countClosed=False, overdueFine={"quantity": 1.0, "intervalId": "hour"}, maxOverdueFine=0.0)
    # open 09:00-17:00 on weekdays; closed all of one exceptional day
    returned = datetime(2031, 3, 12, 11, 30, tzinfo=timezone.utc)  # a Wednesday
    due = datetime(2031, 3, 10, 15, 0, tzinfo=timezone.utc)  # Monday
    calendar = {"name": unique("Hours "), "startDate": "2031-03-01", "endDate": "2031-03-31", "assignments": [desk["id"]],
                "normalHours": [{"startDay": day, "startTime": "09:00", "endDay": day, "endTime": "17:00"}
                                for day in ("MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY")],
                "exceptions": [{"name": "Closed", "startDate": "2031-03-11", "endDate": "2031-03-11", "openings": []}]}
    assert api.post("/calendar/calendars", calendar).status_code == 201

    def charged() -> list[float]:
        user = api.user()
        item = api.item(location=location["id"])
        assert api.check_out(item, user, desk["id"]).status_code == 201
        loan = api.get("/circulation/loans", query=f"itemId=={item['id']}").json()["loans"][0]
        stored = api.get(f"/loan-storage/loans/{loan['id']}").json()
        stored.update(dueDate=_at(due), overdueFinePolicyId=hourly["id"])
        assert api.put(f"/loan-storage/loans/{loan['id']}", stored).status_code == 204
        _check_in(api, item, returned)
        return [a["amount"] for a in _accounts(api, loan["id"])]

    assert charged() == []  # no owner serves the new desk
    owner = api.created("/owners", {"owner": unique("Owner "), "servicePointOwner": [{"value": desk["id"], "label": desk["name"]}]})
    # open minutes: Monday 15:00-17:00, Tuesday closed by the exception, Wednesday 09:00-11:30: 4.5 h, 5 started hours
    assert charged() == [1.0 * math.ceil((120 + 150) / 60)]
    assert api.get("/accounts", query=f"ownerId=={owner['id']}").json()["totalRecords"] == 1
