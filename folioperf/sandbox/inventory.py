"""mod-inventory's business-logic views: `/inventory/items` and `/inventory/instances` return storage
records extended with what the UI shows (title, material type, loan type, location names, ...)."""

from __future__ import annotations

import psycopg
from psycopg import sql

from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.storage import collection_body, select_page, view_page
from folioperf.sandbox.web import UUID, HttpError, Request, Response, Router, raw_json

ITEM = BY_NAME["item"]


def _item_view(tenant: str) -> sql.Composable:
    """SQL turning rows of a `page(ord, jsonb, ...)` CTE of items into mod-inventory's item JSON text."""
    inv = f"{tenant}_mod_inventory_storage"

    def t(name: str) -> sql.Identifier:
        return sql.Identifier(inv, name)

    return sql.SQL(
        "SELECT (p.jsonb || jsonb_strip_nulls(jsonb_build_object("
        " 'title', inst.jsonb->>'title',"
        " 'contributorNames', coalesce((SELECT jsonb_agg(jsonb_build_object('name', c->>'name'))"
        "   FROM jsonb_array_elements(inst.jsonb->'contributors') c), '[]'::jsonb),"
        " 'callNumber', coalesce(p.jsonb->>'itemLevelCallNumber', h.jsonb->>'callNumber'),"
        " 'instanceId', h.instanceid,"
        " 'materialType', CASE WHEN mt.id IS NULL THEN NULL ELSE jsonb_build_object('id', mt.id, 'name', mt.jsonb->>'name') END,"
        " 'permanentLoanType', CASE WHEN plt.id IS NULL THEN NULL ELSE jsonb_build_object('id', plt.id, 'name', plt.jsonb->>'name') END,"
        " 'temporaryLoanType', CASE WHEN tlt.id IS NULL THEN NULL ELSE jsonb_build_object('id', tlt.id, 'name', tlt.jsonb->>'name') END,"
        " 'permanentLocation', CASE WHEN pl.id IS NULL THEN NULL ELSE jsonb_build_object('id', pl.id, 'name', pl.jsonb->>'name') END,"
        " 'effectiveLocation', CASE WHEN el.id IS NULL THEN NULL ELSE jsonb_build_object('id', el.id, 'name', el.jsonb->>'name') END,"
        " 'isBoundWith', false)))::text"
        " FROM page p"
        " LEFT JOIN {holdings} h ON h.id = p.holdingsrecordid"
        " LEFT JOIN {instance} inst ON inst.id = h.instanceid"
        " LEFT JOIN {mtype} mt ON mt.id = p.materialtypeid"
        " LEFT JOIN {ltype} plt ON plt.id = p.permanentloantypeid"
        " LEFT JOIN {ltype} tlt ON tlt.id = p.temporaryloantypeid"
        " LEFT JOIN {location} pl ON pl.id = p.permanentlocationid"
        " LEFT JOIN {location} el ON el.id = p.effectivelocationid"
        " ORDER BY p.ord"
    ).format(
        holdings=t("holdings_record"), instance=t("instance"), mtype=t("material_type"), ltype=t("loan_type"), location=t("location")
    )


_COLUMNS = sql.SQL("jsonb, holdingsrecordid, materialtypeid, permanentloantypeid, temporaryloantypeid, permanentlocationid, effectivelocationid")


def items_view(conn: psycopg.Connection, tenant: str, where: sql.Composable, params: tuple,
               order_by: sql.Composable | None = None, limit: int = 10, offset: int = 0) -> list[str]:
    """mod-inventory item JSON texts for items matching `where` (over the item table's columns)."""
    order = order_by if order_by is not None else sql.SQL("id")
    stmt = sql.SQL(
        "WITH page AS (SELECT row_number() OVER (ORDER BY {order}) AS ord, {cols} FROM {item} WHERE {where} "
        "ORDER BY {order} LIMIT %s OFFSET %s) "
    ).format(order=order, cols=_COLUMNS, item=ITEM.ident(tenant), where=where) + _item_view(tenant)
    return [r[0] for r in conn.execute(stmt, (*params, limit, offset))]


def item_by_id(conn: psycopg.Connection, tenant: str, item_id: str) -> str | None:
    rows = items_view(conn, tenant, sql.SQL("id = %s"), (item_id,), limit=1)
    return rows[0] if rows else None


def get_items(req: Request) -> Response:
    return raw_json(collection_body("items", *view_page(req, ITEM, items_view)))


def get_item(req: Request) -> Response:
    item_id = req.params["id"]
    if not UUID.match(item_id):
        raise HttpError(404, f"No item with ID {item_id} exists")
    with req.sandbox.pool.connection() as conn:
        body = item_by_id(conn, req.tenant, item_id)
    if body is None:
        raise HttpError(404, f"No item with ID {item_id} exists")
    return raw_json(body)


def get_instances(req: Request) -> Response:
    limit = req.int_arg("limit", 10)
    offset = req.int_arg("offset", 0)
    with req.sandbox.pool.connection() as conn:
        rows, total = select_page(conn, BY_NAME["instance"], req.tenant, req.arg("query"), limit, offset)
    return raw_json(collection_body("instances", rows, total))


def get_instance(req: Request) -> Response:
    instance_id = req.params["id"]
    if not UUID.match(instance_id):
        raise HttpError(404, f"No instance with ID {instance_id} exists")
    with req.sandbox.pool.connection() as conn:
        row = conn.execute(
            sql.SQL("SELECT jsonb::text FROM {} WHERE id = %s").format(BY_NAME["instance"].ident(req.tenant)), (instance_id,)
        ).fetchone()
    if row is None:
        raise HttpError(404, f"No instance with ID {instance_id} exists")
    return raw_json(row[0])


def register(router: Router) -> None:
    router.add("GET", "/inventory/items", get_items, "mod-inventory", "inventory.items.collection.get")
    router.add("GET", "/inventory/items/{id}", get_item, "mod-inventory", "inventory.items.item.get")
    router.add("GET", "/inventory/instances", get_instances, "mod-inventory", "inventory.instances.collection.get")
    router.add("GET", "/inventory/instances/{id}", get_instance, "mod-inventory", "inventory.instances.item.get")
