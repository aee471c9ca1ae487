"""mod-inventory's business-logic views: `/inventory/items` and `/inventory/instances`, storage records
turned into mod-inventory's representations.

Items (folio-org/mod-inventory `ItemRepresentation.java`, `ItemUtil.fromStoredItemRepresentation`): the
reference ids become objects (`materialType`, `permanentLoanType`, `temporaryLoanType`,
`permanentLocation`, `temporaryLocation`, `effectiveLocation`: `{id, name}`, the name when the record
exists) and the ids themselves are not sent (`ramls/item.json` allows no other fields); the instance's
`title` and `contributorNames` and the holdings' `callNumber` are added. Lists (formerIds, notes,
statisticalCodeIds, ...), `tags`, `isBoundWith`, and `discoverySuppress`, `order` and
`purchaseOrderLineIdentifier` (null when unset) are always sent; `_version` is sent as a string (the
module reads it with Vert.x's `getString`).

Instances (`Instance.fromJson`, `Instance.getJsonForResponse`): the storage record's fields mod-inventory
knows, every list present, `isBoundWith`, `previouslyHeld`, `staffSuppress`, `discoverySuppress` and
`deleted` false when unset, `tags` as `{tagList}`; a single instance also lists its (here always empty)
parent and child instances and preceding and succeeding titles. Neither collection has `resultInfo`.
"""

from __future__ import annotations

import json

import psycopg
from psycopg import sql

from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.storage import select_page, view_page
from folioperf.sandbox.web import UUID, HttpError, Request, Response, Router, json_response, raw_json

ITEM, INSTANCE = BY_NAME["item"], BY_NAME["instance"]
_OPTIONAL_TEXT = ("hrid", "inTransitDestinationServicePointId", "holdingsRecordId", "barcode", "itemLevelCallNumber",
                  "itemLevelCallNumberPrefix", "itemLevelCallNumberSuffix", "itemLevelCallNumberTypeId", "volume",
                  "displaySummary", "enumeration", "chronology", "copyNumber", "numberOfPieces", "descriptionOfPieces",
                  "numberOfMissingPieces", "missingPieces", "missingPiecesDate", "itemDamagedStatusId",
                  "itemDamagedStatusDate", "accessionNumber", "itemIdentifier", "effectiveShelvingOrder")
_LISTS = ("administrativeNotes", "formerIds", "additionalCallNumbers", "notes", "circulationNotes", "yearCaption",
          "electronicAccess", "statisticalCodeIds")


def _reference(column: str, alias: str) -> str:
    return (f"CASE WHEN p.{column} IS NULL THEN NULL ELSE jsonb_strip_nulls(jsonb_build_object("
            f"'id', p.{column}, 'name', {alias}.jsonb->>'name')) END")


def _item_view(tenant: str) -> sql.Composable:
    """SQL turning rows of a `page(ord, jsonb, ...)` CTE of items into mod-inventory's item JSON text."""
    inv = f"{tenant}_mod_inventory_storage"

    def t(name: str) -> sql.Identifier:
        return sql.Identifier(inv, name)

    optional = ", ".join(f"'{k}', p.jsonb->'{k}'" for k in _OPTIONAL_TEXT)
    lists = ", ".join(f"'{k}', coalesce(p.jsonb->'{k}', '[]'::jsonb)" for k in _LISTS)
    return sql.SQL(
        "SELECT (jsonb_strip_nulls(jsonb_build_object("
        " 'id', p.jsonb->'id', '_version', p.jsonb->>'_version', 'status', p.jsonb->'status',"
        " 'title', inst.jsonb->'title', 'callNumber', h.jsonb->'callNumber', " + optional + ","
        " 'materialType', " + _reference("materialtypeid", "mt") + ","
        " 'permanentLoanType', " + _reference("permanentloantypeid", "plt") + ","
        " 'temporaryLoanType', " + _reference("temporaryloantypeid", "tlt") + ","
        " 'permanentLocation', " + _reference("permanentlocationid", "pl") + ","
        " 'temporaryLocation', " + _reference("temporarylocationid", "tl") + ","
        " 'effectiveLocation', CASE WHEN el.id IS NULL THEN NULL ELSE jsonb_build_object('id', el.id, 'name', el.jsonb->>'name') END,"
        " 'metadata', p.jsonb->'metadata', 'lastCheckIn', p.jsonb->'lastCheckIn',"
        " 'effectiveCallNumberComponents', p.jsonb->'effectiveCallNumberComponents'"
        ")) || jsonb_build_object(" + lists + ","
        " 'contributorNames', coalesce((SELECT jsonb_agg(jsonb_build_object('name', c->>'name'))"
        "   FROM jsonb_array_elements(inst.jsonb->'contributors') c), '[]'::jsonb),"
        " 'discoverySuppress', p.jsonb->'discoverySuppress', 'order', p.jsonb->'order',"
        " 'purchaseOrderLineIdentifier', p.jsonb->'purchaseOrderLineIdentifier',"
        " 'tags', jsonb_build_object('tagList', coalesce(p.jsonb->'tags'->'tagList', '[]'::jsonb)),"
        " 'isBoundWith', false))::text"
        " FROM page p"
        " LEFT JOIN {holdings} h ON h.id = p.holdingsrecordid"
        " LEFT JOIN {instance} inst ON inst.id = h.instanceid"
        " LEFT JOIN {mtype} mt ON mt.id = p.materialtypeid"
        " LEFT JOIN {ltype} plt ON plt.id = p.permanentloantypeid"
        " LEFT JOIN {ltype} tlt ON tlt.id = p.temporaryloantypeid"
        " LEFT JOIN {location} pl ON pl.id = p.permanentlocationid"
        " LEFT JOIN {location} tl ON tl.id = p.temporarylocationid"
        " LEFT JOIN {location} el ON el.id = p.effectivelocationid"
        " ORDER BY p.ord"
    ).format(
        holdings=t("holdings_record"), instance=t("instance"), mtype=t("material_type"), ltype=t("loan_type"), location=t("location")
    )


_COLUMNS = sql.SQL("jsonb, holdingsrecordid, materialtypeid, permanentloantypeid, temporaryloantypeid, permanentlocationid, "
                   "temporarylocationid, effectivelocationid")


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
    rows, total = view_page(req, ITEM, items_view)
    return raw_json(f'{{"items":[{",".join(rows)}],"totalRecords":{total}}}')


def get_item(req: Request) -> Response:
    item_id = req.params["id"]
    body = None
    if UUID.match(item_id):
        with req.sandbox.pool.connection() as conn:
            body = item_by_id(conn, req.tenant, item_id)
    if body is None:
        raise HttpError(404, "Not Found")
    return raw_json(body)


_INSTANCE_TEXT = ("matchKey", "sourceUri", "indexTitle", "instanceTypeId", "modeOfIssuanceId", "catalogedDate",
                  "sourceRecordFormat", "statusId", "statusUpdatedDate", "metadata", "dates")
_INSTANCE_LISTS = ("alternativeTitles", "editions", "series", "identifiers", "contributors", "subjects", "classifications",
                   "publication", "publicationFrequency", "publicationRange", "electronicAccess", "instanceFormatIds",
                   "physicalDescriptions", "languages", "notes", "statisticalCodeIds", "natureOfContentTermIds")
_INSTANCE_FLAGS = ("isBoundWith", "previouslyHeld", "staffSuppress", "discoverySuppress", "deleted")
_RELATIONS = ("parentInstances", "childInstances", "precedingTitles", "succeedingTitles")


def instance_representation(stored: dict, single: bool) -> dict:
    out: dict = {"id": stored.get("id"), "hrid": stored.get("hrid"), "source": stored.get("source"),
                 "title": stored.get("title"), "administrativeNotes": stored.get("administrativeNotes") or []}
    if stored.get("_version") is not None:
        out["_version"] = stored["_version"]
    for key in _INSTANCE_TEXT:
        if stored.get(key) is not None:
            out[key] = stored[key]
    for key in _INSTANCE_LISTS:
        out[key] = stored.get(key) or []
    for key in _INSTANCE_FLAGS:
        out[key] = bool(stored.get(key, False))
    out["tags"] = {"tagList": (stored.get("tags") or {}).get("tagList") or []}
    if single:
        out.update({key: [] for key in _RELATIONS})
    return out


def get_instances(req: Request) -> Response:
    limit = req.int_arg("limit", 10)
    offset = req.int_arg("offset", 0)
    with req.sandbox.pool.connection() as conn:
        rows, total = select_page(conn, req.sandbox.translator, INSTANCE, req.tenant, req.arg("query"), limit, offset)
    return json_response({"instances": [instance_representation(json.loads(r), False) for r in rows], "totalRecords": total})


def get_instance(req: Request) -> Response:
    instance_id = req.params["id"]
    row = None
    if UUID.match(instance_id):
        with req.sandbox.pool.connection() as conn:
            row = conn.execute(sql.SQL("SELECT jsonb FROM {} WHERE id = %s").format(INSTANCE.ident(req.tenant)),
                               (instance_id,)).fetchone()
    if row is None:
        raise HttpError(404, "Not Found")
    return json_response(instance_representation(row[0], True))


def register(router: Router) -> None:
    router.add("GET", "/inventory/items", get_items, "mod-inventory", "inventory.items.collection.get")
    router.add("GET", "/inventory/items/{id}", get_item, "mod-inventory", "inventory.items.item.get")
    router.add("GET", "/inventory/instances", get_instances, "mod-inventory", "inventory.instances.collection.get")
    router.add("GET", "/inventory/instances/{id}", get_instance, "mod-inventory", "inventory.instances.item.get")
