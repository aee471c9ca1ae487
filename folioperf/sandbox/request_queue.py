"""mod-circulation's requests: item-level requests, the instance-level request that picks an item, the
per-item queue, and what check-out and check-in do to it (docs/folio.md §3.4, §4.5, §4.6, §5.4).

- Queue: the open requests of an item, positions 1..n. A new request goes to n+1; closing one removes its
  position and renumbers the rest in two steps (negative, then positive positions) so the unique
  (itemId, position) index never sees a transient duplicate.
- Request type per item status as RequestTypeItemStatusWhiteList, then the request policy the
  circulation rules give (`r`). Page makes the item Paged; Hold and Recall mark the open loan
  (`holdrequested` / `recallrequested`); a Recall shortens the due date to the recall return interval,
  never before the minimum guaranteed loan period.
- Fulfilment preference: both spellings are accepted in bodies (`fulfilmentPreference` until Poppy,
  `fulfillmentPreference` since, docs/folio.md §4.5); new requests are stored and answered with the current
  `fulfillmentPreference`, and records stored with the old spelling (PTF seed data) are read as well.
- Title-level requests are off, as in the sandbox's TLR settings: `requestLevel` other than "Item" is
  refused; a body without `requestLevel` is an item-level request (the PTF bodies send none).
- A client-sent `id` and unknown fields are ignored; the server generates ids.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

import psycopg
from psycopg import sql

from folioperf.sandbox import blocks, lookups
from folioperf.sandbox.lookups import REQUEST, iso, now, parse_date, update_item, update_loan
from folioperf.sandbox.policies import add_period, recall_due_date
from folioperf.sandbox.storage import Collection, register_collection, view_page
from folioperf.sandbox.trace import calls
from folioperf.sandbox.web import UUID, HttpError, Request, Response, Router, Unprocessable, error, json_response, no_content

MODULE = "mod-circulation"
TYPES = ("Hold", "Recall", "Page")
PREFERENCES = ("Hold Shelf", "Delivery")
OPEN = ("Open - Not yet filled", "Open - Awaiting pickup", "Open - In transit", "Open - Awaiting delivery")
CLOSED = ("Closed - Filled", "Closed - Cancelled", "Closed - Unfilled", "Closed - Pickup expired")
_BEING_FULFILLED = ("Checked out", "Awaiting pickup", "Awaiting delivery", "In transit", "Paged", "On order", "In process", "Restricted")
ALLOWED_STATUSES = {  # RequestTypeItemStatusWhiteList (docs/folio.md §5.4)
    "Page": ("Available", "Restricted"),
    "Hold": _BEING_FULFILLED + ("Missing", None),
    "Recall": _BEING_FULFILLED,
}
INSTANCE_ORDER = ("Page", "Recall", "Hold")  # what an instance-level request tries on each item, in order


def preference(request: dict) -> str:
    """The fulfilment preference of a body or a stored request, in either spelling."""
    return request.get("fulfillmentPreference") or request.get("fulfilmentPreference") or "Hold Shelf"


def _position(request: dict) -> int:
    value = request.get("position")
    return value if isinstance(value, int) else 1 << 30


@calls("GET", "mod-circulation-storage", "/request-storage/requests..")
def queue_of_item(conn: psycopg.Connection, tenant: str, item_id: str) -> list[dict]:
    """The item's open requests in queue order."""
    rows = conn.execute(
        sql.SQL("SELECT jsonb FROM {} WHERE {} AND jsonb->>'status' LIKE 'Open%%'").format(
            REQUEST.ident(tenant), lookups.field_eq(REQUEST, tenant, "itemId", "i")),
        {"i": item_id},
    ).fetchall()
    return _in_queue_order([r[0] for r in rows])


def _in_queue_order(requests: list[dict]) -> list[dict]:
    return sorted(requests, key=lambda r: (_position(r), r.get("requestDate") or ""))


def _update(conn: psycopg.Connection, tenant: str, request_id: str, patch: dict, actor: str | None,
            drop: tuple[str, ...] = ()) -> None:
    lookups.patch_record(conn, REQUEST, tenant, request_id, patch, actor, drop)


def renumber(conn: psycopg.Connection, tenant: str, item_id: str) -> None:
    """Positions 1..n for the item's open requests, keeping their order; two steps so the unique
    (itemId, position) index never meets a transient duplicate."""
    table, item = REQUEST.ident(tenant), lookups.field_eq(REQUEST, tenant, "itemId", "i")
    conn.execute(
        sql.SQL(
            "WITH q AS (SELECT id, row_number() OVER (ORDER BY jsonb->'position' NULLS LAST, jsonb->>'requestDate') AS n "
            "FROM {t} WHERE {item} AND jsonb->>'status' LIKE 'Open%%') "
            "UPDATE {t} r SET jsonb = jsonb_set(r.jsonb, '{{position}}', to_jsonb(-q.n)) FROM q "
            "WHERE r.id = q.id AND r.jsonb->'position' IS DISTINCT FROM to_jsonb(q.n)"
        ).format(t=table, item=item),
        {"i": item_id},
    )
    conn.execute(
        sql.SQL("UPDATE {t} SET jsonb = jsonb_set(jsonb, '{{position}}', to_jsonb(-(jsonb->>'position')::int)) "
                "WHERE {item} AND jsonb->>'status' LIKE 'Open%%' AND (jsonb->>'position')::int < 0").format(t=table, item=item),
        {"i": item_id},
    )


@calls("PUT", "mod-circulation-storage", "/request-storage/requests")
def close_request(conn: psycopg.Connection, tenant: str, request: dict, status: str, actor: str | None,
                  extra: dict | None = None) -> None:
    """Close a request (it leaves the queue) and renumber the queue."""
    _update(conn, tenant, request["id"], {"status": status, **(extra or {})}, actor, drop=("position",))
    if request.get("itemId"):
        renumber(conn, tenant, request["itemId"])


def on_check_in(conn: psycopg.Connection, tenant: str, ref: lookups.Reference, first: dict, service_point: str,
                actor: str | None) -> dict:
    """What a check-in does to the first request of the queue (docs/folio.md §5.2); returns it updated."""
    if preference(first) == "Delivery":
        patch: dict = {"status": "Open - Awaiting delivery"}
    elif first.get("pickupServicePointId") == service_point:
        patch = {"status": "Open - Awaiting pickup"}
        if first.get("status") != "Open - Awaiting pickup":
            period = (ref.service_points.get(service_point) or {}).get("holdShelfExpiryPeriod") or {"duration": 3, "intervalId": "Weeks"}
            patch["holdShelfExpirationDate"] = iso(add_period(now(), period))
    else:
        patch = {"status": "Open - In transit"}
    _update(conn, tenant, first["id"], patch, actor)
    return {**first, **patch}


# -- placing requests ----------------------------------------------------------------------------------
@dataclass
class Draft:
    """A request body, normalised."""

    request_date: datetime | None
    requester_id: str | None
    fulfillment: str
    pickup: str | None
    body: dict
    errors: list[dict] = field(default_factory=list)

    @classmethod
    def from_body(cls, body: dict) -> "Draft":
        draft = cls(parse_date(body.get("requestDate")), body.get("requesterId") or None, preference(body),
                    body.get("pickupServicePointId") or None, body)
        level = body.get("requestLevel")
        if level not in (None, "Item"):
            draft.errors.append(error('requestLevel must be one of the following: "Item"', "REQUEST_LEVEL_IS_NOT_ALLOWED",
                                      requestLevel=level))
        if draft.fulfillment not in PREFERENCES:
            draft.errors.append(error("fulfillmentPreference must be one of the following: Hold Shelf, Delivery",
                                      "FULFILLMENT_PREFERENCE_IS_NOT_ALLOWED", fulfillmentPreference=draft.fulfillment))
        return draft


@dataclass
class ItemContext:
    item: dict
    facts: dict
    loan: dict | None
    queue: list[dict]


@dataclass
class Requester:
    user: dict | None
    manual: list[dict]
    has_limits: bool
    _blocked: list[dict] | None = None

    def block_errors(self, conn: psycopg.Connection, tenant: str) -> list[dict]:
        if self._blocked is None:
            self._blocked = blocks.action_errors(conn, tenant, self.user, self.manual, self.has_limits, "requests") if self.user else []
        return self._blocked


@calls("GET", "mod-circulation-storage", "/request-storage/requests..")
def item_context(conn: psycopg.Connection, tenant: str, item: dict) -> ItemContext:
    """What the rules need besides the item row, in one query: the instance's title, identifiers and
    contributors, the material type name, the call number, the open loan and the open requests."""
    inv = f"{tenant}_mod_inventory_storage"
    row = conn.execute(
        sql.SQL(
            "SELECT inst.jsonb->>'title', mt.jsonb->>'name', h.instanceid::text, inst.jsonb->'identifiers', "
            "coalesce(%(call)s, h.jsonb->>'callNumber'), (SELECT jsonb_agg(jsonb_build_object('name', c->>'name')) "
            "  FROM jsonb_array_elements(coalesce(inst.jsonb->'contributors', '[]'::jsonb)) c), "
            "(SELECT l.jsonb FROM {loan} l WHERE {open_loan}), "
            "(SELECT jsonb_agg(r.jsonb) FROM {request} r WHERE {item_requests} AND r.jsonb->>'status' LIKE 'Open%%') "
            "FROM (SELECT 1) one LEFT JOIN {holdings} h ON h.id = %(h)s::uuid LEFT JOIN {instance} inst ON inst.id = h.instanceid "
            "LEFT JOIN {mtype} mt ON mt.id = %(mt)s::uuid"
        ).format(loan=lookups.LOAN.ident(tenant), open_loan=lookups.open_loan_of_item(tenant), request=REQUEST.ident(tenant),
                 item_requests=lookups.field_eq(REQUEST, tenant, "itemId", "item_id"),
                 holdings=sql.Identifier(inv, "holdings_record"), instance=sql.Identifier(inv, "instance"),
                 mtype=sql.Identifier(inv, "material_type")),
        {"item_id": item["id"], "h": item.get("holdingsRecordId"), "mt": item.get("materialTypeId"),
         "call": item.get("itemLevelCallNumber")},
    ).fetchall()[0]
    title, material, instance_id, identifiers, call_number, contributors, loan, requests = row
    facts = {"title": title, "materialType": material, "instanceId": instance_id, "identifiers": identifiers or [],
             "callNumber": call_number, "contributorNames": contributors or []}
    return ItemContext(item, facts, loan, _in_queue_order(requests or []))


def _validate(conn: psycopg.Connection, tenant: str, ref: lookups.Reference, draft: Draft, ctx: ItemContext,
              requester: Requester, request_type: str) -> list[dict]:
    """The checks of mod-circulation's request creation, in its order, all collected."""
    errors: list[dict] = []
    item, user = ctx.item, requester.user
    if user is None:
        errors.append(error("A valid user and patron group are required. User is null", userId=draft.requester_id))
    if draft.fulfillment == "Hold Shelf":
        if draft.pickup is None:
            errors.append(error("Hold shelf fulfillment requests require a Pickup service point",
                                "HOLD_SHELF_REQUESTS_REQUIRE_PICKUP_SERVICE_POINT", requestId=None))
        else:
            sp = ref.service_points.get(draft.pickup)
            if sp is None:
                errors.append(error("Pickup service point does not exist", pickupServicePointId=draft.pickup))
            elif not sp.get("pickupLocation"):
                errors.append(error("Service point is not a pickup location", "SERVICE_POINT_IS_NOT_PICKUP_LOCATION",
                                    pickupServicePointId=draft.pickup))
    status = (item.get("status") or {}).get("name")
    refused = error(f"{request_type} requests are not allowed for this patron and item combination", requestType=request_type)
    if status not in ALLOWED_STATUSES[request_type]:
        errors.append(refused)
    elif user is not None:
        policy_id = ref.policies(item, user.get("patronGroup")).get("r")
        policy = ref.request_policies.get(policy_id or "")
        if policy is not None and request_type not in (policy.get("requestTypes") or ()):
            errors.append(refused)
    if user is None:
        return errors
    if lookups.user_is_inactive(user):
        errors.append(error("Inactive users cannot make requests", requesterId=user["id"], itemId=item["id"]))
    if ctx.loan is not None and ctx.loan.get("userId") == user["id"]:
        errors.append(error("This requester already has this item on loan", "REQUESTER_ALREADY_HAS_THIS_ITEM_ON_LOAN",
                            itemId=item["id"], userId=user["id"]))
    errors += requester.block_errors(conn, tenant)
    mine = next((r for r in ctx.queue if r.get("requesterId") == user["id"]), None)
    if mine is not None:
        errors.append(error("This requester already has an open request for this item", "ITEM_ALREADY_REQUESTED",
                            requesterId=user["id"], itemId=item["id"], requestId=mine.get("id")))
    return errors


def _place(conn: psycopg.Connection, tenant: str, ref: lookups.Reference, draft: Draft, ctx: ItemContext,
           requester: Requester, request_type: str, actor: str | None) -> str:
    """Store a validated request at the end of the item's queue and apply its effects; returns its id."""
    item, user, body = ctx.item, requester.user or {}, draft.body
    request_id = str(uuid.uuid4())
    location = ref.locations.get(lookups.item_location_id(item) or "") or {}
    retrieval = ref.service_points.get(location.get("primaryServicePoint") or "") or {}
    personal = user.get("personal") or {}
    stamp = iso(now())
    record = {
        "id": request_id, "requestLevel": "Item", "requestType": request_type,
        "requestDate": iso(draft.request_date or now()), "requesterId": user.get("id"), "itemId": item["id"],
        "instanceId": ctx.facts.get("instanceId"), "holdingsRecordId": item.get("holdingsRecordId"),
        "fulfillmentPreference": draft.fulfillment,
        "pickupServicePointId": draft.pickup if draft.fulfillment == "Hold Shelf" else None,
        "deliveryAddressTypeId": body.get("deliveryAddressTypeId") if draft.fulfillment == "Delivery" else None,
        "requestExpirationDate": body.get("requestExpirationDate"), "patronComments": body.get("patronComments"),
        "proxyUserId": body.get("proxyUserId"), "status": "Open - Not yet filled",
        "position": max((_position(r) for r in ctx.queue if _position(r) < 1 << 30), default=0) + 1,
        "instance": {"title": ctx.facts.get("title"), "identifiers": ctx.facts.get("identifiers") or [],
                     "contributorNames": ctx.facts.get("contributorNames") or []},
        # StoredRequestRepresentation (mod-circulation 24.3 on): the item's location and its primary service point,
        # which the pick slips find requests by
        "item": {k: v for k, v in {"barcode": item.get("barcode"), "itemEffectiveLocationId": location.get("id"),
                                   "itemEffectiveLocationName": location.get("name"),
                                   "retrievalServicePointId": retrieval.get("id"),
                                   "retrievalServicePointName": retrieval.get("name")}.items() if v},
        "requester": {k: v for k, v in {"firstName": personal.get("firstName"), "lastName": personal.get("lastName"),
                                         "middleName": personal.get("middleName"), "barcode": user.get("barcode")}.items() if v},
        "searchIndex": {"callNumberComponents": {"callNumber": ctx.facts.get("callNumber")} if ctx.facts.get("callNumber") else {},
                        "pickupServicePointName": (ref.service_points.get(draft.pickup or "") or {}).get("name")},
        "metadata": {"createdDate": stamp, "createdByUserId": actor, "updatedDate": stamp, "updatedByUserId": actor},
    }
    lookups.insert_row(conn, REQUEST, tenant, {k: v for k, v in record.items() if v is not None})
    if request_type == "Page":
        update_item(conn, tenant, item["id"], {"status": {"name": "Paged", "date": stamp}}, actor)
    elif ctx.loan is not None:
        patch: dict = {"action": "holdrequested" if request_type == "Hold" else "recallrequested"}
        if request_type == "Recall":
            policy = ref.loan_policies.get(ctx.loan.get("loanPolicyId") or "")
            due = recall_due_date(policy, ctx.loan, now()) if policy else None
            if due is not None:
                patch.update(dueDate=iso(due), dueDateChangedByRecall=True)
        update_loan(conn, tenant, ctx.loan["id"], patch, actor)
    return request_id


def _requester(conn: psycopg.Connection, tenant: str, requester_id: str | None) -> Requester:
    user, manual, has_limits = blocks.user_and_blocks(conn, tenant, user_id=requester_id or "")
    return Requester(user, manual, has_limits)


def create_item_request(conn: psycopg.Connection, references: lookups.References, tenant: str, body: dict,
                        actor: str | None) -> str:
    """POST /circulation/requests in the caller's transaction; returns the new id or raises the 422."""
    draft = Draft.from_body(body)
    request_type = body.get("requestType")
    errors = list(draft.errors)
    if request_type not in TYPES:
        errors.append(error("requestType must be one of the following: Hold, Recall, Page", requestType=request_type))
    if draft.request_date is None:
        errors.append(error("Request must have a request date", requestDate=body.get("requestDate")))
    item_id = body.get("itemId")
    item = lookups.lock_item(conn, tenant, item_id=item_id) if isinstance(item_id, str) and UUID.match(item_id) else None
    if item is None:
        errors.append(error("Item does not exist", itemId=item_id))
    if errors or item is None:
        raise Unprocessable(errors, pretty=True)
    ref = references.get(conn, tenant, need=("locations", lookups.item_location_id(item) or ""))
    ctx = item_context(conn, tenant, item)
    requester = _requester(conn, tenant, draft.requester_id)
    assert isinstance(request_type, str)  # one of TYPES: checked above
    errors = _validate(conn, tenant, ref, draft, ctx, requester, request_type)
    if errors:
        raise Unprocessable(errors, pretty=True)
    return _place(conn, tenant, ref, draft, ctx, requester, request_type, actor)


def _instance_items(conn: psycopg.Connection, tenant: str, instance_id: str) -> list[dict]:
    """Every item of an instance (through its holdings), locked in id order (no deadlocks between requests)."""
    inv = f"{tenant}_mod_inventory_storage"
    rows = conn.execute(
        sql.SQL("SELECT i.jsonb FROM {item} i JOIN {holdings} h ON h.id = i.holdingsrecordid "
                "WHERE h.instanceid = %s::uuid ORDER BY i.id FOR UPDATE OF i").format(
            item=sql.Identifier(inv, "item"), holdings=sql.Identifier(inv, "holdings_record")),
        (instance_id,),
    ).fetchall()
    return [r[0] for r in rows]


def create_instance_request(conn: psycopg.Connection, references: lookups.References, tenant: str, body: dict,
                            actor: str | None) -> str:
    """POST /circulation/requests/instances with TLR off (docs/folio.md §4.6, §5.4): order the instance's
    items, try Page, Recall, Hold on each, keep the first that succeeds; else 422 with every error."""
    errors = []
    if not body.get("requestDate"):
        errors.append(error("Request must have a request date", requestDate=None))
    elif parse_date(body.get("requestDate")) is None:
        errors.append(error("Request must have a valid request date", requestDate=body.get("requestDate")))
    if not body.get("requesterId"):
        errors.append(error("Request must have a requester id", requesterId=None))
    instance_id = body.get("instanceId")
    if not instance_id:
        errors.append(error("Request must have an instance id", instanceId=None))
    draft = Draft.from_body({**body, "fulfillmentPreference": "Hold Shelf"})
    errors += draft.errors
    if errors:
        raise Unprocessable(errors, pretty=True)
    items = _instance_items(conn, tenant, instance_id) if isinstance(instance_id, str) and UUID.match(instance_id) else []
    if not items:
        raise Unprocessable([error("Cannot create request objects when items list is null or empty", instanceId=instance_id)], pretty=True)
    ref = references.get(conn, tenant)
    contexts = [item_context(conn, tenant, item) for item in items]
    requester = _requester(conn, tenant, draft.requester_id)
    collected: list[dict] = []
    for ctx in _ordered(contexts, ref, draft.pickup):
        for request_type in INSTANCE_ORDER:
            attempt = _validate(conn, tenant, ref, draft, ctx, requester, request_type)
            if not attempt:
                return _place(conn, tenant, ref, draft, ctx, requester, request_type, actor)
            collected += [e for e in attempt if e not in collected]
    raise Unprocessable(collected, pretty=True)


def _ordered(contexts: list[ItemContext], ref: lookups.Reference, pickup: str | None) -> list[ItemContext]:
    """InstanceRequestItemsComparer: available items first (those whose location the pickup service point
    serves before others), then the rest by shortest queue, earliest due date, service point match."""
    def key(ctx: ItemContext) -> tuple:
        available = (ctx.item.get("status") or {}).get("name") == "Available"
        served = ref.serves(pickup, lookups.item_location_id(ctx.item))
        due = (ctx.loan or {}).get("dueDate") or "9999"
        if available:
            return (0, 0 if served else 1, 0, "", 0)
        return (1, 0, len(ctx.queue), due, 0 if served else 1)
    return sorted(contexts, key=key)


# -- views and endpoints -------------------------------------------------------------------------------
def requests_view(conn: psycopg.Connection, tenant: str, where: sql.Composable, params: tuple,
                  order_by: sql.Composable | None = None, limit: int = 1, offset: int = 0) -> list[dict]:
    """Requests as `/circulation/requests` shows them: stored record plus pickupServicePoint and the item's
    current status and location."""
    inv = f"{tenant}_mod_inventory_storage"
    stmt = sql.SQL(
        "WITH page AS (SELECT row_number() OVER (ORDER BY {order}) AS ord, id, jsonb FROM {request} WHERE {where} "
        "ORDER BY {order} LIMIT %s OFFSET %s) "
        "SELECT p.jsonb || jsonb_strip_nulls(jsonb_build_object("
        "'pickupServicePoint', CASE WHEN sp.id IS NULL THEN NULL ELSE jsonb_strip_nulls(jsonb_build_object("
        "  'name', sp.jsonb->>'name', 'code', sp.jsonb->>'code', 'discoveryDisplayName', sp.jsonb->>'discoveryDisplayName',"
        "  'description', sp.jsonb->>'description', 'shelvingLagTime', sp.jsonb->'shelvingLagTime',"
        "  'pickupLocation', sp.jsonb->'pickupLocation')) END, "
        "'item', CASE WHEN i.id IS NULL THEN p.jsonb->'item' ELSE coalesce(p.jsonb->'item', '{{}}'::jsonb) || "
        "  jsonb_strip_nulls(jsonb_build_object('status', i.jsonb->'status'->>'name', 'location', CASE WHEN loc.id IS NULL "
        "  THEN NULL ELSE jsonb_build_object('name', loc.jsonb->>'name', 'code', loc.jsonb->>'code') END)) END"
        ")) FROM page p "
        "LEFT JOIN {item} i ON i.id = " + lookups.uuid_of("p.jsonb->>'itemId'") + " "
        "LEFT JOIN {location} loc ON loc.id = i.effectivelocationid "
        "LEFT JOIN {sp} sp ON sp.id = " + lookups.uuid_of("p.jsonb->>'pickupServicePointId'") + " ORDER BY p.ord"
    ).format(order=order_by if order_by is not None else sql.SQL("id"), request=REQUEST.ident(tenant), where=where,
             item=sql.Identifier(inv, "item"), location=sql.Identifier(inv, "location"), sp=sql.Identifier(inv, "service_point"))
    return [r[0] for r in conn.execute(stmt, (*params, limit, offset))]


def request_by_id(conn: psycopg.Connection, tenant: str, request_id: str) -> dict | None:
    rows = requests_view(conn, tenant, sql.SQL("id = %s"), (request_id,))
    return rows[0] if rows else None


def _get_requests(req: Request) -> Response:
    rows, total = view_page(req, REQUEST, requests_view)
    return json_response({"requests": rows, "totalRecords": total}, pretty=True)


def _get_request(req: Request) -> Response:
    request_id = req.params["id"]
    found = None
    if UUID.match(request_id):
        with req.sandbox.pool.connection() as conn:
            found = request_by_id(conn, req.tenant, request_id)
    if found is None:
        raise HttpError(404, f'Request record with ID "{request_id}" cannot be found')
    return json_response(found, pretty=True)


def _created(conn: psycopg.Connection, tenant: str, request_id: str) -> Response:
    resp = json_response(request_by_id(conn, tenant, request_id) or {}, 201, pretty=True)
    resp.headers.append(("Location", f"/circulation/requests/{request_id}"))
    return resp


def _post_request(req: Request) -> Response:
    body = req.json()
    with req.sandbox.pool.connection() as conn, conn.transaction():
        request_id = create_item_request(conn, req.sandbox.references, req.tenant, body, req.user_id)
        return _created(conn, req.tenant, request_id)


def _post_instance_request(req: Request) -> Response:
    body = req.json()
    with req.sandbox.pool.connection() as conn, conn.transaction():
        request_id = create_instance_request(conn, req.sandbox.references, req.tenant, body, req.user_id)
        return _created(conn, req.tenant, request_id)


_EDITABLE = ("requestExpirationDate", "holdShelfExpirationDate", "pickupServicePointId", "patronComments",
             "deliveryAddressTypeId", "fulfillmentPreference")


def _put_request(req: Request) -> Response:
    """PUT /circulation/requests/{id}: edit the editable fields, or cancel (status "Closed - Cancelled"):
    the request leaves the queue, which is renumbered, and a paged item goes back to Available."""
    request_id = req.params["id"]
    body = req.json()
    if not UUID.match(request_id):
        raise HttpError(404, f'Request record with ID "{request_id}" cannot be found')
    tenant, actor = req.tenant, req.user_id
    with req.sandbox.pool.connection() as conn, conn.transaction():
        row = conn.execute(sql.SQL("SELECT jsonb FROM {} WHERE id = %s").format(REQUEST.ident(tenant)), (request_id,)).fetchone()
        if row is None:
            raise HttpError(404, f'Request record with ID "{request_id}" cannot be found')
        stored = row[0]
        item = lookups.lock_item(conn, tenant, item_id=stored["itemId"]) if UUID.match(stored.get("itemId") or "") else None
        stored = conn.execute(sql.SQL("SELECT jsonb FROM {} WHERE id = %s").format(REQUEST.ident(tenant)), (request_id,)).fetchall()[0][0]
        status = body.get("status", stored.get("status"))
        if status in CLOSED and stored.get("status") in CLOSED:
            raise Unprocessable([error("The request has already been closed", "REQUEST_ALREADY_CLOSED", id=request_id)], pretty=True)
        if status == "Closed - Cancelled":
            extra = {k: body[k] for k in ("cancellationReasonId", "cancellationAdditionalInformation") if body.get(k)}
            extra["cancelledByUserId"] = body.get("cancelledByUserId") or actor
            extra["cancelledDate"] = body.get("cancelledDate") or iso(now())
            close_request(conn, tenant, stored, status, actor, extra)
            if stored.get("requestType") == "Page" and item and (item.get("status") or {}).get("name") == "Paged":
                update_item(conn, tenant, item["id"], {"status": {"name": "Available", "date": iso(now())}}, actor)
        elif status in CLOSED:
            close_request(conn, tenant, stored, status, actor)
        else:
            patch = {k: body[k] for k in _EDITABLE if k in body}
            if "fulfilmentPreference" in body and "fulfillmentPreference" not in body:
                patch["fulfillmentPreference"] = body["fulfilmentPreference"]
            _update(conn, tenant, request_id, patch, actor)
    return no_content()


def _get_queue(req: Request) -> Response:
    item_id = req.params["itemId"]
    with req.sandbox.pool.connection() as conn:
        queue = queue_of_item(conn, req.tenant, item_id) if UUID.match(item_id) else []
        ids = tuple(r["id"] for r in queue)
        rows = requests_view(conn, req.tenant, sql.SQL("id = ANY(%s::uuid[])"), (list(ids),), None, len(ids) or 1) if ids else []
    by_id = {r["id"]: r for r in rows}
    return json_response({"requests": [by_id[i] for i in ids if i in by_id], "totalRecords": len(ids)}, pretty=True)


STORAGE = Collection("/request-storage/requests", "request", "requests", "mod-circulation-storage", "circulation-storage.requests")


def register(router: Router) -> None:
    router.add("GET", "/circulation/requests", _get_requests, MODULE, "circulation.requests.collection.get")
    router.add("POST", "/circulation/requests", _post_request, MODULE, "circulation.requests.item.post")
    router.add("POST", "/circulation/requests/instances", _post_instance_request, MODULE, "circulation.requests.instances.item.post")
    router.add("GET", "/circulation/requests/queue/item/{itemId}", _get_queue, MODULE, "circulation.requests.queue.item.collection.get")
    router.add("GET", "/circulation/requests/{id}", _get_request, MODULE, "circulation.requests.item.get")
    router.add("PUT", "/circulation/requests/{id}", _put_request, MODULE, "circulation.requests.item.put")
    register_collection(router, STORAGE)
