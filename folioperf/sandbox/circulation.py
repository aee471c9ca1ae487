"""mod-circulation's loan endpoints: check-out, check-in and renewal by barcode (and renewal by id), and
`/circulation/loans` with the read-only enrichment the UI shows (docs/folio.md §3.1–§3.3, §4.1–§4.4, §5.1–§5.3).
`/loan-storage/loans` stays a plain RMB collection that bypasses every rule, as mod-circulation-storage does.

Every state change is one transaction that first locks the item row, so concurrent check-outs, check-ins,
renewals and requests on one item run one after the other; the partial unique index on open loans is the
last guard (a violation answers ITEM_HAS_OPEN_LOAN). Errors are collected and answered together as one
422, as mod-circulation does. Its responses are pretty-printed (`"key" : value`), which PTF scripts assert.

A check-in or renewal of an overdue loan charges its overdue fine (fines.py), in the same transaction.
Not simulated: block overrides (`overrideBlocks`, `forceLoanPolicyId`: such a check-out or renewal is
judged as if they were absent), lost item fees (declaring items lost, ageing them to lost and refunds),
notices, and events (Kafka/pubsub).
Loan policies are chosen by the circulation rules (rules.py); due dates as policies.py explains.
"""

from __future__ import annotations

import uuid
from datetime import datetime

import psycopg
from psycopg import sql

from folioperf.sandbox import blocks, fines, lookups, request_queue
from folioperf.sandbox.lookups import ITEM, LOAN, insert_row, iso, now, parse_date, update_item, update_loan, uuid_of
from folioperf.sandbox.policies import (
    PolicyError,
    at_renewal_limit,
    check_out_due_date,
    policy_error,
    renewal_due_date,
)
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.storage import Collection, register_collection, view_page
from folioperf.sandbox.trace import calls
from folioperf.sandbox.validation import parse_date_time
from folioperf.sandbox.web import TEXT, UUID, HttpError, Request, Response, Router, Unprocessable, error, json_response

MODULE = "mod-circulation"
PATRON_ACTION_SESSION = BY_NAME["patron_action_session"]
CHECK_IN = BY_NAME["check_in"]
# Item statuses check-out refuses (CheckOutValidators / ItemStatusValidator); "Checked out" has its own message
NOT_FOR_CHECK_OUT = ("Declared lost", "Claimed returned", "Intellectual item", "Aged to lost")
NOT_FOR_RENEWAL = ("Declared lost", "Claimed returned", "Aged to lost")


def pretty(obj: dict, status: int = 200, location: str | None = None) -> Response:
    """mod-circulation's answer: Jackson's pretty printing, and a Location header for a loan."""
    resp = json_response(obj, status, pretty=True)
    if location:
        resp.headers.append(("Location", location))
    return resp


# -- read-only views ------------------------------------------------------------------------------------
def _item_joins(tenant: str, item_id_sql: str) -> sql.Composable:
    inv = f"{tenant}_mod_inventory_storage"
    return sql.SQL(
        " LEFT JOIN {item} i ON i.id = " + item_id_sql +
        " LEFT JOIN {holdings} h ON h.id = i.holdingsrecordid"
        " LEFT JOIN {instance} inst ON inst.id = h.instanceid"
        " LEFT JOIN {mtype} mt ON mt.id = i.materialtypeid"
        " LEFT JOIN {location} loc ON loc.id = i.effectivelocationid"
        " LEFT JOIN {sp} dsp ON dsp.id = " + uuid_of("i.jsonb->>'inTransitDestinationServicePointId'")
    ).format(item=sql.Identifier(inv, "item"), holdings=sql.Identifier(inv, "holdings_record"),
             instance=sql.Identifier(inv, "instance"), mtype=sql.Identifier(inv, "material_type"),
             location=sql.Identifier(inv, "location"), sp=sql.Identifier(inv, "service_point"))


# mod-circulation's item summary in loans and check-in responses (over the aliases of _item_joins)
_ITEM_SUMMARY = """CASE WHEN i.id IS NULL THEN NULL ELSE jsonb_strip_nulls(jsonb_build_object(
  'id', i.id, 'holdingsRecordId', i.holdingsrecordid, 'instanceId', h.instanceid,
  'title', inst.jsonb->>'title', 'barcode', i.jsonb->>'barcode',
  'contributors', coalesce((SELECT jsonb_agg(jsonb_build_object('name', c->>'name'))
     FROM jsonb_array_elements(coalesce(inst.jsonb->'contributors', '[]'::jsonb)) c), '[]'::jsonb),
  'primaryContributor', (SELECT c->>'name' FROM jsonb_array_elements(coalesce(inst.jsonb->'contributors', '[]'::jsonb)) c
     WHERE c->>'primary' = 'true' LIMIT 1),
  'callNumber', coalesce(i.jsonb->>'itemLevelCallNumber', h.jsonb->>'callNumber'),
  'callNumberComponents', jsonb_strip_nulls(jsonb_build_object(
     'callNumber', coalesce(i.jsonb->>'itemLevelCallNumber', h.jsonb->>'callNumber'),
     'prefix', coalesce(i.jsonb->>'itemLevelCallNumberPrefix', h.jsonb->>'callNumberPrefix'),
     'suffix', coalesce(i.jsonb->>'itemLevelCallNumberSuffix', h.jsonb->>'callNumberSuffix'))),
  'copyNumber', coalesce(i.jsonb->>'copyNumber', h.jsonb->>'copyNumber'),
  'enumeration', i.jsonb->>'enumeration', 'chronology', i.jsonb->>'chronology', 'volume', i.jsonb->>'volume',
  'displaySummary', i.jsonb->>'displaySummary',
  'materialType', CASE WHEN mt.id IS NULL THEN NULL ELSE jsonb_build_object('name', mt.jsonb->>'name') END,
  'location', CASE WHEN loc.id IS NULL THEN NULL ELSE jsonb_build_object('name', loc.jsonb->>'name') END,
  'status', i.jsonb->'status',
  'inTransitDestinationServicePointId', i.jsonb->>'inTransitDestinationServicePointId',
  'inTransitDestinationServicePoint', CASE WHEN dsp.id IS NULL THEN NULL ELSE jsonb_build_object('name', dsp.jsonb->>'name') END
)) END"""

_SERVICE_POINT = ("CASE WHEN {a}.id IS NULL THEN NULL ELSE jsonb_strip_nulls(jsonb_build_object('name', {a}.jsonb->>'name', "
                  "'code', {a}.jsonb->>'code', 'discoveryDisplayName', {a}.jsonb->>'discoveryDisplayName', "
                  "'description', {a}.jsonb->>'description', 'shelvingLagTime', {a}.jsonb->'shelvingLagTime', "
                  "'pickupLocation', {a}.jsonb->'pickupLocation')) END")


def _named(alias: str) -> str:
    return f"CASE WHEN {alias}.id IS NULL THEN NULL ELSE jsonb_build_object('name', {alias}.jsonb->>'name') END"


def loans_view(conn: psycopg.Connection, tenant: str, where: sql.Composable, params: tuple,
               order_by: sql.Composable | None = None, limit: int = 1, offset: int = 0) -> list[dict]:
    """Loans as `/circulation/loans` shows them: the stored loan plus borrower, item, policy names,
    service points, patron group at check-out and the fees still to pay (docs/folio.md §4.2)."""
    circ, users, feesfines = f"{tenant}_mod_circulation_storage", f"{tenant}_mod_users", f"{tenant}_mod_feesfines"
    order = order_by if order_by is not None else sql.SQL("id")
    accounts = BY_NAME["accounts"]
    stmt = sql.SQL(
        "WITH page AS (SELECT row_number() OVER (ORDER BY {order}) AS ord, id, jsonb FROM {loan} WHERE {where} "
        "ORDER BY {order} LIMIT %s OFFSET %s) "
        "SELECT p.jsonb || jsonb_strip_nulls(jsonb_build_object("
        "'item', " + _ITEM_SUMMARY + ", "
        "'borrower', CASE WHEN u.id IS NULL THEN NULL ELSE jsonb_strip_nulls(jsonb_build_object("
        "  'firstName', u.jsonb->'personal'->>'firstName', 'lastName', u.jsonb->'personal'->>'lastName',"
        "  'middleName', u.jsonb->'personal'->>'middleName', 'preferredFirstName', u.jsonb->'personal'->>'preferredFirstName',"
        "  'barcode', u.jsonb->>'barcode', 'patronGroup', u.jsonb->>'patronGroup')) END, "
        "'loanPolicy', " + _named("lp") + ", 'overdueFinePolicy', " + _named("ofp") + ", "
        "'lostItemPolicy', " + _named("lip") + ", "
        "'checkoutServicePoint', " + _SERVICE_POINT.format(a="cosp") + ", "
        "'checkinServicePoint', " + _SERVICE_POINT.format(a="cisp") + ", "
        "'patronGroupAtCheckout', CASE WHEN g.id IS NULL THEN NULL ELSE jsonb_build_object('id', g.id, 'name', g.jsonb->>'group') END, "
        "'feesAndFines', jsonb_build_object('amountRemainingToPay', coalesce((SELECT sum((a.jsonb->>'remaining')::numeric) "
        "  FROM {accounts} a WHERE {account_loan} AND lower(a.jsonb->'status'->>'name') = 'open'), 0))"
        ")) FROM page p"
    ).format(order=order, loan=LOAN.ident(tenant), where=where, accounts=accounts.ident(tenant),
             account_loan=lookups.field_eq_sql(accounts, tenant, "loanId", "p.id::text"))
    stmt += _item_joins(tenant, uuid_of("p.jsonb->>'itemId'"))
    stmt += sql.SQL(
        " LEFT JOIN {users} u ON u.id = " + uuid_of("p.jsonb->>'userId'") +
        " LEFT JOIN {lp} lp ON lp.id = " + uuid_of("p.jsonb->>'loanPolicyId'") +
        " LEFT JOIN {ofp} ofp ON ofp.id = " + uuid_of("p.jsonb->>'overdueFinePolicyId'") +
        " LEFT JOIN {lip} lip ON lip.id = " + uuid_of("p.jsonb->>'lostItemPolicyId'") +
        " LEFT JOIN {sp} cosp ON cosp.id = " + uuid_of("p.jsonb->>'checkoutServicePointId'") +
        " LEFT JOIN {sp} cisp ON cisp.id = " + uuid_of("p.jsonb->>'checkinServicePointId'") +
        " LEFT JOIN {groups} g ON g.id = " + uuid_of("p.jsonb->>'patronGroupIdAtCheckout'") +
        " ORDER BY p.ord"
    ).format(users=sql.Identifier(users, "users"), lp=sql.Identifier(circ, "loan_policy"),
             ofp=sql.Identifier(feesfines, "overdue_fine_policy"), lip=sql.Identifier(feesfines, "lost_item_fee_policy"),
             sp=sql.Identifier(f"{tenant}_mod_inventory_storage", "service_point"), groups=sql.Identifier(users, "groups"))
    return [r[0] for r in conn.execute(stmt, (*params, limit, offset))]


@calls("GET", "mod-circulation-storage", "/loan-storage/loans..")
def loan_by_id(conn: psycopg.Connection, tenant: str, loan_id: str) -> dict | None:
    rows = loans_view(conn, tenant, sql.SQL("id = %s"), (loan_id,))
    return rows[0] if rows else None


def _summary(conn: psycopg.Connection, tenant: str, item_id: str) -> dict | None:
    stmt = sql.SQL("SELECT " + _ITEM_SUMMARY + " FROM (SELECT 1) one") + _item_joins(tenant, "%s::uuid")
    row = conn.execute(stmt, (item_id,)).fetchone()
    return row[0] if row else None


@calls("GET", "mod-inventory-storage", "/item-storage/items..")
def item_summary(conn: psycopg.Connection, tenant: str, item_id: str) -> dict | None:
    return _summary(conn, tenant, item_id)


@calls("GET", "mod-inventory-storage", "/holdings-storage/holdings..")
def _item_records(conn: psycopg.Connection, tenant: str, item_id: str) -> dict | None:
    """What an item's account records of it (title, call number, location, material type, contributors): its
    holdings, instance, location and material type, which mod-circulation fetches (fetchItemRelatedRecords)."""
    return _summary(conn, tenant, item_id)


def _get_loans(req: Request) -> Response:
    loans, total = view_page(req, LOAN, loans_view)
    return pretty({"loans": loans, "totalRecords": total})


def _get_loan(req: Request) -> Response:
    loan_id = req.params["id"]
    loan = None
    if UUID.match(loan_id):
        with req.sandbox.pool.connection() as conn:
            loan = loan_by_id(conn, req.tenant, loan_id)
    if loan is None:
        raise HttpError(404, f'Loan record with ID "{loan_id}" cannot be found')
    return pretty(loan)


# -- helpers --------------------------------------------------------------------------------------------
def _metadata(user_id: str | None) -> dict:
    stamp = lookups.iso(now())
    return {"createdDate": stamp, "createdByUserId": user_id, "updatedDate": stamp, "updatedByUserId": user_id}


def _text(value: object) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


# -- check-out ------------------------------------------------------------------------------------------
@calls("GET", "mod-circulation-storage", "/loan-storage/loans..")
def _item_limit_error(conn: psycopg.Connection, tenant: str, user: dict, item: dict, policy: dict, rule, barcode: str) -> list[dict]:
    """mod-circulation's ItemLimitValidator: open loans of this user under this loan policy (of the same
    material type / loan type when the matched rule names them) must stay below `itemLimit`."""
    limit = (policy.get("loansPolicy") or {}).get("itemLimit")
    if limit is None:
        return []
    kinds = rule.kinds() if rule is not None else set()
    extra: sql.Composable
    extra, params = sql.SQL(""), {"u": user["id"], "p": policy["id"]}
    if "m" in kinds or "t" in kinds:
        extra = sql.SQL(" AND EXISTS (SELECT 1 FROM {item} i WHERE i.id = " + uuid_of("l.jsonb->>'itemId'") +
                        (" AND i.materialtypeid = %(mt)s::uuid" if "m" in kinds else "") +
                        (" AND coalesce(i.temporaryloantypeid, i.permanentloantypeid) = %(lt)s::uuid" if "t" in kinds else "") +
                        ")").format(item=ITEM.ident(tenant))
        params.update(mt=item.get("materialTypeId"), lt=lookups.item_loan_type_id(item))
    count = conn.execute(
        sql.SQL("SELECT count(*) FROM {loan} l WHERE {user} AND {open} AND l.jsonb->>'loanPolicyId' = %(p)s").format(
            loan=LOAN.ident(tenant), user=lookups.field_eq(LOAN, tenant, "userId", "u"), open=lookups.is_open_loan(tenant))
        + extra,
        params,
    ).fetchall()[0][0]
    if count < int(limit):
        return []
    has_g, has_m, has_t = "g" in kinds, "m" in kinds, "t" in kinds
    described = {
        (True, True, True): ("for combination of patron group, material type and loan type",
                             "ITEM_LIMIT_PATRON_GROUP_MATERIAL_TYPE_LOAN_TYPE"),
        (True, True, False): ("for combination of patron group and material type", "ITEM_LIMIT_PATRON_GROUP_MATERIAL_TYPE"),
        (True, False, True): ("for combination of patron group and loan type", "ITEM_LIMIT_PATRON_GROUP_LOAN_TYPE"),
        (False, True, True): ("for combination of material type and loan type", "ITEM_LIMIT_MATERIAL_TYPE_LOAN_TYPE"),
        (False, True, False): ("for material type", "ITEM_LIMIT_MATERIAL_TYPE"),
        (False, False, True): ("for loan type", "ITEM_LIMIT_LOAN_TYPE"),
    }.get((has_g, has_m, has_t), ("", None))
    message = f"Patron has reached maximum limit of {int(limit)} items {described[0]}".rstrip()
    return [error(message, described[1], itemBarcode=barcode)]


def check_out(req: Request) -> Response:
    """POST /circulation/check-out-by-barcode: docs/folio.md §5.1, checks in that order, errors collected."""
    body = req.json()
    item_barcode, user_barcode = _text(body.get("itemBarcode")), _text(body.get("userBarcode"))
    service_point, proxy_barcode = _text(body.get("servicePointId")), _text(body.get("proxyUserBarcode"))
    loan_date = parse_date(body.get("loanDate")) if body.get("loanDate") is not None else now()
    if loan_date is None:
        raise Unprocessable([error("loanDate is not a valid date-time", loanDate=body.get("loanDate"))], pretty=True)
    tenant, actor, references = req.tenant, req.user_id, req.sandbox.references
    errors: list[dict] = []
    if service_point is None:
        errors.append(error("Check out must be performed at a service point", servicePointId=service_point))
    loan_id = str(uuid.uuid4())  # a client-sent id is ignored, as mod-circulation does
    try:
        with req.sandbox.pool.connection() as conn, conn.transaction():
            user, manual, has_limits = blocks.user_and_blocks(conn, tenant, barcode=user_barcode or "")
            if user is None:
                errors.append(error("Could not find user with matching barcode", "USER_BARCODE_NOT_FOUND", userBarcode=user_barcode))
            else:
                errors += blocks.action_errors(conn, tenant, user, manual, has_limits, "borrowing")
                if "active" not in user:
                    errors.append(error("Cannot determine if user is active or not", userBarcode=user_barcode))
                elif lookups.user_is_inactive(user):
                    errors.append(error("Cannot check out to inactive user", userBarcode=user_barcode))
            proxy = None
            if proxy_barcode is not None:
                proxy = lookups.user_by_barcode(conn, tenant, proxy_barcode)
                if proxy is None:
                    errors.append(error("Could not find user with matching barcode", "USER_BARCODE_NOT_FOUND",
                                        proxyUserBarcode=proxy_barcode))
                elif lookups.user_is_inactive(proxy):
                    errors.append(error("Cannot check out via inactive proxying user", proxyUserBarcode=proxy_barcode))
                if user is not None and proxy is not None and not _valid_proxy(conn, tenant, user["id"], proxy["id"]):
                    errors.append(error("Cannot check out item via proxy when relationship is invalid", proxyUserBarcode=proxy_barcode))
            item = lookups.lock_item(conn, tenant, barcode=item_barcode) if item_barcode else None
            if item is None:
                errors.append(error(f"No item with barcode {item_barcode} could be found", itemBarcode=item_barcode))
                raise Unprocessable(errors, pretty=True)
            state = request_queue.item_context(conn, tenant, item)
            facts = state.facts
            status = (item.get("status") or {}).get("name")
            if status == "Checked out":
                errors.append(error("Item is already checked out", itemBarcode=item_barcode))
            elif status in NOT_FOR_CHECK_OUT:
                errors.append(error(f"{facts['title']} ({facts['materialType']}) (Barcode: {item_barcode}) has the item status "
                                    f"{status} and cannot be checked out", itemBarcode=item_barcode))
            if state.loan is not None:
                errors.append(error("Cannot check out item that already has an open loan", "ITEM_HAS_OPEN_LOAN", itemBarcode=item_barcode))
            first = state.queue[0] if state.queue else None
            if user is not None and first is not None and first.get("requesterId") != user["id"]:
                errors.append(error(f"{facts['title']} (Barcode: {item_barcode}) cannot be checked out to user "
                                    f"{lookups.personal_name(user)} because it has been requested by another patron",
                                    userBarcode=user_barcode))
            if user is None:
                raise Unprocessable(errors, pretty=True)
            location = lookups.item_location_id(item)
            ref = references.get(conn, tenant, need=("locations", location or ""))
            policies, rule = ref.rules.choose(ref.facts(item, user.get("patronGroup")))
            policy = _loan_policy(conn, references, tenant, policies.get("l"))
            due = None
            if policy.get("loanable") is False:
                entry = policy_error(policy, "Item is not loanable", itemBarcode=item_barcode)
                errors.append({**entry, "code": "ITEM_NOT_LOANABLE"})
            else:
                errors += _item_limit_error(conn, tenant, user, item, policy, rule, item_barcode or "")
                try:
                    due = check_out_due_date(policy, loan_date, ref.schedules)
                except PolicyError as exc:
                    errors.append(exc.entry)
            if errors or due is None:
                raise Unprocessable(errors, pretty=True)
            stamp = iso(now())
            loan = {
                "id": loan_id, "userId": user["id"], "itemId": item["id"], "action": "checkedout",
                "status": {"name": "Open"}, "loanDate": iso(loan_date), "dueDate": iso(due),
                "renewalCount": 0, "itemStatus": "Checked out", "loanPolicyId": policy["id"],
                "overdueFinePolicyId": policies.get("o"), "lostItemPolicyId": policies.get("i"),
                "checkoutServicePointId": service_point, "patronGroupIdAtCheckout": user.get("patronGroup"),
                "itemEffectiveLocationIdAtCheckOut": location, "metadata": _metadata(actor),
            }
            if proxy is not None:
                loan["proxyUserId"] = proxy["id"]
            _insert_loan(conn, tenant, {k: v for k, v in loan.items() if v is not None})
            update_item(conn, tenant, item["id"], {"status": {"name": "Checked out", "date": stamp}}, actor)
            _session(conn, tenant, user["id"], loan_id, "Check-out", actor)
            if first is not None and first.get("requesterId") == user["id"]:
                request_queue.close_request(conn, tenant, first, "Closed - Filled", actor)
            body_loan = loan_by_id(conn, tenant, loan_id)
    except psycopg.errors.UniqueViolation:  # a concurrent check-out won the race for the open-loan index
        raise Unprocessable([error("Cannot check out item that already has an open loan", "ITEM_HAS_OPEN_LOAN",
                                   itemBarcode=item_barcode)], pretty=True) from None
    return pretty(body_loan or {}, 201, f"/circulation/loans/{loan_id}")


@calls("GET", "mod-users", "/proxiesfor..")
def _valid_proxy(conn: psycopg.Connection, tenant: str, sponsor_id: str, proxy_id: str) -> bool:
    """An active, unexpired proxyfor record making `proxy_id` a proxy of `sponsor_id`."""
    table = BY_NAME["proxyfor"]
    rows = conn.execute(
        sql.SQL("SELECT jsonb FROM {} WHERE {} AND {}").format(
            table.ident(tenant), lookups.field_eq(table, tenant, "userId", "s"), lookups.field_eq(table, tenant, "proxyUserId", "p")),
        {"s": sponsor_id, "p": proxy_id},
    ).fetchall()
    for (record,) in rows:
        expires = parse_date(record.get("expirationDate"))
        if (record.get("status") or "Active") == "Active" and (expires is None or expires > now()):
            return True
    return False


@calls("POST", "mod-circulation-storage", "/loan-storage/loans")
def _insert_loan(conn: psycopg.Connection, tenant: str, loan: dict) -> None:
    insert_row(conn, LOAN, tenant, loan)


@calls("POST", "mod-circulation-storage", "/check-in-storage/check-ins")
def _record_check_in(conn: psycopg.Connection, tenant: str, record: dict) -> None:
    """A check_in row: mod-circulation-storage's check-in history, one per check-in."""
    insert_row(conn, CHECK_IN, tenant, record)


@calls("GET", "mod-circulation-storage", "/loan-policy-storage/loan-policies..")
def _loan_policy(conn: psycopg.Connection, references: lookups.References, tenant: str, policy_id: str | None) -> dict:
    ref = references.get(conn, tenant, need=("loan_policies", policy_id or ""))
    policy = ref.loan_policies.get(policy_id or "")
    if policy is None:
        raise HttpError(500, f"Loan policy {policy_id} could not be found, please check circulation rules")
    return policy


@calls("POST", "mod-circulation-storage", "/patron-action-session-storage/patron-action-sessions")
def _session(conn: psycopg.Connection, tenant: str, patron_id: str, loan_id: str, action: str, actor: str | None) -> None:
    """A patron_action_session row, which FOLIO's end-of-session notices read."""
    insert_row(conn, PATRON_ACTION_SESSION, tenant, {"patronId": patron_id, "loanId": loan_id, "actionType": action,
                                                  "metadata": _metadata(actor)})


# -- check-in -------------------------------------------------------------------------------------------
def check_in(req: Request) -> Response:
    """POST /circulation/check-in-by-barcode: docs/folio.md §5.2."""
    body = req.json()
    barcode, service_point = _text(body.get("itemBarcode")), _text(body.get("servicePointId"))
    check_in_date = parse_date(body.get("checkInDate"))
    errors = []
    if barcode is None:
        errors.append(error("Checkin request must have an item barcode", itemBarcode=None))
    if service_point is None:
        errors.append(error("Checkin request must have a service point id", servicePointId=None))
    if check_in_date is None:
        errors.append(error("Checkin request must have an check in date", checkInDate=body.get("checkInDate")))
    if errors or barcode is None or service_point is None or check_in_date is None:
        raise Unprocessable(errors, pretty=True)
    tenant, actor = req.tenant, req.user_id
    with req.sandbox.pool.connection() as conn, conn.transaction():
        item = lookups.lock_item(conn, tenant, barcode=barcode)
        if item is None:
            raise Unprocessable([error(f"No item with barcode {barcode} exists", "ITEM_BARCODE_NOT_FOUND", itemBarcode=barcode)],
                                pretty=True)
        previous = (item.get("status") or {}).get("name")
        if previous == "Claimed returned" and not body.get("claimedReturnedResolution"):
            raise Unprocessable([error("Item is claimed returned, a resolution is required to check in", itemBarcode=barcode)], pretty=True)
        state = request_queue.item_context(conn, tenant, item)
        loan, queue = state.loan, state.queue
        location = lookups.item_location_id(item)
        ref = req.sandbox.references.get(conn, tenant, need=("locations", location or ""))
        stamp = now()
        serves_home = ref.serves(service_point, location)
        drop: tuple[str, ...] = ("inTransitDestinationServicePointId",)
        patch: dict = {"lastCheckIn": {"dateTime": iso(check_in_date), "servicePointId": service_point, "staffMemberId": actor}}
        first = queue[0] if queue else None
        fulfilled = None
        if first is not None:
            fulfilled = request_queue.on_check_in(conn, tenant, ref, first, service_point, actor)
            status = {"Open - Awaiting pickup": "Awaiting pickup", "Open - Awaiting delivery": "Awaiting delivery"}.get(
                fulfilled["status"], "In transit")
            if status == "In transit":
                patch["inTransitDestinationServicePointId"] = fulfilled.get("pickupServicePointId")
                drop = ()
        elif serves_home:
            status = "Available"
        else:
            status = "In transit"
            patch["inTransitDestinationServicePointId"] = (ref.locations.get(location or "") or {}).get("primaryServicePoint")
            drop = ()
        patch["status"] = {"name": status, "date": iso(stamp)}
        update_item(conn, tenant, item["id"], patch, actor, drop)
        if loan is not None:
            closed = {"status": {"name": "Closed"}, "action": "checkedin", "returnDate": iso(check_in_date),
                      "systemReturnDate": iso(stamp), "checkinServicePointId": service_point, "itemStatus": status}
            update_loan(conn, tenant, loan["id"], closed, actor)
            _session(conn, tenant, loan["userId"], loan["id"], "Check-in", actor)
            if body.get("claimedReturnedResolution") != "Found by library":  # the library's own find costs nothing
                _overdue_fine(conn, req, {**loan, **closed}, item, check_in_date)
        _record_check_in(conn, tenant, {
            "occurredDateTime": iso(check_in_date), "itemId": item["id"], "servicePointId": service_point,
            "performedByUserId": actor, "itemStatusPriorToCheckIn": previous, "requestQueueSize": len(queue),
            "itemLocationId": location, "metadata": _metadata(actor)})
        loan_view = loan_by_id(conn, tenant, loan["id"]) if loan is not None else None
        summary = (loan_view or {}).get("item") or item_summary(conn, tenant, item["id"]) or {}
        requester = lookups.user_by_id(conn, tenant, fulfilled["requesterId"]) if fulfilled else None
    response: dict = {}
    if loan_view is not None:
        response["loan"] = loan_view
    response["item"] = summary
    response["staffSlipContext"] = _staff_slip_context(summary, ref, service_point, fulfilled, requester, iso(check_in_date))
    response["inHouseUse"] = previous == "Available" and not queue and serves_home
    return pretty(response)


def _overdue_fine(conn: psycopg.Connection, req: Request, loan: dict, item: dict, returned: datetime | None) -> None:
    """The overdue fine of a loan returned at `returned`, or renewed (None), as fines.py charges it."""
    tenant, references = req.tenant, req.sandbox.references
    ref = references.get(conn, tenant, need=("locations", lookups.item_location_id(item) or ""))
    fines.charge_overdue_fine(
        conn, tenant, references, ref, loan, item, returned=returned, renewal=returned is None, actor=req.user_id,
        loan_policy=lambda: _loan_policy(conn, references, tenant, loan.get("loanPolicyId")),
        item_records=lambda: _item_records(conn, tenant, item["id"]))


def _staff_slip_context(item: dict, ref: lookups.Reference, service_point: str | None, request: dict | None,
                        requester: dict | None, checked_in: str) -> dict:
    """The tokens FOLIO's transit and hold slips are filled from."""
    to_sp = ref.service_points.get(item.get("inTransitDestinationServicePointId") or "") or {}
    context: dict = {"item": {k: v for k, v in {
        "title": item.get("title"), "barcode": item.get("barcode"), "status": (item.get("status") or {}).get("name"),
        "primaryContributor": item.get("primaryContributor"),
        "allContributors": "; ".join(c.get("name", "") for c in item.get("contributors", [])),
        "enumeration": item.get("enumeration"), "volume": item.get("volume"), "chronology": item.get("chronology"),
        "materialType": (item.get("materialType") or {}).get("name"), "callNumber": item.get("callNumber"),
        "lastCheckedInDateTime": checked_in,
        "fromServicePoint": (ref.service_points.get(service_point or "") or {}).get("name"),
        "toServicePoint": to_sp.get("name"),
        "effectiveLocationSpecific": (item.get("location") or {}).get("name"),
    }.items() if v is not None}}
    if request is not None:
        context["request"] = {k: v for k, v in {
            "requestID": request.get("id"), "requestDate": request.get("requestDate"),
            "requestExpirationDate": request.get("requestExpirationDate"),
            "holdShelfExpirationDate": request.get("holdShelfExpirationDate"),
            "servicePointPickup": (ref.service_points.get(request.get("pickupServicePointId") or "") or {}).get("name"),
            "patronComments": request.get("patronComments")}.items() if v is not None}
    if requester is not None:
        personal = requester.get("personal") or {}
        context["requester"] = {k: v for k, v in {
            "firstName": personal.get("firstName"), "lastName": personal.get("lastName"),
            "middleName": personal.get("middleName"), "barcode": requester.get("barcode")}.items() if v is not None}
    return context


# -- renewal --------------------------------------------------------------------------------------------
def _renew(req: Request, by_barcode: bool) -> Response:
    """POST /circulation/renew-by-barcode and /renew-by-id: docs/folio.md §4.4, §5.3."""
    body = req.json()
    tenant, actor = req.tenant, req.user_id
    if by_barcode:
        item_key, user_key = _text(body.get("itemBarcode")), _text(body.get("userBarcode"))
        missing = [error("Renewal request must have an item barcode", itemBarcode=None)] if item_key is None else []
        missing += [error("Renewal request must have a user barcode", userBarcode=None)] if user_key is None else []
    else:
        item_key, user_key = _text(body.get("itemId")), _text(body.get("userId"))
        missing = [error("Renewal request must have an item ID", itemId=None)] if item_key is None else []
        missing += [error("Renewal request must have a user ID", userId=None)] if user_key is None else []
    if missing:
        raise Unprocessable(missing, pretty=True)
    with req.sandbox.pool.connection() as conn, conn.transaction():
        if by_barcode:
            item = lookups.lock_item(conn, tenant, barcode=item_key)
            if item is None:
                raise Unprocessable([error(f"No item with barcode {item_key} exists", "ITEM_BARCODE_NOT_FOUND",
                                           itemBarcode=item_key)], pretty=True)
        else:
            item = lookups.lock_item(conn, tenant, item_id=item_key) if UUID.match(item_key or "") else None
            if item is None:
                raise Unprocessable([error(f"No item with ID {item_key} exists", itemId=item_key)], pretty=True)
        state = request_queue.item_context(conn, tenant, item)
        loan, queue = state.loan, state.queue
        if loan is None:  # FOLIO uses this message for "none" as well as "more than one" (docs/folio.md §4.4)
            raise HttpError(500, f"More than one open loan for item {item.get('barcode')}", TEXT)
        user, manual, has_limits = blocks.user_and_blocks(conn, tenant, user_id=loan.get("userId"))
        if user is None:
            raise Unprocessable([error("user is not found", userId=loan.get("userId"))], pretty=True)
        if by_barcode and user.get("barcode") != user_key:
            raise Unprocessable([error("Cannot renew item checked out to different user", "ITEM_CHECKED_OUT_TO_DIFFERENT_USER",
                                       userBarcode=user_key)], pretty=True)
        if not by_barcode and user["id"] != user_key:
            raise Unprocessable([error("Cannot renew item checked out to different user", "ITEM_CHECKED_OUT_TO_DIFFERENT_USER",
                                       userId=user_key)], pretty=True)
        errors = blocks.action_errors(conn, tenant, user, manual, has_limits, "renewals")
        if lookups.user_is_inactive(user):
            errors.append(error("Cannot renew loan when user is inactive or expired", userId=user["id"]))
        references = req.sandbox.references
        ref = references.get(conn, tenant, need=("locations", lookups.item_location_id(item) or ""))
        policy = _loan_policy(conn, references, tenant, ref.policies(item, user.get("patronGroup")).get("l"))
        first_type = queue[0].get("requestType") if queue else None
        errors += _renewal_errors(policy, loan, item, queue)
        stamp = now()
        proposed = None
        if policy.get("loanable") is not False and policy.get("renewable") is not False:
            try:
                proposed = renewal_due_date(policy, loan, stamp, ref.schedules, first_type == "Hold")
                current = parse_date(loan.get("dueDate"))
                if current is not None and proposed <= current:
                    errors.append(policy_error(policy, "renewal would not change the due date"))
            except PolicyError as exc:
                errors.append(exc.entry)
        if errors or proposed is None:
            raise Unprocessable(errors, pretty=True)
        update_loan(conn, tenant, loan["id"], {
            "action": "renewed", "renewalCount": int(loan.get("renewalCount") or 0) + 1, "dueDate": iso(proposed),
            "loanPolicyId": policy["id"]}, actor, drop=("actionComment",))
        _overdue_fine(conn, req, loan, item, None)  # the loan as it was before the renewal
        body_loan = loan_by_id(conn, tenant, loan["id"])
    return pretty(body_loan or {}, 200, f"/circulation/loans/{loan['id']}")


def _renewal_errors(policy: dict, loan: dict, item: dict, queue: list[dict]) -> list[dict]:
    """RegularRenewalStrategy.validateIfRenewIsAllowed, in its order."""
    errors = []
    first = queue[0] if queue else None
    if first is not None and first.get("requestType") == "Recall":
        errors.append(error("items cannot be renewed when there is an active recall request", **{"request id": first.get("id")}))
    if policy.get("loanable") is False:
        errors.append(policy_error(policy, "item is not loanable"))
    elif policy.get("renewable") is False:
        errors.append({**policy_error(policy, "loan is not renewable"), "code": "LOAN_NOT_RENEWABLE"})
    holds = ((policy.get("requestManagement") or {}).get("holds") or {})
    if first is not None and first.get("requestType") == "Hold" and holds.get("renewItemsWithRequest") is False:
        errors.append(policy_error(policy, "Items with this loan policy cannot be renewed when there is an active, pending hold request"))
    status = (item.get("status") or {}).get("name")
    if status in NOT_FOR_RENEWAL:
        errors.append(error(f"item is {status}", itemId=item["id"]))
    if policy.get("renewable") is not False and at_renewal_limit(policy, loan):
        errors.append({**policy_error(policy, "loan at maximum renewal number"), "code": "LOAN_RENEWAL_LIMIT_REACHED"})
    return errors


def renew_by_barcode(req: Request) -> Response:
    return _renew(req, by_barcode=True)


def renew_by_id(req: Request) -> Response:
    return _renew(req, by_barcode=False)


def _storage_loan(req: Request, conn: psycopg.Connection, record: dict, stored: dict | None) -> None:
    """mod-circulation-storage's LoanService: an open loan needs a user (422), loan and return dates must
    parse (400, every message on its own line)."""
    if (record.get("status") or {}).get("name", "").lower() == "open" and not record.get("userId"):
        raise Unprocessable([{"message": "Open loan must have a user ID", "parameters": []}])
    problems = [f"{label} date must be a date time (in RFC3339 format)"
                for label, key in (("loan", "loanDate"), ("return", "returnDate"))
                if (key == "loanDate" or record.get(key) is not None) and parse_date_time(record.get(key)) is None]
    if problems:
        raise HttpError(400, "\n".join(problems))


COLLECTIONS: tuple[Collection, ...] = (
    Collection("/loan-storage/loans", "loan", "loans", "mod-circulation-storage", "circulation-storage.loans",
               prepare=_storage_loan),
    Collection("/patron-action-session-storage/patron-action-sessions", "patron_action_session", "patronActionSessions",
               "mod-circulation-storage", "patron-action-session-storage.patron-action-sessions"),
    Collection("/check-in-storage/check-ins", "check_in", "checkIns", "mod-circulation-storage", "check-in-storage.check-ins"),
)


def register(router: Router) -> None:
    router.add("POST", "/circulation/check-out-by-barcode", check_out, MODULE, "circulation.check-out-by-barcode.post")
    router.add("POST", "/circulation/check-in-by-barcode", check_in, MODULE, "circulation.check-in-by-barcode.post")
    router.add("POST", "/circulation/renew-by-barcode", renew_by_barcode, MODULE, "circulation.renew-by-barcode.post")
    router.add("POST", "/circulation/renew-by-id", renew_by_id, MODULE, "circulation.renew-by-id.post")
    router.add("GET", "/circulation/loans", _get_loans, MODULE, "circulation.loans.collection.get")
    router.add("GET", "/circulation/loans/{id}", _get_loan, MODULE, "circulation.loans.item.get")
    for c in COLLECTIONS:
        register_collection(router, c)
