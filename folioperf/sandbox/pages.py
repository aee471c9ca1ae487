"""What the check-out and check-in pages read besides the circulation endpoints (docs/folio.md §3.1, §3.2,
§8): fees/fines accounts, staff slips, cancellation reasons (plain RMB collections) and mod-notes' note
links for a user."""

from __future__ import annotations

from psycopg import sql

from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.storage import Collection, register_collection
from folioperf.sandbox.web import UUID, HttpError, Request, Response, Router, raw_json

NOTE = BY_NAME["note"]
COLLECTIONS: tuple[Collection, ...] = (
    Collection("/accounts", "accounts", "accounts", "mod-feesfines", "accounts", result_info=True),
    Collection("/feefines", "feefines", "feefines", "mod-feesfines", "feefines", result_info=True),
    Collection("/staff-slips-storage/staff-slips", "staff_slips", "staffSlips", "mod-circulation-storage",
               "circulation-storage.staff-slips"),
    Collection("/cancellation-reason-storage/cancellation-reasons", "cancellation_reason", "cancellationReasons",
               "mod-circulation-storage", "circulation-storage.cancellation-reasons"),
)


def note_links(req: Request) -> Response:
    """GET /note-links/domain/{domain}/type/{type}/id/{id}: the notes linked (status=assigned, the
    default), not linked (unassigned) or all, by title (`order` asc|desc); `{"notes":[...],"totalRecords":N}`."""
    domain, link_type, link_id = req.params["domain"], req.params["type"], req.params["id"]
    status = (req.arg("status") or "assigned").lower()
    if status not in ("assigned", "unassigned", "all"):
        raise HttpError(400, f"Invalid status value: {req.arg('status')}")
    order = (req.arg("order") or "asc").lower()
    if order not in ("asc", "desc"):
        raise HttpError(400, f"Invalid order value: {req.arg('order')}")
    limit, offset = req.int_arg("limit", 10), req.int_arg("offset", 0)
    if not UUID.match(link_id) and link_type == "user":
        raise HttpError(400, f"Invalid id: {link_id}")
    linked = sql.SQL("jsonb->'links' @> %(link)s::jsonb")
    condition = {"assigned": linked, "unassigned": sql.SQL("NOT ({})").format(linked), "all": sql.SQL("TRUE")}[status]
    params = {"domain": domain, "link": f'[{{"id": "{link_id}", "type": "{link_type}"}}]' if UUID.match(link_id) else "[]",
              "limit": limit, "offset": offset}
    stmt = sql.SQL(
        "SELECT coalesce(jsonb_agg(jsonb ORDER BY lower(jsonb->>'title') {order}), '[]'::jsonb)::text, "
        "(SELECT count(*) FROM {note} WHERE jsonb->>'domain' = %(domain)s AND {condition}) "
        "FROM (SELECT jsonb FROM {note} WHERE jsonb->>'domain' = %(domain)s AND {condition} "
        "ORDER BY lower(jsonb->>'title') {order} LIMIT %(limit)s OFFSET %(offset)s) page"
    ).format(note=NOTE.ident(req.tenant), condition=condition, order=sql.SQL(order.upper()))
    with req.sandbox.pool.connection() as conn:
        notes, total = conn.execute(stmt, params).fetchall()[0]
    return raw_json(f'{{"notes":{notes},"totalRecords":{total}}}')


def register(router: Router) -> None:
    router.add("GET", "/note-links/domain/{domain}/type/{type}/id/{id}", note_links, "mod-notes", "note.links.collection.get")
    for c in COLLECTIONS:
        register_collection(router, c)
