"""mod-calendar's calendars (folio-org/mod-calendar `api/paths/calendar/calendars.yaml`, `CalendarService`,
`CalendarRepository`): `GET/POST /calendar/calendars`, `GET/DELETE /calendar/calendars/{id}`. A tenant
starts with none (mod-calendar has no reference data).

GET filters by `id` and `servicePointId` (both repeatable) and by a date range that the calendar must
overlap (`startDate`, `endDate`), ordered by start date, `offset`/`limit` (default 10). POST checks the
required fields, a non-empty name, the date order and that no assigned service point has another
calendar over the same dates (409); the consistency checks of the opening hours and exceptions
(`CalendarValidationService`) are not simulated. Errors are mod-calendar's `{timestamp, status, errors}`.
mod-calendar keeps relational tables; the sandbox keeps each calendar as one jsonb record.

`open_minutes` is what mod-circulation reads from `GET /calendar/dates/{servicePointId}/all-openings` to
charge overdue fines for open hours only (fines.py): each date's openings, from the calendar's exceptions or
else its normal hours (`CalendarUtils.splitCalendarIntoDates`), in the tenant's time zone (UTC here).
"""

from __future__ import annotations

import uuid
from datetime import date, datetime, time, timedelta, timezone
from urllib.parse import parse_qsl

import psycopg
from psycopg import sql

from folioperf.sandbox.lookups import insert_row, minutes_between
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.storage import now_iso
from folioperf.sandbox.trace import calls
from folioperf.sandbox.web import UUID, HttpError, Request, Response, Router, dumps, json_response, no_content

MODULE = "mod-calendar"
CALENDARS = BY_NAME["calendars"]
REQUIRED = ("name", "startDate", "endDate", "assignments", "normalHours", "exceptions")


def _error(status: int, code: str, message: str, data: dict | None = None) -> HttpError:
    entry: dict = {"code": code, "message": message}
    if data is not None:
        entry["data"] = data
    body = {"timestamp": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), "status": status, "errors": [entry]}
    return HttpError(status, dumps(body), "application/json")


def _date(value: object, name: str) -> date:
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        raise _error(400, "invalidParameter", f"One of the parameters was the incorrect type: {name}={value}") from None


def _medium(d: date) -> str:
    return f"{d:%b} {d.day}, {d.year}"  # ICU's medium date: "Jan 8, 2022"


def _many(req: Request, name: str) -> list[str]:
    values = [v for k, v in parse_qsl(req.environ.get("QUERY_STRING", "")) if k == name]
    for value in values:
        if not UUID.match(value):
            raise _error(400, "invalidParameter", f"One of the parameters was the incorrect type: {name}={value}")
    return values


def get_calendars(req: Request) -> Response:
    ids, points = _many(req, "id"), _many(req, "servicePointId")
    clauses = [sql.SQL("TRUE")]
    params: list[object] = []
    if ids:
        clauses.append(sql.SQL("id = ANY(%s::uuid[])"))
        params.append(ids)
    if points:
        clauses.append(sql.SQL("jsonb->'assignments' ?| %s"))
        params.append([p.lower() for p in points])
    if req.arg("startDate"):
        clauses.append(sql.SQL("jsonb->>'endDate' >= %s"))
        params.append(_date(req.arg("startDate"), "startDate").isoformat())
    if req.arg("endDate"):
        clauses.append(sql.SQL("jsonb->>'startDate' <= %s"))
        params.append(_date(req.arg("endDate"), "endDate").isoformat())
    where = sql.SQL(" AND ").join(clauses)
    limit, offset = req.int_arg("limit", 10), req.int_arg("offset", 0)
    with req.sandbox.pool.connection() as conn:
        rows = conn.execute(sql.SQL("SELECT jsonb FROM {} WHERE {} ORDER BY jsonb->>'startDate', id LIMIT %s OFFSET %s").format(
            CALENDARS.ident(req.tenant), where), (*params, limit, offset)).fetchall()
        total = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE {}").format(CALENDARS.ident(req.tenant), where),
                             params).fetchall()[0][0]
    return json_response({"calendars": [r[0] for r in rows], "totalRecords": total})


def _not_found(calendar_id: str) -> HttpError:
    return _error(404, "calendarNotFound", "No calendar was found with the specified query", {"notFound": [calendar_id]})


def get_calendar(req: Request) -> Response:
    calendar_id = req.params["id"]
    row = None
    if UUID.match(calendar_id):
        with req.sandbox.pool.connection() as conn:
            row = conn.execute(sql.SQL("SELECT jsonb FROM {} WHERE id = %s").format(CALENDARS.ident(req.tenant)),
                               (calendar_id,)).fetchone()
    if row is None:
        raise _not_found(calendar_id)
    return json_response(row[0])


def post_calendar(req: Request) -> Response:
    body = req.json()
    missing = [k for k in REQUIRED if body.get(k) is None]
    if missing:
        raise _error(400, "invalidRequest", f"The request was invalid: {', '.join(missing)} must not be null")
    if not str(body["name"]).strip():
        raise _error(400, "calendarNoName", "Please provide a non-empty calendar name")
    start, end = _date(body["startDate"], "startDate"), _date(body["endDate"], "endDate")
    if start > end:
        raise _error(400, "calendarInvalidDateRange",
                     f"Start date ({_medium(start)}) cannot be after end date ({_medium(end)})")
    points = [str(p).lower() for p in body["assignments"]]
    calendar_id = str(uuid.uuid4())  # mod-calendar ignores a client's id
    with req.sandbox.pool.connection() as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{req.tenant}/calendars",))
        clash = conn.execute(sql.SQL(
            "SELECT jsonb FROM {} WHERE jsonb->'assignments' ?| %s AND jsonb->>'endDate' >= %s AND jsonb->>'startDate' <= %s "
            "ORDER BY jsonb->>'startDate' LIMIT 1").format(CALENDARS.ident(req.tenant)),
            (points, start.isoformat(), end.isoformat())).fetchone()
        if clash is not None:
            other = clash[0]
            raise _error(409, "calendarDateOverlap",
                         f"This calendar overlaps with another calendar (“{other['name']}” from "
                         f"{_medium(date.fromisoformat(other['startDate']))} to {_medium(date.fromisoformat(other['endDate']))})",
                         {"conflictingServicePointIds": sorted(set(points) & set(other.get("assignments") or ()))})
        now = now_iso()
        calendar = {
            "id": calendar_id, "name": body["name"], "startDate": start.isoformat(), "endDate": end.isoformat(),
            "assignments": points,
            "normalHours": [{**h, "calendarId": calendar_id} for h in body["normalHours"]],
            "exceptions": [{**x, "calendarId": calendar_id} for x in body["exceptions"]],
            "metadata": {k: v for k, v in {"createdDate": now, "createdByUserId": req.user_id, "updatedDate": now,
                                           "updatedByUserId": req.user_id}.items() if v},
        }
        insert_row(conn, CALENDARS, req.tenant, calendar)
    return json_response(calendar, 201)


def delete_calendar(req: Request) -> Response:
    calendar_id = req.params["id"]
    deleted = 0
    if UUID.match(calendar_id):
        with req.sandbox.pool.connection() as conn:
            deleted = conn.execute(sql.SQL("DELETE FROM {} WHERE id = %s").format(CALENDARS.ident(req.tenant)),
                                   (calendar_id,)).rowcount
    if not deleted:
        raise _not_found(calendar_id)
    return no_content()


WEEKDAYS = ("MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY")  # date.weekday() order
DAY_END = time(23, 59)  # TimeConstants.TIME_MAX: an opening to the end of a day ends at 23:59


def _weekly(normal_hours: list[dict]) -> list[list[tuple[time, time]]]:
    """NormalOpeningUtils.fillWeekdayMapWithTimeTuples: each normal opening as one (start, end) per weekday it
    covers; one that ends before it starts on the same weekday wraps round the whole week."""
    week: list[list[tuple[time, time]]] = [[] for _ in WEEKDAYS]
    for opening in normal_hours:
        first, last = WEEKDAYS.index(opening["startDay"]), WEEKDAYS.index(opening["endDay"])
        start, end = time.fromisoformat(opening["startTime"]), time.fromisoformat(opening["endTime"])
        if first == last and start > end:
            for day in range(7):
                week[day] += [(time.min, end), (start, DAY_END)] if day == first else [(time.min, DAY_END)]
            continue
        day = first
        while True:
            week[day].append((start if day == first else time.min, end if day == last else DAY_END))
            if day == last:
                break
            day = (day + 1) % 7
    return week


def _exceptional(exception: dict, day: date) -> list[tuple[time, time]]:
    """An exception's openings on one of its dates (TemporalUtils.getLocalTimeSliceOfDateTimeRange); none: closed."""
    out = []
    for opening in exception.get("openings") or ():
        first, last = date.fromisoformat(opening["startDate"]), date.fromisoformat(opening["endDate"])
        if first <= day <= last:
            out.append((time.fromisoformat(opening["startTime"]) if day == first else time.min,
                        time.fromisoformat(opening["endTime"]) if day == last else DAY_END))
    return out


def _days(first: date, last: date) -> list[date]:
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


@calls("GET", MODULE, "/calendar/dates..")
def openings(conn: psycopg.Connection, tenant: str, service_point: str, first: date, last: date) -> dict[date, list[tuple[time, time]]]:
    """The service point's openings on each open date from `first` to `last` (all-openings, includeClosed=false)."""
    rows = conn.execute(sql.SQL("SELECT jsonb FROM {} WHERE jsonb->'assignments' ? %s AND jsonb->>'endDate' >= %s "
                                "AND jsonb->>'startDate' <= %s").format(CALENDARS.ident(tenant)),
                        (service_point.lower(), first.isoformat(), last.isoformat())).fetchall()
    found: dict[date, list[tuple[time, time]]] = {}
    for (calendar,) in rows:
        start = max(first, date.fromisoformat(calendar["startDate"]))
        end = min(last, date.fromisoformat(calendar["endDate"]))
        for exception in calendar.get("exceptions") or ():
            for day in _days(max(start, date.fromisoformat(exception["startDate"])), min(end, date.fromisoformat(exception["endDate"]))):
                found[day] = _exceptional(exception, day)
        week = _weekly(calendar.get("normalHours") or [])
        for day in _days(start, end):
            if day not in found and week[day.weekday()]:
                found[day] = sorted(week[day.weekday()])
    return {day: ranges for day, ranges in sorted(found.items()) if ranges}


def open_minutes(conn: psycopg.Connection, tenant: str, service_point: str, since: datetime, until: datetime) -> int:
    """The minutes from `since` to `until` that the service point is open (mod-circulation's
    OverduePeriodCalculatorService.getOpeningDaysDurationMinutes): each opening cut to the period."""
    total = 0
    for day, ranges in openings(conn, tenant, service_point, since.astimezone(timezone.utc).date(),
                                until.astimezone(timezone.utc).date()).items():
        for start_time, end_time in ranges:
            start = datetime.combine(day, start_time, timezone.utc)
            end = datetime.combine(day, end_time, timezone.utc)
            if start < since < end:
                start = since
            if start < until < end:
                end = until
            if end > start and end > since and start < until:
                total += minutes_between(start, end)
    return total


def register(router: Router) -> None:
    router.add("GET", "/calendar/calendars", get_calendars, MODULE, "calendar.endpoint.calendars.get")
    router.add("POST", "/calendar/calendars", post_calendar, MODULE, "calendar.endpoint.calendars.post")
    router.add("GET", "/calendar/calendars/{id}", get_calendar, MODULE, "calendar.endpoint.calendars.calendarId.get")
    router.add("DELETE", "/calendar/calendars/{id}", delete_calendar, MODULE, "calendar.endpoint.calendars.calendarId.delete")
