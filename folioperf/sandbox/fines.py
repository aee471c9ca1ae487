"""Overdue fines as mod-circulation charges them at check-in and renewal (folio-org/mod-circulation @196c4da:
`domain/OverdueFineService.java`, `domain/OverduePeriodCalculatorService.java`, `domain/policy/OverdueFinePolicy.java`,
`services/FeeFineFacade.java`, `domain/representations/StoredAccount.java`, `StoredFeeFineAction.java`), and the
mod-feesfines storage they write: `/accounts` (pages.py serves it), `/feefineactions` and `/owners`.

A loan returned (or renewed) after its due date is charged by its overdue fine policy: the minutes overdue —
from the due date to the return date, counting only the hours the item location's primary service point is
open when the policy does not `countClosed` (its calendar, calendars.py) — are zero within the loan policy's
grace period (ignored for a recall's due date when the policy says `gracePeriodRecall`), then
`quantity × ⌈minutes / interval⌉`, capped by `maxOverdueFine` when that is above 0; a due date shortened by a
recall uses the recall quantity, interval and cap. A renewal charges nothing when the policy forgives
(`forgiveOverdueFine`); a lost item returned is charged only when its lost item policy charges overdue fines
(`lostItemReturned` "Charge") and its refund period has not passed. The account goes to the fee/fine owner
serving the item location's primary service point, with mod-feesfines' automatic fee/fine type "Overdue fine"
(populate-feefines.sql); without either nothing is charged, as in FOLIO. The account, its "Overdue fine"
action and the deletion of the loan's overdue notices are written in the caller's transaction (FOLIO makes
them separate calls), each a trace line of the call mod-circulation makes. Not simulated: the fee/fine
notices the patron notice policy would schedule, and mod-feesfines' balance events to mod-patron-blocks (the
sandbox computes patron blocks from the accounts table, blocks.py).
"""

from __future__ import annotations

import math
import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Callable

import psycopg
from psycopg import sql

from folioperf.sandbox import calendars
from folioperf.sandbox.lookups import (
    Reference,
    References,
    insert_row,
    iso,
    item_location_id,
    minutes_between,
    now,
    parse_date,
    user_by_id,
)
from folioperf.sandbox.policies import plus_months
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.storage import Collection, register_collection
from folioperf.sandbox.trace import calls
from folioperf.sandbox.web import Router

MODULE = "mod-feesfines"
OVERDUE_FINE = "Overdue fine"  # FeeFine.OVERDUE_FINE_TYPE
ACCOUNTS, FEEFINES, ACTIONS, OWNERS = BY_NAME["accounts"], BY_NAME["feefines"], BY_NAME["feefineactions"], BY_NAME["owners"]
SCHEDULED_NOTICE = BY_NAME["scheduled_notice"]
# OverdueFineInterval: the minutes of an overdue fine policy's intervalId
INTERVAL_MINUTES = {"minute": 1, "hour": 60, "day": 1440, "week": 10080, "month": 44640, "year": 525600}
# Period.toMinutes: a loan policy's grace period (a month is 31 days)
PERIOD_MINUTES = {"Minutes": 1, "Hours": 60, "Days": 1440, "Weeks": 10080, "Months": 44640}
LOST = ("Declared lost", "Aged to lost")  # ItemStatus.isLostNotResolved


def fine_amount(policy: dict, minutes: int, recalled: bool) -> Decimal:
    """OverdueFineService.calculateOverdueFine: the policy's (or its recall) quantity per started interval,
    capped when the cap is above 0; nothing when the policy lacks the quantity, interval or cap."""
    fine, cap = ("overdueRecallFine", "maxOverdueRecallFine") if recalled else ("overdueFine", "maxOverdueFine")
    quantity, interval = (policy.get(fine) or {}).get("quantity"), (policy.get(fine) or {}).get("intervalId")
    if minutes <= 0 or quantity is None or interval not in INTERVAL_MINUTES or policy.get(cap) is None:
        return Decimal(0)
    amount = Decimal(str(quantity)) * math.ceil(minutes / INTERVAL_MINUTES[interval])
    limit = Decimal(str(policy[cap]))
    return min(amount, limit) if limit > 0 else amount


def overdue_minutes(conn: psycopg.Connection, tenant: str, policy: dict, loan_policy: dict, loan: dict, due: datetime,
                    returned: datetime, primary_service_point: str | None) -> int:
    """OverduePeriodCalculatorService.getMinutes: minutes overdue (open ones only unless `countClosed`), zero
    within the loan policy's grace period unless that is ignored for a recall."""
    if not due < returned:
        return 0
    if policy.get("countClosed") or primary_service_point is None:
        minutes = minutes_between(due, returned)
    else:
        minutes = calendars.open_minutes(conn, tenant, primary_service_point, due, returned)
    if loan.get("dueDateChangedByRecall") and policy.get("gracePeriodRecall"):
        return minutes
    grace = ((loan_policy.get("loansPolicy") or {}).get("gracePeriod") or {})
    grace_minutes = int(grace.get("duration") or 0) * PERIOD_MINUTES.get(grace.get("intervalId") or "", 0)
    return minutes if minutes > grace_minutes else 0


def _period_after(start: datetime, period: dict) -> datetime:
    """Period.plusDate."""
    duration, unit = int(period.get("duration") or 0), period.get("intervalId")
    if unit == "Months":
        return plus_months(start, duration)
    return start + timedelta(minutes=duration * PERIOD_MINUTES.get(unit or "Minutes", 1))


def lost_item_charged(lost_policy: dict | None, loan: dict) -> bool:
    """OverdueFineService.shouldChargeOverdueFineForLostItem: the lost item policy charges overdue fines on
    return (`lostItemReturned` "Charge") and its refund period (`feesFinesShallRefunded`) has not passed since
    the item was lost."""
    if lost_policy is None or str(lost_policy.get("lostItemReturned") or "").lower() != "charge":
        return False
    period = lost_policy.get("feesFinesShallRefunded") or {}
    lost = [d for d in (parse_date(loan.get("declaredLostDate")),
                        parse_date((loan.get("agedToLostDelayedBilling") or {}).get("agedToLostDate"))) if d]
    if not int(period.get("duration") or 0) or not lost:
        return True
    return _period_after(max(lost), period) >= now()


@calls("GET", MODULE, "/overdue-fines-policies..")
def _policy(references: References, conn: psycopg.Connection, tenant: str, policy_id: str | None) -> dict | None:
    return references.get(conn, tenant, need=("overdue_policies", policy_id or "")).overdue_policies.get(policy_id or "")


@calls("GET", MODULE, "/feefines..")
def _overdue_fine_type(conn: psycopg.Connection, tenant: str) -> dict | None:
    """FeeFineRepository.getFeeFine("Overdue fine", automatic=true)."""
    row = conn.execute(sql.SQL("SELECT jsonb FROM {} WHERE lower(jsonb->>'feeFineType') = lower(%s) "
                               "AND jsonb->>'automatic' = 'true' LIMIT 1").format(FEEFINES.ident(tenant)),
                       (OVERDUE_FINE,)).fetchone()
    return row[0] if row else None


@calls("GET", MODULE, "/owners..")
def _owner(conn: psycopg.Connection, tenant: str, service_point: str) -> dict | None:
    """FeeFineOwnerRepository.findOwnerForServicePoint: the first owner whose servicePointOwner lists it."""
    row = conn.execute(sql.SQL("SELECT jsonb FROM {} WHERE jsonb->'servicePointOwner' @> %s::jsonb ORDER BY id LIMIT 1")
                       .format(OWNERS.ident(tenant)), (f'[{{"value": "{service_point}"}}]',)).fetchone()
    return row[0] if row else None


@calls("POST", MODULE, "/accounts")
def _create_account(conn: psycopg.Connection, tenant: str, account: dict) -> None:
    insert_row(conn, ACCOUNTS, tenant, account)


@calls("GET", "mod-inventory-storage", "/service-points..")
def _service_point(ref: Reference, service_point: str | None) -> str | None:
    """FeeFineFacade.populateCreatedAt: the action's service point, looked up by id (None when unknown)."""
    return service_point if service_point in ref.service_points else None


@calls("POST", MODULE, "/feefineactions")
def _create_action(conn: psycopg.Connection, tenant: str, action: dict) -> None:
    insert_row(conn, ACTIONS, tenant, action)


@calls("DELETE", "mod-circulation-storage", "/scheduled-notice-storage/scheduled-notices")
def _delete_overdue_notices(conn: psycopg.Connection, tenant: str, loan_id: str) -> None:
    """ScheduledNoticesRepository.deleteOverdueNotices: the loan's "Due date" notices sent upon or after it."""
    conn.execute(sql.SQL("DELETE FROM {} WHERE jsonb->>'loanId' = %s AND jsonb->>'triggeringEvent' = 'Due date' "
                         "AND jsonb->'noticeConfig'->>'timing' IN ('Upon At', 'After')").format(SCHEDULED_NOTICE.ident(tenant)),
                 (loan_id,))


def charge_overdue_fine(conn: psycopg.Connection, tenant: str, references: References, ref: Reference, loan: dict,
                        item: dict, *, returned: datetime | None, renewal: bool, actor: str | None,
                        loan_policy: Callable[[], dict], item_records: Callable[[], dict | None]) -> dict | None:
    """OverdueFineService.createOverdueFineIfNecessary for a loan that is overdue at `returned` (its return
    date; None for a renewal: now): the "Overdue fine" action it charged, or None. `item` is the stored item,
    its status the one before the check-in or renewal; `loan_policy` and `item_records` look up the loan
    policy and the item's title, call number, location and material type (calls of their own)."""
    due, when = parse_date(loan.get("dueDate")), returned or now()
    if due is None or not due < when:
        return None
    if (item.get("status") or {}).get("name") in LOST:
        lost_policy = references.get(conn, tenant, need=("lost_policies", loan.get("lostItemPolicyId") or ""))
        if not lost_item_charged(lost_policy.lost_policies.get(loan.get("lostItemPolicyId") or ""), loan):
            return None
    policy = _policy(references, conn, tenant, loan.get("overdueFinePolicyId"))
    if policy is None or (renewal and policy.get("forgiveOverdueFine")):  # an unknown policy charges nothing
        return None
    location = ref.locations.get(item_location_id(item) or "") or {}
    primary = location.get("primaryServicePoint")
    minutes = overdue_minutes(conn, tenant, policy, loan_policy(), loan, due, when, primary)
    amount = fine_amount(policy, minutes, bool(loan.get("dueDateChangedByRecall")))
    if amount <= 0:
        return None
    fee_fine = _overdue_fine_type(conn, tenant)
    records = item_records() if fee_fine is not None else None
    owner = _owner(conn, tenant, primary) if records is not None and primary else None
    action = None
    if fee_fine is not None and records is not None and owner is not None:
        action = _charge(conn, tenant, ref, loan, item, records, owner, fee_fine, amount, due, returned, actor)
    _delete_overdue_notices(conn, tenant, loan["id"])
    return action


def _charge(conn: psycopg.Connection, tenant: str, ref: Reference, loan: dict, item: dict, records: dict, owner: dict,
            fee_fine: dict, amount: Decimal, due: datetime, returned: datetime | None, actor: str | None) -> dict:
    """FeeFineFacade.createAccount: the account (StoredAccount) and its charge action (StoredFeeFineAction)."""
    value = float(amount.quantize(Decimal("0.01")))  # FeeAmount: two decimals, a JSON number
    account = {
        "id": str(uuid.uuid4()), "ownerId": owner["id"], "feeFineId": fee_fine["id"], "amount": value, "remaining": value,
        "feeFineType": fee_fine.get("feeFineType"), "feeFineOwner": owner.get("owner"), "title": records.get("title"),
        "barcode": item.get("barcode"), "callNumber": records.get("callNumber"),
        "location": (records.get("location") or {}).get("name"), "materialType": (records.get("materialType") or {}).get("name"),
        "materialTypeId": item.get("materialTypeId"), "loanId": loan["id"], "userId": loan.get("userId"), "itemId": item["id"],
        "dueDate": iso(due), "returnedDate": iso(returned) if returned else None,
        "paymentStatus": {"name": "Outstanding"}, "status": {"name": "Open"},
        "contributors": [{"name": c["name"]} for c in records.get("contributors") or () if c.get("name")],
        "loanPolicyId": loan.get("loanPolicyId"), "overdueFinePolicyId": loan.get("overdueFinePolicyId"),
        "lostItemFeePolicyId": loan.get("lostItemPolicyId"),
    }
    stamp = iso(now())
    metadata = {k: v for k, v in {"createdDate": stamp, "createdByUserId": actor, "updatedDate": stamp,
                                  "updatedByUserId": actor}.items() if v}  # RMB's, from the token's user
    account = {k: v for k, v in account.items() if v is not None}
    _create_account(conn, tenant, {**account, "metadata": metadata})
    staff = user_by_id(conn, tenant, actor) if actor else None
    desk = loan.get("checkinServicePointId")  # a renewal has none
    action = {
        "id": str(uuid.uuid4()), "userId": loan.get("userId"), "accountId": account["id"], "source": _source(staff),
        "createdAt": _service_point(ref, desk) if desk else None, "transactionInformation": "-",
        "balance": value, "amountAction": value, "notify": False, "typeAction": account["feeFineType"], "dateAction": stamp,
    }
    action = {k: v for k, v in action.items() if v is not None}
    _create_action(conn, tenant, {**action, "metadata": metadata})
    return action


def _source(user: dict | None) -> str | None:
    """User.getPersonalName: `lastName, firstName`, else the username."""
    if user is None:
        return None
    personal = user.get("personal") or {}
    if (personal.get("firstName") or "").strip() and (personal.get("lastName") or "").strip():
        return f"{personal['lastName']}, {personal['firstName']}"
    return user.get("username")


COLLECTIONS: tuple[Collection, ...] = (
    Collection("/owners", "owners", "owners", MODULE, "owners"),
    Collection("/feefineactions", "feefineactions", "feefineactions", MODULE, "feefineactions"),
)


def register(router: Router) -> None:
    for c in COLLECTIONS:
        register_collection(router, c)
