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

Item writes (mod-inventory `Items.update` and `Items.deleteById`, `ItemUtil.jsonToItem` and
`toStoredItemRepresentation`, `ItemsValidator`, `ItemStatusValidator`): a PUT takes the item in mod-inventory's
representation and sends item-storage the fields mod-inventory knows, the reference objects' ids as the storage
ids (text fields read as strings: a number becomes its text), so `title`, `effectiveLocation`, `order`,
`additionalCallNumbers` and other fields of the representation are not stored. Before that: a status that is not
one of mod-inventory's (422), an item that does not exist (404 "No item found"), a changed HRID (422), a Claimed
returned item marked Missing (422), a barcode another item has (400). Item-storage then validates and applies
RMB's optimistic lock on `_version`: its 409 and 422 come back as text, as mod-inventory forwards them. A DELETE
answers what item-storage answers (204, or 404 "Not found"). The storage's skip of an update that changes
nothing (ItemService.updateItem's equalsIgnoringMetadata) is not reproduced: every PUT writes a new `_version`.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone

import psycopg
from psycopg import sql

from folioperf.sandbox import storage
from folioperf.sandbox.inventory_storage import COLLECTIONS as STORAGE_COLLECTIONS
from folioperf.sandbox.lookups import field_eq, user_by_id
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.storage import select_page, view_page
from folioperf.sandbox.trace import calls
from folioperf.sandbox.web import JSON, TEXT, UUID, HttpError, Request, Response, Router, json_response, no_content, raw_json

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


# -- item writes ----------------------------------------------------------------------------------------------
ITEM_STORAGE = next(c for c in STORAGE_COLLECTIONS if c.table == "item")
STATUSES = ("Aged to lost", "Available", "Awaiting pickup", "Awaiting delivery", "Checked out", "Claimed returned",
            "Declared lost", "In process", "In process (non-requestable)", "In transit", "Intellectual item",
            "Long missing", "Lost and paid", "Missing", "On order", "Order closed", "Paged", "Restricted",
            "Unavailable", "Unknown", "Withdrawn")  # ItemStatusName
_TEXT_FIELDS = ("hrid", "inTransitDestinationServicePointId", "copyNumber", "barcode", "itemLevelCallNumber",
                "itemLevelCallNumberPrefix", "itemLevelCallNumberSuffix", "itemLevelCallNumberTypeId", "volume",
                "displaySummary", "enumeration", "chronology", "numberOfPieces", "descriptionOfPieces",
                "numberOfMissingPieces", "missingPieces", "missingPiecesDate", "itemDamagedStatusId",
                "itemDamagedStatusDate", "holdingsRecordId", "accessionNumber", "itemIdentifier")
_REFERENCES = (("materialTypeId", "materialType"), ("permanentLoanTypeId", "permanentLoanType"),
               ("temporaryLoanTypeId", "temporaryLoanType"), ("permanentLocationId", "permanentLocation"),
               ("temporaryLocationId", "temporaryLocation"))


def _unprocessable(message: str, key: str, value: object) -> HttpError:
    """mod-inventory's JsonResponse.unprocessableEntity: one error, pretty-printed as Vert.x does."""
    body = {"errors": [{"message": message, "parameters": [{"key": key, "value": value}]}]}
    return HttpError(422, json.dumps(body, indent=2, separators=(",", " : ")), JSON)


def _text(value: object) -> str | None:
    """Vert.x's JsonObject.getString: a value's text (a number `23` is "23")."""
    if value is None or isinstance(value, (dict, list)):
        return None
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _texts(values: object) -> list[str]:
    return [t for t in map(_text, values) if t is not None] if isinstance(values, list) else []


def _objects(values: object, keys: tuple[str, ...]) -> list[dict]:
    return [{k: v[k] for k in keys if v.get(k) is not None} for v in values if isinstance(v, dict)] \
        if isinstance(values, list) else []


def _stamp() -> str:
    """The circulation notes' date, mod-inventory's `yyyy-MM-dd'T'HH:mm:ss.SSSZ` in UTC."""
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}+0000"


def _circulation_notes(body: dict, old: dict, user: dict | None) -> list[dict]:
    """Items.updateCirculationNoteIfChanged: a new note gets an id, and a new or changed note the editing user
    as its source and the time as its date."""
    personal = (user or {}).get("personal") or {}
    source = {"id": user["id"], "personal": {k: personal[k] for k in ("lastName", "firstName") if personal.get(k)}} \
        if user else None
    before = {n.get("id"): n for n in old.get("circulationNotes") or () if isinstance(n, dict)}
    notes = []
    for note in _objects(body.get("circulationNotes"), ("id", "noteType", "note", "staffOnly", "source", "date")):
        previous = before.get(note.get("id"))
        if note.get("id") is None:
            note.update(id=str(uuid.uuid4()), source=source, date=_stamp())
        elif previous is None or any(note.get(k) != previous.get(k) for k in ("noteType", "note", "staffOnly")):
            note.update(source=source, date=_stamp())
        notes.append({k: v for k, v in note.items() if v is not None})
    return notes


def stored_item(body: dict, old: dict, user: dict | None) -> dict:
    """The item-storage record mod-inventory sends for a PUT body (ItemUtil.jsonToItem, toStoredItemRepresentation)."""
    status = found if isinstance(found := body.get("status"), dict) else {}
    out: dict = {"id": _text(body.get("id")) or str(uuid.uuid4()), "_version": _text(body.get("_version")),
                 "status": {k: status[k] for k in ("name", "date") if status.get(k) is not None}}
    check_in = body.get("lastCheckIn")
    if isinstance(check_in, dict):
        out["lastCheckIn"] = {k: check_in[k] for k in ("servicePointId", "staffMemberId", "dateTime") if k in check_in}
    for key in _TEXT_FIELDS:
        out[key] = _text(body.get(key))
    for key, reference in _REFERENCES:
        out[key] = _text((body.get(reference) or {}).get("id")) if isinstance(body.get(reference), dict) else None
    out.update(formerIds=_texts(body.get("formerIds")), discoverySuppress=body.get("discoverySuppress"),
               administrativeNotes=_texts(body.get("administrativeNotes")),
               notes=_objects(body.get("notes"), ("itemNoteTypeId", "note", "staffOnly")),
               circulationNotes=_circulation_notes(body, old, user), yearCaption=_texts(body.get("yearCaption")),
               electronicAccess=_objects(body.get("electronicAccess"),
                                         ("uri", "linkText", "materialsSpecification", "publicNote", "relationshipId")),
               statisticalCodeIds=_texts(body.get("statisticalCodeIds")),
               purchaseOrderLineIdentifier=_text(body.get("purchaseOrderLineIdentifier")),
               tags={"tagList": _texts((body.get("tags") or {}).get("tagList") if isinstance(body.get("tags"), dict) else [])})
    return {k: v for k, v in out.items() if v is not None}


@calls("GET", "mod-inventory-storage", "/item-storage/items..")
def _stored_item(conn: psycopg.Connection, tenant: str, item_id: str) -> dict | None:
    return storage.get_record(conn, ITEM, tenant, item_id)


@calls("GET", "mod-inventory-storage", "/item-storage/items..")
def _barcode_taken(conn: psycopg.Connection, tenant: str, barcode: str, item_id: str) -> bool:
    where = field_eq(ITEM, tenant, "barcode", "barcode")
    return conn.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {} WHERE {} AND id <> %(id)s::uuid)").format(
        ITEM.ident(tenant), where), {"barcode": barcode, "id": item_id}).fetchall()[0][0]


@calls("PUT", "mod-inventory-storage", "/item-storage/items")
def _replace_item(req: Request, record: dict) -> None:
    storage.replace(req, ITEM_STORAGE, record["id"], record)


@calls("DELETE", "mod-inventory-storage", "/item-storage/items")
def _delete_item(req: Request, item_id: str) -> None:
    storage.delete(req, ITEM_STORAGE, item_id)


def put_item(req: Request) -> Response:
    """PUT /inventory/items/{id} (mod-inventory Items.update)."""
    item_id = req.params["id"]
    try:
        body = req.json()
    except HttpError as exc:  # Vert.x's DecodeException in the handler: the router's default failure answer
        if exc.status != 400:
            raise
        raise HttpError(500, "Internal Server Error") from None
    status = (body.get("status") or {}).get("name") if isinstance(body.get("status"), dict) else None
    if not status or not str(status).strip():
        raise _unprocessable("Status is a required field", "status", None)
    if status not in STATUSES:
        raise _unprocessable("Undefined status specified", "status.name", status)
    with req.sandbox.pool.connection() as conn:
        old = _stored_item(conn, req.tenant, item_id) if UUID.match(item_id) else None
        if old is None:
            raise HttpError(404, "No item found")
        hrid = _text(body.get("hrid"))
        if hrid != old.get("hrid"):
            raise _unprocessable("HRID can not be updated", "hrid", hrid)
        if (old.get("status") or {}).get("name") == "Claimed returned" and status == "Missing":
            raise _unprocessable("Claimed returned item cannot be marked as missing", "status.name", "Missing")
        barcode = _text(body.get("barcode"))
        user = user_by_id(conn, req.tenant, req.user_id) if req.user_id and UUID.match(req.user_id) else None
        record = stored_item(body, old, user)
        if barcode is not None and barcode != old.get("barcode") and _barcode_taken(conn, req.tenant, barcode, record["id"]):
            raise HttpError(400, f"Barcode must be unique, {barcode} is already assigned to another item")
    try:
        _replace_item(req, record)
    except HttpError as exc:  # ForwardResponse.forward(response, failure): the storage's answer as text
        raise HttpError(exc.status, exc.body, TEXT) from None
    return no_content()


def delete_item(req: Request) -> Response:
    """DELETE /inventory/items/{id} (mod-inventory Items.deleteById): item-storage's answer."""
    _delete_item(req, req.params["id"])
    return no_content()


def register(router: Router) -> None:
    router.add("GET", "/inventory/items", get_items, "mod-inventory", "inventory.items.collection.get")
    router.add("GET", "/inventory/items/{id}", get_item, "mod-inventory", "inventory.items.item.get")
    router.add("PUT", "/inventory/items/{id}", put_item, "mod-inventory", "inventory.items.item.put")
    router.add("DELETE", "/inventory/items/{id}", delete_item, "mod-inventory", "inventory.items.item.delete")
    router.add("GET", "/inventory/instances", get_instances, "mod-inventory", "inventory.instances.collection.get")
    router.add("GET", "/inventory/instances/{id}", get_instance, "mod-inventory", "inventory.instances.item.get")
