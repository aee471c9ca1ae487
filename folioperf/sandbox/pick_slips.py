"""mod-circulation's pick slips, `GET /circulation/pick-slips/{servicePointId}` (PickSlipsResource, SlipsResource,
StaffSlipsRequestFetchService and the mappers StaffSlipMapper, InventoryMapper, RequestMapper, UserMapper of
mod-circulation 24.4): what a service point's staff print to fetch paged items from the shelves.

1. The locations whose primary service point is this one (up to 1000, `primaryServicePoint==<id>`).
2. The open Page requests for items at those locations: requestType "Page", status "Open - Not yet filled" and the
   request's stored `item.itemEffectiveLocationId` (the location mod-circulation stores with a request since 24.3;
   up to 24.3 the resource looked up the Paged items at the locations instead, so here an item moved since it was
   requested is listed under its request's location).
3. Each request's item with its holdings, instance, material type, loan type and location (with its library, campus
   and institution), its requester with patron group and addresses, and its pickup service point.

Each slip is `{item, request, requester, currentDateTime}`. The item and requester contexts keep every key
mod-circulation writes with Vert.x's `JsonObject.put`, nulls included; every item gets the service point's name
as `effectiveLocationPrimaryServicePointName`. The answer is `{"pickSlips": [...], "totalRecords": n}`,
pretty-printed like all of mod-circulation's answers.

Not reproduced: the circulation setting `printEventLogFeature`, which empties the list when print logging is off
(the sandbox keeps no circulation settings); the requesters' department names (the token is ""); and
`primaryCountry`, the display name Java's Locale gives an address's country code (null here).
"""

from __future__ import annotations

import uuid

import psycopg
from psycopg import sql

from folioperf.folio_layout import index_expression
from folioperf.sandbox.lookups import REQUEST, field_eq, iso, now, parse_date
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.trace import calls
from folioperf.sandbox.web import HttpError, Request, Response, Router, json_response

MODULE = "mod-circulation"
LOCATIONS_LIMIT = 1000  # SlipsResource's PageLimit.oneThousand()
OPEN_NOT_YET_FILLED = "Open - Not yet filled"
LOCATION, USERS = BY_NAME["location"], BY_NAME["users"]


def _inv(tenant: str, table: str) -> sql.Identifier:
    return sql.Identifier(f"{tenant}_mod_inventory_storage", table)


@calls("GET", "mod-inventory-storage", "/locations..")
def _locations(conn: psycopg.Connection, tenant: str, service_point_id: str) -> dict[str, dict]:
    """The service point's locations with the names of their library, campus and institution
    (LocationRepository.fetchLibraries, fetchCampuses, fetchInstitutions)."""
    rows = conn.execute(sql.SQL(
        "SELECT l.jsonb, lib.jsonb->>'name', camp.jsonb->>'name', inst.jsonb->>'name' "
        "FROM (SELECT * FROM {location} WHERE {where} ORDER BY id LIMIT %(limit)s) l "
        "LEFT JOIN {library} lib ON lib.id = l.libraryid LEFT JOIN {campus} camp ON camp.id = l.campusid "
        "LEFT JOIN {institution} inst ON inst.id = l.institutionid ORDER BY l.id"
    ).format(location=LOCATION.ident(tenant), library=_inv(tenant, "loclibrary"), campus=_inv(tenant, "loccampus"),
             institution=_inv(tenant, "locinstitution"), where=field_eq(LOCATION, tenant, "primaryServicePoint", "sp")),
        {"sp": service_point_id, "limit": LOCATIONS_LIMIT}).fetchall()
    return {loc["id"]: {**loc, "libraryName": lib, "campusName": campus, "institutionName": institution}
            for loc, lib, campus, institution in rows}


@calls("GET", "mod-circulation-storage", "/request-storage/requests..")
def _page_requests(conn: psycopg.Connection, tenant: str, location_ids: list[str]) -> list[dict]:
    """`requestType=="Page" and status=="Open - Not yet filled"` and `item.itemEffectiveLocationId` one of the
    locations (MultipleCqlIndexValuesCriteria), without a limit; the index on that field serves it."""
    index = REQUEST.index("item.itemEffectiveLocationId")
    assert index is not None
    stmt = sql.SQL("SELECT jsonb FROM {request} WHERE {page} AND {open} AND left({location}, 600) = ANY(%(locations)s) "
                   "ORDER BY id").format(
        request=REQUEST.ident(tenant), page=field_eq(REQUEST, tenant, "requestType", "type"),
        open=field_eq(REQUEST, tenant, "status", "status"), location=index_expression(REQUEST, tenant, index))
    return [r[0] for r in conn.execute(stmt, {"type": "Page", "status": OPEN_NOT_YET_FILLED,
                                              "locations": [i.lower() for i in location_ids]})]


@calls("GET", "mod-inventory-storage", "/item-storage/items..")
def _items(conn: psycopg.Connection, tenant: str, item_ids: list[str]) -> dict[str, dict]:
    """The items (ItemRepository.fetchFor) with their holdings, instance, material type and loan type."""
    rows = conn.execute(sql.SQL(
        "SELECT i.jsonb, h.jsonb, inst.jsonb, mt.jsonb->>'name', lt.jsonb->>'name' FROM {item} i "
        "LEFT JOIN {holdings} h ON h.id = i.holdingsrecordid LEFT JOIN {instance} inst ON inst.id = h.instanceid "
        "LEFT JOIN {mtype} mt ON mt.id = i.materialtypeid "
        "LEFT JOIN {ltype} lt ON lt.id = coalesce(i.temporaryloantypeid, i.permanentloantypeid) "
        "WHERE i.id = ANY(%s::uuid[])"
    ).format(item=_inv(tenant, "item"), holdings=_inv(tenant, "holdings_record"), instance=_inv(tenant, "instance"),
             mtype=_inv(tenant, "material_type"), ltype=_inv(tenant, "loan_type")), (item_ids,)).fetchall()
    return {item["id"]: {"item": item, "holdings": holdings or {}, "instance": instance or {}, "materialType": mt,
                         "loanType": lt} for item, holdings, instance, mt, lt in rows}


@calls("GET", "mod-users", "/users..")
def _users(conn: psycopg.Connection, tenant: str, user_ids: list[str]) -> dict[str, dict]:
    """The requesters (UserRepository.findUsersForRequests) with their patron group's name."""
    rows = conn.execute(sql.SQL(
        "SELECT u.jsonb, g.jsonb->>'group' FROM {users} u LEFT JOIN {groups} g ON g.id = u.patrongroup "
        "WHERE u.id = ANY(%s::uuid[])"
    ).format(users=USERS.ident(tenant), groups=BY_NAME["groups"].ident(tenant)), (user_ids,)).fetchall()
    return {user["id"]: {**user, "patronGroupName": group} for user, group in rows}


@calls("GET", "mod-inventory-storage", "/service-points..")
def _service_points(conn: psycopg.Connection, tenant: str, ids: list[str]) -> dict[str, dict]:
    rows = conn.execute(sql.SQL("SELECT jsonb FROM {} WHERE id = ANY(%s::uuid[])").format(
        BY_NAME["service_point"].ident(tenant)), (ids,)).fetchall()
    return {r[0]["id"]: r[0] for r in rows}


@calls("GET", "mod-users", "/addresstypes..")
def _address_types(conn: psycopg.Connection, tenant: str, ids: list[str]) -> dict[str, str]:
    rows = conn.execute(sql.SQL("SELECT id::text, jsonb->>'addressType' FROM {} WHERE id = ANY(%s::uuid[])").format(
        BY_NAME["addresstype"].ident(tenant)), (ids,)).fetchall()
    return dict(rows)


def _joined(values: object) -> str:
    return "; ".join(str(v) for v in values or () if v is not None) if isinstance(values, list) else ""


def _date(value: object) -> str | None:
    """JsonPropertyWriter.write of a ZonedDateTime: UTC with milliseconds."""
    parsed = parse_date(value)
    return iso(parsed) if parsed is not None else None


def item_context(found: dict, location: dict | None) -> dict:
    """InventoryMapper.createItemContext (and createInstanceContext for the instance's part)."""
    item, holdings, instance = found["item"], found["holdings"], found["instance"]
    contributors = [c for c in instance.get("contributors") or () if isinstance(c, dict)]
    components = item.get("effectiveCallNumberComponents") or {}
    context = {
        "title": instance.get("title"), "instanceHrid": instance.get("hrid"),
        "primaryContributor": next((c.get("name") for c in contributors if c.get("primary")), None),
        "allContributors": _joined([c.get("name") for c in contributors]),
        "datesOfPublication": _joined([p.get("dateOfPublication") for p in instance.get("publication") or ()
                                       if isinstance(p, dict)]),
        "editions": _joined(instance.get("editions")),
        "physicalDescriptions": _joined(instance.get("physicalDescriptions")),
        "barcode": item.get("barcode"), "status": (item.get("status") or {}).get("name"),
        "enumeration": item.get("enumeration"), "volume": item.get("volume"), "chronology": item.get("chronology"),
        "yearCaption": _joined(item.get("yearCaption")), "materialType": found["materialType"],
        "loanType": found["loanType"], "copy": item.get("copyNumber") or holdings.get("copyNumber") or "",
        "numberOfPieces": item.get("numberOfPieces"), "displaySummary": item.get("displaySummary"),
        "descriptionOfPieces": item.get("descriptionOfPieces"), "accessionNumber": item.get("accessionNumber"),
        "administrativeNotes": _joined(item.get("administrativeNotes")),
    }
    if location is not None:
        context.update(effectiveLocationSpecific=location.get("name"), effectiveLocationLibrary=location.get("libraryName"),
                       effectiveLocationCampus=location.get("campusName"),
                       effectiveLocationInstitution=location.get("institutionName"),
                       effectiveLocationDiscoveryDisplayName=location.get("discoveryDisplayName"))
    if components:
        context.update(callNumber=components.get("callNumber"), callNumberPrefix=components.get("prefix"),
                       callNumberSuffix=components.get("suffix"))
    checked_in = _date((item.get("lastCheckIn") or {}).get("dateTime"))
    if checked_in:
        context["lastCheckedInDateTime"] = checked_in
    return context


def request_context(request: dict, pickup: dict | None, address_type: str | None) -> dict:
    """RequestMapper.createRequestContext: only what the request has."""
    context = {"requestID": request.get("id"), "servicePointPickup": (pickup or {}).get("name"),
               "requestDate": _date(request.get("requestDate")),
               "requestExpirationDate": _date(request.get("requestExpirationDate")),
               "holdShelfExpirationDate": _date(request.get("holdShelfExpirationDate")),
               "additionalInfo": request.get("cancellationAdditionalInformation"),
               "deliveryAddressType": address_type, "patronComments": request.get("patronComments")}
    return {k: v for k, v in context.items() if v is not None}


_ADDRESS = (("addressLine1", "addressLine1"), ("addressLine2", "addressLine2"), ("city", "city"), ("region", "region"),
            ("postalCode", "postalCode"))


def requester_context(user: dict, delivery_address_type_id: str | None) -> dict:
    """UserMapper.createUserContext: names, barcode, patron group and departments, the primary address, and the
    address of the request's delivery address type."""
    personal = user.get("personal") or {}
    addresses = [a for a in personal.get("addresses") or () if isinstance(a, dict)]
    context = {"firstName": personal.get("firstName"),
               "preferredFirstName": personal.get("preferredFirstName") or personal.get("firstName"),
               "lastName": personal.get("lastName"), "middleName": personal.get("middleName"),
               "barcode": user.get("barcode"), "patronGroup": user.get("patronGroupName") or "", "departments": ""}
    primary = next((a for a in addresses if a.get("primaryAddress") is True), None)
    if primary is not None:
        context.update({f"primary{key[:1].upper()}{key[1:]}": primary.get(field) for key, field in _ADDRESS})
        context.update(primaryStateProvRegion=context.pop("primaryRegion"), primaryZipPostalCode=context.pop("primaryPostalCode"),
                       primaryCountry=None, primaryDeliveryAddressType=primary.get("addressTypeName"))
    delivery = next((a for a in addresses if a.get("addressTypeId") == delivery_address_type_id), None) \
        if delivery_address_type_id else None
    if delivery is not None:
        context.update({key: delivery.get(field) for key, field in _ADDRESS})
        context.update(countryId=delivery.get("countryId"), addressType=delivery.get("addressTypeName"))
    return context


def pick_slips(conn: psycopg.Connection, tenant: str, service_point_id: str) -> dict:
    locations = _locations(conn, tenant, service_point_id)
    requests = _page_requests(conn, tenant, list(locations)) if locations else []
    item_ids = sorted({r["itemId"] for r in requests if r.get("itemId")})
    items = _items(conn, tenant, item_ids) if item_ids else {}
    user_ids = sorted({r[k] for r in requests for k in ("requesterId", "proxyUserId") if r.get(k)})
    users = _users(conn, tenant, user_ids) if user_ids else {}
    address_ids = sorted({r["deliveryAddressTypeId"] for r in requests if r.get("deliveryAddressTypeId")})
    address_types = _address_types(conn, tenant, address_ids) if address_ids else {}
    points = _service_points(conn, tenant, sorted({service_point_id, *(r["pickupServicePointId"] for r in requests
                                                                        if r.get("pickupServicePointId"))}))
    # a found item whose location is not the service point's has an unknown location (Location.unknown); none
    # of them has one when no item is at the service point's locations (fetchLocationDetailsForItems)
    located = any((i["item"].get("effectiveLocationId") in locations) for i in items.values())
    current = iso(now())
    slips = []
    for request in requests:
        found = items.get(request.get("itemId") or "") if located else None
        if found is not None:
            item = item_context(found, locations.get(found["item"].get("effectiveLocationId") or "") or {})
        else:  # createInstanceContext of a request without its item: the request has no instance here
            item = {}
        item["effectiveLocationPrimaryServicePointName"] = (points.get(service_point_id) or {}).get("name")
        slip: dict = {"item": item, "request": request_context(request, points.get(request.get("pickupServicePointId") or ""),
                                                               address_types.get(request.get("deliveryAddressTypeId") or ""))}
        requester = users.get(request.get("requesterId") or "")
        if requester is not None:
            slip["requester"] = requester_context(requester, request.get("deliveryAddressTypeId"))
        slip["currentDateTime"] = current
        slips.append(slip)
    if service_point_id not in points:  # addPrimaryServicePointNameToStaffSlipContext: no service point, no name
        for slip in slips:
            slip["item"].pop("effectiveLocationPrimaryServicePointName")
    return {"pickSlips": slips, "totalRecords": len(slips)}


def get_pick_slips(req: Request) -> Response:
    service_point_id = req.params["servicePointId"]
    try:
        service_point_id = str(uuid.UUID(service_point_id))  # UUID.fromString; a failure is Vert.x's default 500
    except ValueError:
        raise HttpError(500, "Internal Server Error") from None
    with req.sandbox.pool.connection() as conn:
        return json_response(pick_slips(conn, req.tenant, service_point_id), pretty=True)


def register(router: Router) -> None:
    router.add("GET", "/circulation/pick-slips/{servicePointId}", get_pick_slips, MODULE, "circulation.pick-slips.get")
