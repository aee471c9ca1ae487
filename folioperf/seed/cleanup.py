"""Deleting a dataset's state by its id ranges: the circulation state that involves its users, items or
instances (what `reset` clears), its own records (what `seed --replace` clears), and putting its items
back to their seeded status."""

from __future__ import annotations

import psycopg
from psycopg import sql

from folioperf.seed import marker
from folioperf.seed.dataset import Dataset
from folioperf.seed.layout import Layout

# table → (jsonb path of an id, kind of the dataset's ids it is matched against); in deletion order
CIRCULATION_STATE: dict[str, tuple[tuple[str, str], ...]] = {
    "loan": (("userId", "user"), ("itemId", "item")),
    "audit_loan": (("loan.userId", "user"), ("loan.itemId", "item")),  # after loan: deleting loans audits them
    "request": (("requesterId", "user"), ("itemId", "item"), ("instanceId", "instance")),
    "patron_action_session": (("patronId", "user"),),
    "scheduled_notice": (("recipientUserId", "user"),),
    "check_in": (("itemId", "item"),),
    "accounts": (("userId", "user"), ("itemId", "item")),
    "feefineactions": (("userId", "user"),),
    "user_summary": (("userId", "user"),),
    "notify_data": (("recipientId", "user"),),
}

# the dataset's own records, children first (for --replace): table → kind of its ids
RECORDS = {
    "permissions_users": "permission_user", "service_point_user": "service_point_user",
    "user_request_preference": "request_preference", "users": "user", "item": "item", "holdings_record": "holdings",
    "instance": "instance", "raw_records_lb": "srs_record", "marc_records_lb": "srs_record", "records_lb": "srs_record",
    "snapshots_lb": "snapshot", "authority": "authority",
}


def _text_path(path: str) -> sql.Composable:
    parts = path.split(".")
    expr: sql.Composable = sql.SQL("jsonb")
    for i, part in enumerate(parts):
        expr = sql.SQL("{}{}{}").format(expr, sql.SQL("->>" if i == len(parts) - 1 else "->"), sql.Literal(part))
    return expr


def clear_circulation(conn: psycopg.Connection, layout: Layout, ds: Dataset) -> dict[str, int]:
    """Delete the circulation state that involves the dataset's users, items or instances; one scan per table.
    Ids inside jsonb are lower-case text in FOLIO, so a text range matches the same uuids as the id range."""
    deleted: dict[str, int] = {}
    for key, refs in CIRCULATION_STATE.items():
        info = layout.get(key)
        if info is None:
            continue
        where = sql.SQL(" OR ").join(sql.SQL("lower({}) BETWEEN %s AND %s").format(_text_path(path)) for path, _ in refs)
        params = [bound for _, kind in refs for bound in (ds.ids.of(kind).low, ds.ids.of(kind).high)]
        deleted[info.label] = conn.execute(sql.SQL("DELETE FROM {} WHERE {}").format(info.ident, where), params).rowcount
    return deleted


# SRS records keep their first generation's id as `matched_id` in every later one (a quickMARC edit writes a
# new generation with a new id): a dataset's SRS records are those whose matched id is in its range
_SRS_CHILDREN = ("raw_records_lb", "marc_records_lb")


def delete_dataset(conn: psycopg.Connection, layout: Layout, ds: Dataset) -> dict[str, int]:
    """Delete the dataset's records and all circulation state that refers to them (`seed --replace`)."""
    deleted = clear_circulation(conn, layout, ds)
    records = layout.get("records_lb")
    for key, kind in RECORDS.items():
        info = layout.get(key)
        if info is None:
            continue
        ids = ds.ids.of(kind)
        where: sql.Composable
        if key == "records_lb":
            where = sql.SQL("matched_id BETWEEN %s AND %s")
        elif key in _SRS_CHILDREN and records is not None:
            where = sql.SQL("id IN (SELECT id FROM {} WHERE matched_id BETWEEN %s AND %s)").format(records.ident)
        else:
            where = sql.SQL("id BETWEEN %s AND %s")
        deleted[info.label] = conn.execute(sql.SQL("DELETE FROM {} WHERE {}").format(info.ident, where),
                                           (ids.low, ids.high)).rowcount
    marker.delete(conn, layout, ds)
    return deleted


def restore_items(conn: psycopg.Connection, layout: Layout, ds: Dataset, loans: int, now: str, paged: int = 0) -> int:
    """Items of seeded loans back to Checked out, those of seeded Page requests (the `paged` after them) to Paged,
    every other item of the dataset back to Available."""
    item = layout["item"]
    ids = ds.ids.of("item")
    changed = 0
    spans = [("Checked out", ids(0), ids(loans - 1))] if loans else []
    spans += [("Paged", ids(loans), ids(loans + paged - 1))] if paged else []
    spans.append(("Available", ids(loans + paged), ids.high))
    for status, low, high in spans:
        changed += conn.execute(
            sql.SQL(
                "UPDATE {} SET jsonb = jsonb_set(jsonb - 'inTransitDestinationServicePointId', '{{status}}', "
                "jsonb_build_object('name', %s::text, 'date', %s::text)) "
                "WHERE id BETWEEN %s AND %s AND jsonb->'status'->>'name' IS DISTINCT FROM %s"
            ).format(item.ident),
            (status, now, low, high, status),
        ).rowcount
    return changed
