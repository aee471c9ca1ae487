"""Loan policy arithmetic (due dates for check-out, renewal and recall; mod-circulation
`domain/policy/LoanPolicy.java`, folio-api.md §5.1 step 10, §5.3, §5.4) and the policy storage endpoints.

Simplifications, on purpose: there is no calendar (mod-calendar), so closed-library due date management
is not applied; long-term periods (Days, Weeks, Months) end at 23:59:59 of the due day and short-term
ones (Minutes, Hours) at the exact time, as FOLIO does when the library is open; the tenant time zone is
UTC (the sandbox's `localeSettings`). A Rolling policy limited by a fixed schedule ignores the limit.
"""

from __future__ import annotations

import calendar
from datetime import datetime, timedelta

import psycopg

from folioperf.sandbox.lookups import invalidate, parse_date
from folioperf.sandbox.storage import Collection, register_collection
from folioperf.sandbox.web import Router, error

class PolicyError(Exception):
    """A due date the policy cannot give; `entry` is the FOLIO error entry."""

    def __init__(self, entry: dict) -> None:
        super().__init__(entry["message"])
        self.entry = entry


def add_period(start: datetime, period: dict | None) -> datetime:
    """`start` plus a FOLIO period `{duration, intervalId}`; long-term periods end at 23:59:59 that day."""
    duration = int((period or {}).get("duration") or 0)
    unit = (period or {}).get("intervalId") or "Days"
    if unit == "Minutes":
        return start + timedelta(minutes=duration)
    if unit == "Hours":
        return start + timedelta(hours=duration)
    if unit == "Months":
        month = start.month - 1 + duration
        year, month = start.year + month // 12, month % 12 + 1
        day = min(start.day, calendar.monthrange(year, month)[1])
        end = start.replace(year=year, month=month, day=day)
    else:
        end = start + timedelta(days=duration * (7 if unit == "Weeks" else 1))
    return end.replace(hour=23, minute=59, second=59, microsecond=0)


def policy_error(policy: dict, message: str, **extra: str) -> dict:
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


def _fresh(conn: psycopg.Connection, tenant: str, record: dict, stored: dict | None) -> None:
    """This process forgets its cached policies on an edit (other processes within lookups.REFERENCE_TTL)."""
    invalidate(tenant)


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


def register(router: Router) -> None:
    for c in COLLECTIONS:
        register_collection(router, c)
