"""mod-patron, the discovery-layer API (docs/folio.md §4.7): holds on an instance or an item and a patron's
account. It forwards to the same request logic `/circulation/requests[/instances]` runs, inside the
sandbox instead of over HTTP, and answers with mod-patron's own shapes. Its error mapping: a downstream
422 passes through as `{"errors": [...]}`, a downstream 400 becomes 500 text, 404 passes through as text;
path ids must match mod-patron's uuid regex (versions 1-5) or the answer is RMB's 400.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Callable

import psycopg
from psycopg import sql

from folioperf.sandbox import cql, lookups, request_queue, validation
from folioperf.sandbox.circulation import loans_view
from folioperf.sandbox.lookups import LOAN, REQUEST, iso, now, parse_date
from folioperf.sandbox.request_queue import ALLOWED_STATUSES
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.storage import select_page
from folioperf.sandbox.web import (
    PATRON_UUID,
    HttpError,
    Request,
    Response,
    Router,
    Unprocessable,
    error,
    json_response,
)

MODULE = "mod-patron"
ACCOUNTS = BY_NAME["accounts"]


def _path_uuid(req: Request, name: str) -> str:
    value = req.params[name]
    if not PATRON_UUID.match(value):
        raise HttpError(400, f"'{name}' parameter is incorrect. parameter value {{{value}}} is not valid: must match "
                             f'"{PATRON_UUID.pattern}"')
    return value


def _hold_body(req: Request) -> dict:
    """The hold through mod-patron's `hold.json` (RMB: unknown fields allowed, requestDate a date-time)."""
    return validation.validate("mod-patron/hold", req.json())


def _item(request: dict) -> dict:
    """mod-patron's hold/loan item: instanceId, itemId, title and the contributors as `author`."""
    instance = request.get("instance") or {}
    names = "; ".join(c.get("name", "") for c in instance.get("contributorNames") or [])
    return {k: v for k, v in {"instanceId": request.get("instanceId"), "itemId": request.get("itemId"),
                              "title": instance.get("title"), "author": names or None}.items() if v is not None}


def hold(request: dict) -> dict:
    """mod-patron's `hold` shape of a circulation request (HoldHelpers.getHold)."""
    return {k: v for k, v in {
        "requestId": request.get("id"), "item": _item(request), "requestDate": request.get("requestDate"),
        "expirationDate": request.get("requestExpirationDate"), "pickupLocationId": request.get("pickupServicePointId"),
        "status": request.get("status"), "queuePosition": request.get("position"),
        "patronComments": request.get("patronComments")}.items() if v is not None}


def _place(req: Request, create: Callable[[psycopg.Connection, lookups.References, str, dict, str | None], str],
           body: dict) -> Response:
    """Run mod-circulation's request creation and answer as mod-patron does."""
    try:
        with req.sandbox.pool.connection() as conn, conn.transaction():
            request_id = create(conn, req.sandbox.references, req.tenant, body, req.user_id)
            created = request_queue.request_by_id(conn, req.tenant, request_id)
    except Unprocessable as exc:
        return json_response({"errors": exc.errors}, 422)
    except HttpError as exc:
        if exc.status == 400:
            raise HttpError(500, exc.body) from None
        raise
    return json_response(hold(created or {}), 201)


def instance_hold(req: Request) -> Response:
    """POST /patron/account/{id}/instance/{instanceId}/hold → an instance-level request (Page, Recall, Hold)."""
    patron_id, instance_id = _path_uuid(req, "id"), _path_uuid(req, "instanceId")
    body = _hold_body(req)
    forwarded = {"instanceId": instance_id, "requesterId": patron_id, "requestLevel": "Item",
                 "requestDate": iso(parse_date(body["requestDate"]) or now()), "pickupServicePointId": body["pickupLocationId"],
                 "patronComments": body.get("patronComments")}
    if body.get("expirationDate"):
        forwarded["requestExpirationDate"] = body["expirationDate"]
    return _place(req, request_queue.create_instance_request, forwarded)


def item_hold(req: Request) -> Response:
    """POST /patron/account/{id}/item/{itemId}/hold → an item-level request whose type is the first of the
    request policy's types the item's status allows (mod-patron's RequestObjectFactory)."""
    patron_id, item_id = _path_uuid(req, "id"), _path_uuid(req, "itemId")
    body = _hold_body(req)
    with req.sandbox.pool.connection() as conn:
        item = conn.execute(sql.SQL("SELECT jsonb FROM {} WHERE id = %s::uuid").format(lookups.ITEM.ident(req.tenant)),
                            (item_id,)).fetchone()
        user = lookups.user_by_id(conn, req.tenant, patron_id)
        if item is None:
            raise HttpError(404, f"Item with id {item_id} not found")
        if user is None:
            raise HttpError(404, "User not found")
        item = item[0]
        ref = req.sandbox.references.get(conn, req.tenant, need=("locations", lookups.item_location_id(item) or ""))
        policy = ref.request_policies.get(ref.policies(item, user.get("patronGroup")).get("r") or "") or {}
    status = (item.get("status") or {}).get("name")
    request_type = next((t for t in policy.get("requestTypes") or () if status in ALLOWED_STATUSES.get(t, ())), None)
    if request_type is None:
        return json_response({"errors": [error("Cannot find a valid request type for this item", itemId=item_id)]}, 422)
    forwarded = {"requestLevel": "Item", "requestType": request_type, "itemId": item_id, "requesterId": patron_id,
                 "holdingsRecordId": item.get("holdingsRecordId"), "requestDate": iso(parse_date(body["requestDate"]) or now()),
                 "fulfilmentPreference": "Hold Shelf", "pickupServicePointId": body["pickupLocationId"],
                 "patronComments": body.get("patronComments")}
    if body.get("expirationDate"):
        forwarded["requestExpirationDate"] = body["expirationDate"]
    return _place(req, request_queue.create_item_request, forwarded)


def _flag(req: Request, name: str) -> bool:
    return (req.arg(name) or "false").lower() == "true"


def _loan(loan: dict, now_: datetime) -> dict:
    """mod-patron's loan: id, item, loanDate, dueDate and whether it is overdue."""
    item = loan.get("item") or {}
    due = parse_date(loan.get("dueDate"))
    summary = {"instanceId": item.get("instanceId"), "itemId": loan.get("itemId"),
               "instance": {"title": item.get("title"), "contributorNames": item.get("contributors")}}
    return {"id": loan["id"], "item": _item(summary), "loanDate": loan.get("loanDate"), "dueDate": loan.get("dueDate"),
            "overdue": due is not None and due < now_}


def account(req: Request) -> Response:
    """GET /patron/account/{id}: totals always; loans, holds and charges when asked for (includeLoans,
    includeHolds, includeCharges), `limit`/`offset` applied to each list, with mod-patron's queries."""
    patron_id = _path_uuid(req, "id")
    limit, offset = req.int_arg("limit", 10), req.int_arg("offset", 0)
    tenant, translator = req.tenant, req.sandbox.translator
    open_loans = f"(userId=={patron_id} and status.name==Open)"
    open_requests = f"(requesterId=={patron_id} and status==Open*)"
    with req.sandbox.pool.connection() as conn:
        if lookups.user_by_id(conn, tenant, patron_id) is None:
            raise HttpError(404, "User not found")
        loans, holds = [], []
        if _flag(req, "includeLoans") and limit:
            q = translator.translate(open_loans, LOAN, tenant)
            loans = loans_view(conn, tenant, q.where, q.params, q.order_by, limit, offset)
        if _flag(req, "includeHolds") and limit:
            q = translator.translate(open_requests, REQUEST, tenant)
            holds = request_queue.requests_view(conn, tenant, q.where, q.params, q.order_by, limit, offset)
        total_loans = select_page(conn, translator, LOAN, tenant, open_loans, 0, 0)[1]
        total_holds = select_page(conn, translator, REQUEST, tenant, open_requests, 0, 0)[1]
        charges = _charges(conn, translator, tenant, f"(userId=={patron_id} and status.name==Open)")
    stamp = now()
    return json_response({
        "id": patron_id,
        "totalCharges": {"amount": round(sum(c["chargeAmount"]["amount"] for c in charges), 2), "isoCurrencyCode": "USD"},
        "totalChargesCount": len(charges),
        "totalLoans": total_loans,
        "totalHolds": total_holds,
        "charges": charges[offset:offset + limit] if _flag(req, "includeCharges") else [],
        "holds": [hold(r) for r in holds],
        "loans": [_loan(loan, stamp) for loan in loans],
    })


def _charges(conn: psycopg.Connection, translator: cql.Translator, tenant: str, query: str) -> list[dict]:
    rows, _ = select_page(conn, translator, ACCOUNTS, tenant, query, 10_000, 0)
    charges = []
    for text in rows:
        a = json.loads(text)
        charge = {"chargeAmount": {"amount": float(a.get("remaining") or 0), "isoCurrencyCode": "USD"},
                  "accrualDate": (a.get("metadata") or {}).get("createdDate"),
                  "state": (a.get("paymentStatus") or {}).get("name", "Unknown"), "reason": a.get("feeFineType"),
                  "feeFineId": a.get("feeFineId")}
        if a.get("itemId"):
            charge["item"] = {"itemId": a["itemId"]}
        charges.append({k: v for k, v in charge.items() if v is not None})
    return charges


def register(router: Router) -> None:
    router.add("GET", "/patron/account/{id}", account, MODULE, "patron.account.item.get")
    router.add("POST", "/patron/account/{id}/instance/{instanceId}/hold", instance_hold, MODULE, "patron.hold.instance.item.post")
    router.add("POST", "/patron/account/{id}/item/{itemId}/hold", item_hold, MODULE, "patron.hold.item.post")
