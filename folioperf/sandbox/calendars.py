"""mod-calendar's calendars (folio-org/mod-calendar `api/paths/calendar/calendars.yaml`, `CalendarService`,
`CalendarRepository`): `GET/POST /calendar/calendars`, `GET/DELETE /calendar/calendars/{id}`. A tenant
starts with none (mod-calendar has no reference data).

GET filters by `id` and `servicePointId` (both repeatable) and by a date range that the calendar must
overlap (`startDate`, `endDate`), ordered by start date, `offset`/`limit` (default 10). POST checks the
required fields, a non-empty name, the date order and that no assigned service point has another
calendar over the same dates (409); the consistency checks of the opening hours and exceptions
(`CalendarValidationService`) are not simulated. Errors are mod-calendar's `{timestamp, status, errors}`.
mod-calendar keeps relational tables; the sandbox keeps each calendar as one jsonb record.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime, timezone
from urllib.parse import parse_qsl

from psycopg import sql

from folioperf.sandbox.lookups import insert_row
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.storage import now_iso
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
    clauses, params = [sql.SQL("TRUE")], []
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
                             params).fetchone()[0]
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


def register(router: Router) -> None:
    router.add("GET", "/calendar/calendars", get_calendars, MODULE, "calendar.endpoint.calendars.get")
    router.add("POST", "/calendar/calendars", post_calendar, MODULE, "calendar.endpoint.calendars.post")
    router.add("GET", "/calendar/calendars/{id}", get_calendar, MODULE, "calendar.endpoint.calendars.calendarId.get")
    router.add("DELETE", "/calendar/calendars/{id}", delete_calendar, MODULE, "calendar.endpoint.calendars.calendarId.delete")
