"""Loan policy arithmetic (due dates for check-out, renewal and recall; mod-circulation
`domain/policy/LoanPolicy.java`, docs/folio.md §5.1 step 10, §5.3, §5.4), the policy storage endpoints, and
the circulation rules' endpoints (`/circulation/rules`, its policy lookups, `/circulation-rules-storage`).
A write through any of them makes this process reload its reference data (lookups.References).

Simplifications, on purpose: there is no calendar (mod-calendar), so closed-library due date management
is not applied; long-term periods (Days, Weeks, Months) end at 23:59:59 of the due day and short-term
ones (Minutes, Hours) at the exact time, as FOLIO does when the library is open; the tenant time zone is
UTC (the sandbox's `localeSettings`). A Rolling policy limited by a fixed schedule ignores the limit.
"""

from __future__ import annotations

import calendar
from datetime import datetime, timedelta

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from folioperf.sandbox import validation
from folioperf.sandbox.lookups import insert_row, parse_date
from folioperf.sandbox.rules import RulesError, parse
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.storage import Collection, register_collection
from folioperf.sandbox.web import UUID, HttpError, Request, Response, Router, error, json_response, no_content


class PolicyError(Exception):
    """A due date the policy cannot give; `entry` is the FOLIO error entry."""

    def __init__(self, entry: dict) -> None:
        super().__init__(entry["message"])
        self.entry = entry


def plus_months(start: datetime, months: int) -> datetime:
    """`start` that many calendar months later, on the month's last day when it is shorter (Java's plusMonths)."""
    month = start.month - 1 + months
    year, month = start.year + month // 12, month % 12 + 1
    return start.replace(year=year, month=month, day=min(start.day, calendar.monthrange(year, month)[1]))


def add_period(start: datetime, period: dict | None) -> datetime:
    """`start` plus a FOLIO period `{duration, intervalId}`; long-term periods end at 23:59:59 that day."""
    duration = int((period or {}).get("duration") or 0)
    unit = (period or {}).get("intervalId") or "Days"
    if unit == "Minutes":
        return start + timedelta(minutes=duration)
    if unit == "Hours":
        return start + timedelta(hours=duration)
    if unit == "Months":
        end = plus_months(start, duration)
    else:
        end = start + timedelta(days=duration * (7 if unit == "Weeks" else 1))
    return end.replace(hour=23, minute=59, second=59, microsecond=0)


def policy_error(policy: dict, message: str, **extra: str | None) -> dict:
    """A renewal/loan-policy error: FOLIO adds loanPolicyId and loanPolicyName to its parameters."""
    return error(message, **extra, loanPolicyId=policy.get("id"), loanPolicyName=policy.get("name"))


def _fixed_due(policy: dict, schedules: dict[str, dict], schedule_id: str | None, on: datetime) -> datetime:
    schedule = schedules.get(schedule_id or "")
    for entry in (schedule or {}).get("schedules", ()):
        start, end, due = parse_date(entry.get("from")), parse_date(entry.get("to")), parse_date(entry.get("due"))
        if start and end and due and start <= on <= end:
            return due
    raise PolicyError(policy_error(
        policy, "Item can't be checked out as the loan date falls outside of the date ranges in the loan policy. "
        f"Please review {policy.get('name')} before retrying checking out"))


def check_out_due_date(policy: dict, loan_date: datetime, schedules: dict[str, dict]) -> datetime:
    loans = policy.get("loansPolicy") or {}
    if loans.get("profileId") == "Fixed":
        return _fixed_due(policy, schedules, loans.get("fixedDueDateScheduleId"), loan_date)
    return add_period(loan_date, loans.get("period"))


def renewal_due_date(policy: dict, loan: dict, now: datetime, schedules: dict[str, dict], hold_first: bool) -> datetime:
    """The proposed due date of a renewal (renewFromId CURRENT_DUE_DATE or SYSTEM_DATE)."""
    loans = policy.get("loansPolicy") or {}
    renewals = policy.get("renewalsPolicy") or {}
    if loans.get("profileId") == "Fixed":
        schedule = renewals.get("alternateFixedDueDateScheduleId") if renewals.get("differentPeriod") else None
        return _fixed_due(policy, schedules, schedule or loans.get("fixedDueDateScheduleId"), now)
    holds = ((policy.get("requestManagement") or {}).get("holds") or {})
    if hold_first and holds.get("alternateRenewalLoanPeriod"):
        period = holds["alternateRenewalLoanPeriod"]
    elif renewals.get("differentPeriod") and renewals.get("period"):
        period = renewals["period"]
    else:
        period = loans.get("period")
    base = parse_date(loan.get("dueDate")) if renewals.get("renewFromId") == "CURRENT_DUE_DATE" else now
    return add_period(base or now, period)


def at_renewal_limit(policy: dict, loan: dict) -> bool:
    renewals = policy.get("renewalsPolicy") or {}
    if renewals.get("unlimited"):
        return False
    return int(loan.get("renewalCount") or 0) >= int(renewals.get("numberAllowed") or 0)


def recall_due_date(policy: dict, loan: dict, now: datetime) -> datetime | None:
    """The shortened due date a Recall gives an open loan, or None when it keeps its due date: now plus the
    recall return interval, but not before the minimum guaranteed loan period has passed."""
    if loan.get("dueDateChangedByRecall"):
        return None
    recalls = ((policy.get("requestManagement") or {}).get("recalls") or {})
    current = parse_date(loan.get("dueDate"))
    if not recalls.get("recallReturnInterval") or current is None:
        return None
    proposed = add_period(now, recalls["recallReturnInterval"])
    if recalls.get("minimumGuaranteedLoanPeriod"):
        minimum = add_period(parse_date(loan.get("loanDate")) or now, recalls["minimumGuaranteedLoanPeriod"])
        proposed = max(proposed, minimum)
    return proposed if proposed < current else None


def _fresh(req: Request, conn: psycopg.Connection, record: dict, stored: dict | None) -> None:
    """This process forgets its cached policies on an edit (other processes within lookups.REFERENCE_TTL)."""
    req.sandbox.references.invalidate(req.tenant)


CIRC_STORAGE = "mod-circulation-storage"
COLLECTIONS: tuple[Collection, ...] = (
    Collection("/loan-policy-storage/loan-policies", "loan_policy", "loanPolicies", CIRC_STORAGE,
               "circulation-storage.loan-policies", prepare=_fresh),
    Collection("/request-policy-storage/request-policies", "request_policy", "requestPolicies", CIRC_STORAGE,
               "circulation-storage.request-policies", prepare=_fresh),
    Collection("/patron-notice-policy-storage/patron-notice-policies", "patron_notice_policy", "patronNoticePolicies",
               CIRC_STORAGE, "circulation-storage.patron-notice-policies", prepare=_fresh),
    Collection("/fixed-due-date-schedule-storage/fixed-due-date-schedules", "fixed_due_date_schedule",
               "fixedDueDateSchedules", CIRC_STORAGE, "circulation-storage.fixed-due-date-schedules", prepare=_fresh),
    Collection("/overdue-fines-policies", "overdue_fine_policy", "overdueFinePolicies", "mod-feesfines",
               "overdue-fines-policies", prepare=_fresh),
    Collection("/lost-item-fees-policies", "lost_item_fee_policy", "lostItemFeePolicies", "mod-feesfines",
               "lost-item-fees-policies", prepare=_fresh),
)


# -- circulation rules ---------------------------------------------------------------------------------
_LOOKUPS = {  # path suffix -> (policy type letter, response key)
    "loan-policy": ("l", "loanPolicyId"),
    "request-policy": ("r", "requestPolicyId"),
    "notice-policy": ("n", "noticePolicyId"),
    "overdue-fine-policy": ("o", "overdueFinePolicyId"),
    "lost-item-policy": ("i", "lostItemPolicyId"),
}
_PARAMS = ("item_type_id", "loan_type_id", "patron_type_id", "location_id")


def _get_rules(req: Request) -> Response:
    with req.sandbox.pool.connection() as conn:
        record = req.sandbox.references.get(conn, req.tenant).rules_record
    return json_response({"id": record.get("id"), "rulesAsText": record.get("rulesAsText", "")})


def _put_rules(req: Request) -> Response:
    """Store a new rules text after checking it parses (422 `{message, line, column}` otherwise);
    mod-circulation-storage's own endpoint first checks the body against its schema."""
    body = req.json()
    if req.route is not None and req.route.module == "mod-circulation-storage":
        body = validation.validate("mod-circulation-storage/circulation_rules", body)
    text = body.get("rulesAsText")
    if not isinstance(text, str):
        return json_response({"message": "rulesAsText is required", "line": 1, "column": 1}, 422)
    try:
        parse(text)
    except RulesError as exc:
        return json_response({"message": exc.message, "line": exc.line, "column": exc.column}, 422)
    rules = BY_NAME["circulation_rules"]
    table = rules.ident(req.tenant)
    with req.sandbox.pool.connection() as conn:
        with conn.transaction():
            row = conn.execute(sql.SQL("SELECT id FROM {} LIMIT 1 FOR UPDATE").format(table)).fetchone()
            if row is None:
                insert_row(conn, rules, req.tenant, {"rulesAsText": text})
            else:
                conn.execute(sql.SQL("UPDATE {} SET jsonb = jsonb || %s WHERE id = %s").format(table),
                             (Jsonb({"rulesAsText": text}), row[0]))
    req.sandbox.references.invalidate(req.tenant)
    return no_content()


def _lookup(letter: str, key: str):
    def handler(req: Request) -> Response:
        for name in _PARAMS:
            value = req.arg(name)
            if not value:
                raise HttpError(400, f"required query parameter missing: {name}")
            if not UUID.match(value):
                raise HttpError(400, f"invalid {name}: {value} is not a UUID")
        with req.sandbox.pool.connection() as conn:
            ref = req.sandbox.references.get(conn, req.tenant, need=("locations", req.arg("location_id") or ""))
        location = ref.locations.get(req.arg("location_id") or "")
        if location is None:
            raise HttpError(404, f"Location does not exist: {req.arg('location_id')}")
        facts = {"m": req.arg("item_type_id"), "t": req.arg("loan_type_id"), "g": req.arg("patron_type_id"),
                 "s": req.arg("location_id"), "c": location.get("libraryId"), "b": location.get("campusId"),
                 "a": location.get("institutionId")}
        policies, rule = ref.rules.choose(facts)
        kinds = rule.kinds() if rule else set()
        return json_response({key: policies.get(letter), "appliedRuleConditions": {
            "materialTypeMatch": "m" in kinds, "loanTypeMatch": "t" in kinds, "patronGroupMatch": "g" in kinds}})

    return handler


def register(router: Router) -> None:
    router.add("GET", "/circulation/rules", _get_rules, "mod-circulation", "circulation.rules.get")
    router.add("PUT", "/circulation/rules", _put_rules, "mod-circulation", "circulation.rules.put")
    router.add("GET", "/circulation-rules-storage", _get_rules, "mod-circulation-storage", "circulation-storage.circulation-rules.get")
    router.add("PUT", "/circulation-rules-storage", _put_rules, "mod-circulation-storage", "circulation-storage.circulation-rules.put")
    for suffix, (letter, key) in _LOOKUPS.items():
        router.add("GET", f"/circulation/rules/{suffix}", _lookup(letter, key), "mod-circulation", f"circulation.rules.{suffix}.get")
    for c in COLLECTIONS:
        register_collection(router, c)
