"""Contract tests: the responses and error bodies of every endpoint the built-in workflows and folioclient
use, checked field by field against FOLIO's published JSON schemas (transcribed in contracts.py, with the
module repository and file of each)."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
import requests

from tests.sandbox import contracts as c
from tests.sandbox.inventory_data import CIRC_DESK_1, Api
from tests.sandbox.marc_data import authority_content, insert_records, marc_instance


def conforms(body: dict, shape: c.Shape) -> None:
    found = c.problems(body, shape)
    assert not found, "\n".join(found[:20])


@pytest.fixture(scope="module")
def lent(api: Api) -> dict:
    """A user with an item checked out and a hold on another checked-out item: data for the circulation reads."""
    user, item = api.user(), api.item()
    assert api.check_out(item, user).status_code == 201
    other, holder = api.item(), api.user()
    assert api.check_out(other, api.user()).status_code == 201
    assert api.request(other, holder, "Hold").status_code == 201
    return {"user": user, "item": item, "held": other, "holder": holder}


# -- what the check-in/check-out workflow reads ----------------------------------------------------------------
def test_check_out_page(api, lent):
    user = lent["user"]
    conforms(api.get("/configurations/entries", query="(module==CHECKOUT and configName==other_settings)").json(),
             c.CONFIG_COLLECTION)
    conforms(api.get("/groups").json(), c.GROUP_COLLECTION)
    conforms(api.get("/users", query=f'(barcode=="{user["barcode"]}")').json(), c.USER_COLLECTION)
    conforms(api.get("/accounts", query=f"(userId=={user['id']} and status.name<>Closed)", limit=100).json(), c.ACCOUNT_COLLECTION)
    conforms(api.get("/circulation/loans", query=f"(userId=={user['id']} and status.name<>Closed)", limit=1).json(),
             c.LOAN_COLLECTION)
    conforms(api.get("/circulation/requests", query=f"(requesterId=={lent['holder']['id']})", limit=100).json(),
             c.REQUEST_COLLECTION)
    conforms(api.get("/proxiesfor", query=f"query=(userId=={user['id']})", limit=80).json(), c.PROXY_COLLECTION)
    conforms(api.get(f"/note-links/domain/users/type/user/id/{user['id']}", limit=10000, order="desc", status="assigned").json(),
             c.NOTE_LINKS)
    conforms(api.get("/manualblocks", query=f"userId=={user['id']}").json(), c.MANUAL_BLOCK_COLLECTION)
    conforms(api.get(f"/automated-patron-blocks/{user['id']}", limit=100).json(), c.AUTOMATED_BLOCKS)
    conforms(api.get("/inventory/items", query=f'barcode=="{lent["item"]["barcode"]}"', limit=40).json(),
             c.INVENTORY_ITEM_COLLECTION)


def test_check_out_and_check_in_responses(api):
    item, user = api.item(), api.user()
    out = api.check_out(item, user)
    assert out.status_code == 201
    conforms(out.json(), c.LOAN)
    back = api.check_in(item)
    assert back.status_code == 200
    conforms(back.json(), c.CHECK_IN_RESPONSE)
    conforms(api.get("/staff-slips-storage/staff-slips", limit=1000).json(), c.STAFF_SLIP_COLLECTION)
    conforms(api.get("/service-points", limit=1000).json(), c.SERVICE_POINT_COLLECTION)
    loan = back.json()["loan"]
    conforms(api.get("/lost-item-fees-policies", query=f"id=={loan['lostItemPolicyId']}").json(),
             c.LOST_ITEM_FEE_POLICY_COLLECTION)


def test_mod_inventory_items_send_objects_not_ids(api, lent):
    """mod-inventory's item representation: reference objects, never the storage ids (item.json forbids them)."""
    found = api.get("/inventory/items", query=f'barcode=="{lent["item"]["barcode"]}"').json()
    one = api.get(f"/inventory/items/{lent['item']['id']}").json()
    for item in (found["items"][0], one):
        conforms(item, c.INVENTORY_ITEM)
        for never in ("materialTypeId", "permanentLoanTypeId", "effectiveLocationId", "instanceId", "permanentLocationId"):
            assert never not in item
        assert item["materialType"]["name"] and item["permanentLoanType"]["name"] and item["effectiveLocation"]["name"]
        for always in ("formerIds", "statisticalCodeIds", "administrativeNotes", "notes", "circulationNotes", "yearCaption",
                       "contributorNames", "tags", "isBoundWith", "discoverySuppress", "order", "purchaseOrderLineIdentifier"):
            assert always in item, always
        assert item["_version"] == "1" or item["_version"].isdigit()
    assert "resultInfo" not in found
    missing = api.get(f"/inventory/items/{uuid.uuid4()}")
    assert (missing.status_code, missing.text) == (404, "Not Found")


def test_mod_inventory_instances(api, lent):
    item = api.get(f"/item-storage/items/{lent['item']['id']}").json()
    instance_id = api.get(f"/holdings-storage/holdings/{item['holdingsRecordId']}").json()["instanceId"]
    found = api.get("/inventory/instances", query=f"id=={instance_id}").json()
    conforms(found, c.INVENTORY_INSTANCE_COLLECTION)
    assert "resultInfo" not in found
    one = api.get(f"/inventory/instances/{instance_id}").json()
    conforms(one, c.INVENTORY_INSTANCE)
    assert one["precedingTitles"] == [] and one["isBoundWith"] is False and one["tags"] == {"tagList": []}


def test_storage_records(api, lent):
    item = lent["item"]
    conforms(api.get("/item-storage/items", query=f"id=={item['id']}").json(), c.ITEM_STORAGE_COLLECTION)
    conforms(api.get("/holdings-storage/holdings", query=f"id=={item['holdingsRecordId']}", limit=1000).json(),
             c.HOLDINGS_COLLECTION)
    conforms(api.get("/locations", query="cql.allRecords=1", limit=1000).json(), c.LOCATION_COLLECTION)


# -- renewal, holds, RIH -------------------------------------------------------------------------------------
def test_renewal(api, lent):
    user = api.get(f"/users/{lent['user']['id']}", limit=30).json()
    conforms(user, c.USER)
    loans = api.get("/circulation/loans", query=f"(userId={user['id']}) sortby id", limit=100000).json()
    conforms(loans, c.LOAN_COLLECTION)
    renewed = api.renew(lent["item"], user)
    assert renewed.status_code == 200
    conforms(renewed.json(), c.LOAN)


def test_holds(api):
    soon = datetime.now(timezone.utc)
    stamp = soon.strftime("%Y-%m-%dT%H:%M:%S.000+0000")
    item = api.item()
    instance_id = api.get(f"/holdings-storage/holdings/{item['holdingsRecordId']}").json()["instanceId"]
    hold = api.post(f"/patron/account/{api.user()['id']}/instance/{instance_id}/hold",
                    {"item": {"instanceId": instance_id}, "requestDate": stamp, "pickupLocationId": CIRC_DESK_1})
    assert hold.status_code == 201
    conforms(hold.json(), c.HOLD)
    other = api.item()
    other_instance = api.get(f"/holdings-storage/holdings/{other['holdingsRecordId']}").json()["instanceId"]
    by_instance = api.post("/circulation/requests/instances", {
        "requestDate": stamp, "requesterId": api.user()["id"], "instanceId": other_instance,
        "requestExpirationDate": (soon + timedelta(days=365)).strftime("%Y-%m-%dT%H:%M:%S.000+0000"),
        "pickupServicePointId": CIRC_DESK_1})
    assert by_instance.status_code == 201
    conforms(by_instance.json(), c.REQUEST)
    page = api.request(api.item(), api.user(), "Page")
    assert page.status_code == 201
    conforms(page.json(), c.REQUEST)


def test_retrieving_instances_and_holdings(api, lent):
    conforms(api.get("/source-storage/source-records", instanceHrid="none", limit=1000).json(), c.SOURCE_RECORDS)
    item = lent["item"]
    instance_id = api.get(f"/holdings-storage/holdings/{item['holdingsRecordId']}").json()["instanceId"]
    conforms(api.get("/holdings-storage/holdings", query=f"instanceId=={instance_id}", limit=1000).json(), c.HOLDINGS_COLLECTION)


# -- the master plan's inventory, MARC and pick-slip groups (IRO, ETT, VAR, MPS) -------------------------------
def test_item_writes_and_their_errors(api):
    item = api.item()
    body = api.get(f"/inventory/items/{item['id']}").json()
    conforms(body, c.INVENTORY_ITEM)
    refused = api.put(f"/inventory/items/{item['id']}", {**body, "status": {"name": "Lent"}})
    assert refused.status_code == 422
    conforms(refused.json(), c.ERRORS)
    done = api.put(f"/inventory/items/{item['id']}", {**body, "numberOfPieces": 2})
    assert (done.status_code, done.content) == (204, b"")
    conforms(api.get(f"/item-storage/items/{item['id']}").json(), c.ITEM_STORAGE)
    assert api.delete(f"/inventory/items/{item['id']}").status_code == 204


def test_quickmarc_view_and_errors(api, folio_sandbox):
    made = marc_instance(api, folio_sandbox)
    view = api.get("/records-editor/records", externalId=made["instance"]["id"]).json()
    conforms(view, c.QUICK_MARC_VIEW)
    missing = api.get("/records-editor/records", externalId=str(uuid.uuid4()))
    assert missing.status_code == 404
    conforms(missing.json(), c.SPRING_ERROR)
    view["relatedRecordVersion"] = "1"
    doubled = [f for f in view["fields"] if f["tag"] in ("008", "245")]
    refused = api.put(f"/records-editor/records/{view['parsedRecordId']}", {**view, "fields": view["fields"] + doubled})
    assert refused.status_code == 422  # two rules broken: Errors, not one Error
    conforms(refused.json(), c.SPRING_ERRORS)
    assert refused.json()["total_records"] == 2 == len(refused.json()["errors"])
    saved = api.put(f"/records-editor/records/{view['parsedRecordId']}", view)
    assert (saved.status_code, saved.content) == (202, b"")
    current = api.get("/records-editor/records", externalId=made["instance"]["id"]).json()
    stale = api.put(f"/records-editor/records/{current['parsedRecordId']}", {**current, "relatedRecordVersion": "1"})
    assert stale.status_code == 409
    conforms(stale.json(), c.SPRING_ERROR)


def test_srs_formatted_records(api, folio_sandbox):
    made = marc_instance(api, folio_sandbox)
    conforms(api.get(f"/source-storage/records/{made['instance']['id']}/formatted", idType="INSTANCE").json(), c.SRS_RECORD)
    authority_id, record_id = str(uuid.uuid4()), str(uuid.uuid4())
    insert_records(folio_sandbox.dsn, folio_sandbox.tenant, [{
        "id": record_id, "record_type": "MARC_AUTHORITY", "external_id": authority_id, "hrid": "n123",
        "content": authority_content("n123", "Doe, Jane,", "n12345678", authority_id, record_id)}])
    conforms(api.get(f"/source-storage/records/{authority_id}/formatted", idType="AUTHORITY").json(), c.SRS_RECORD)


def test_pick_slips(api):
    page = api.request(api.item(), api.user(), "Page")
    assert page.status_code == 201
    slips = api.get(f"/circulation/pick-slips/{CIRC_DESK_1}").json()
    assert slips["totalRecords"] >= 1
    conforms(slips, c.PICK_SLIPS)


# -- what folioclient reads ----------------------------------------------------------------------------------
@pytest.mark.parametrize("path, key, record, source", c.VOCABULARIES, ids=[v[0] for v in c.VOCABULARIES])
def test_vocabularies(api, path, key, record, source):
    body = api.get(path, query="cql.allRecords=1", limit=1000).json()
    conforms(body, c.collection(c.INV + source, key, record))
    conforms(api.get(f"{path}/{body[key][0]['id']}").json(), record)


def test_organizations_authority_files_calendars(api):
    for path in ("/organizations-storage/organizations", "/organizations/organizations"):
        conforms(api.get(path, limit=1000).json(), c.ORGANIZATION_COLLECTION)
    conforms(api.get("/authority-source-files", limit=1000).json(), c.AUTHORITY_SOURCE_FILE_COLLECTION)
    conforms(api.get("/calendar/calendars").json(), c.CALENDAR_COLLECTION)
    missing = api.get(f"/calendar/calendars/{uuid.uuid4()}")
    assert missing.status_code == 404
    conforms(missing.json(), c.CALENDAR_ERRORS)


def test_users_permissions_composite_user(api, folio_sandbox):
    conforms(api.get("/perms/users", limit=10).json(), c.PERMISSION_USER_COLLECTION)
    conforms(api.get(f"/bl-users/by-username/{folio_sandbox.username}").json(), c.COMPOSITE_USER)
    conforms(api.get("/bl-users/_self").json(), c.COMPOSITE_USER)


# -- what VB, VTT, VH, IRO, ETT and VAR read from mod-search --------------------------------------------------
def test_search_instances(api, lent):
    item = api.get(f"/item-storage/items/{lent['item']['id']}").json()
    hrid = item["hrid"]
    query = f'(keyword all "{hrid}" or isbn="{hrid}" or item.hrid=="{hrid}" or item.id=="{hrid}") sortby title'  # IRO
    for expand in ("false", "true"):
        body = api.get("/search/instances", query=query, limit=100, expandAll=expand).json()
        assert body["totalRecords"] == 1
        conforms(body, c.INSTANCE_SEARCH_RESULT)
    facets = api.get("/search/instances/facets", query="cql.allRecords=1", facet="source,items.status.name").json()
    conforms(facets, c.FACET_RESULT)
    for facet in facets["facets"].values():
        conforms(facet, c.FACET)


def test_search_authorities(api, folio_sandbox):
    authority_id = str(uuid.uuid4())
    with psycopg.connect(folio_sandbox.dsn, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {folio_sandbox.tenant}_mod_entities_links.authority (id, jsonb) VALUES (%s, %s)",
                     (authority_id, json.dumps({"id": authority_id, "source": "MARC", "naturalId": "n0001",
                                                "personalName": "Contract, Carla", "sftPersonalName": ["Contract, C."],
                                                "notes": [{"noteTypeId": str(uuid.uuid4()), "value": "a note"}],
                                                "identifiers": [{"value": "n0001", "identifierTypeId": str(uuid.uuid4())}]})))
    for expand in ("false", "true"):
        body = api.get("/search/authorities", offset=0, query='(keyword=="Contract")', limit=100, expandAll=expand).json()
        assert body["totalRecords"] == 2
        conforms(body, c.AUTHORITY_SEARCH_RESULT)
    for query in ("id=*", '(keyword=="Contract")'):  # VAR's
        facets = api.get("/search/authorities/facets", query=query, facet="sourceFileId").json()
        conforms(facets, c.FACET_RESULT)
        conforms(facets["facets"]["sourceFileId"], c.FACET)


def test_search_error_bodies(api):
    for response in (api.get("/search/instances", query="(("), api.get("/search/instances", query="nofield==1"),
                     api.get("/search/authorities", query="id=*", limit=501),
                     api.get("/search/authorities/facets", query="id=*", facet="naturalId"),
                     api.get("/search/instances", query='metadata.createdDate > "then"')):
        assert response.status_code in (400, 422)
        assert response.headers["Content-Type"].startswith("application/json")
        conforms(response.json(), c.SEARCH_ERRORS)


# -- error bodies --------------------------------------------------------------------------------------------
def test_rmb_error_bodies(api):
    for response in (api.post("/users", Api.user_body(bogusField=1)),           # Unrecognized field
                     api.post("/groups", {"desc": "no name"}),                   # bean validation
                     api.post("/users", Api.user_body(username=api.user()["username"])),  # mod-users' duplicate
                     api.post("/holdings-sources", {"name": "FOLIO"})):          # RMB's unique violation
        assert response.status_code == 422
        assert response.headers["Content-Type"].startswith("application/json")
        conforms(response.json(), c.ERRORS)


def test_mod_circulation_error_bodies(api):
    r = api.post("/circulation/check-out-by-barcode", {"itemBarcode": "nope", "userBarcode": "nope", "servicePointId": CIRC_DESK_1})
    assert r.status_code == 422
    conforms(json.loads(r.text), c.CIRCULATION_ERRORS)
    assert "No item with barcode nope could be found" in [e["message"] for e in r.json()["errors"]]


def test_text_errors_are_text(api):
    for response in (api.get("/users", query="(("), api.post("/users", Api.user_body(active="nope")),
                     requests.get(api.url + "/users/not-a-uuid", headers=api.headers, timeout=30)):
        assert response.status_code in (400, 404)
        assert response.headers["Content-Type"].startswith("text/plain")


# -- what the PTF master plan's user and inventory pages read and write ---------------------------------------------
def test_permissions_and_open_transactions(api):
    user, perms_id = api.user(), str(uuid.uuid4())
    created = api.post("/perms/users", {"userId": user["id"], "permissions": ["ui-users.view"], "id": perms_id})
    assert created.status_code == 201
    conforms(created.json(), c.PERMISSION_USER)
    conforms(api.get(f"/perms/users/{user['id']}", indexField="userId", full="true").json(), c.PERMISSION_USER)
    conforms(api.get(f"/perms/users/{user['id']}/permissions", indexField="userId").json(), c.PERMISSION_NAMES)
    full = api.get(f"/perms/users/{user['id']}/permissions", indexField="userId", full="true").json()
    assert full["permissionNames"]
    conforms(full, c.PERMISSION_RECORDS)
    record = api.get(f"/perms/users/{perms_id}").json()
    edited = api.put(f"/perms/users/{perms_id}", {**record, "permissions": []})
    assert edited.status_code == 200
    conforms(edited.json(), c.PERMISSION_USER)
    catalogue = api.get("/perms/permissions", query="(visible==true)", length="10000").json()
    assert catalogue["permissions"]
    conforms(catalogue, c.PERMISSION_COLLECTION)
    conforms(api.get("/perms/permissions", length="10000", includeDummy="true", expandSubs="true").json(),
             c.collection(c.PERMS + "permissionListObject.json", "permissions",
                          c.Shape(c.PERMISSION.source, {**c.PERMISSION.types, "subPermissions": c.ListOf(c.PERMISSION)},
                                  closed=True)))
    conforms(api.get(f"/bl-users/by-id/{user['id']}/open-transactions").json(), c.OPEN_TRANSACTIONS)
    item = api.item()
    assert api.check_out(item, user).status_code == 201
    refused = api.delete(f"/bl-users/by-id/{user['id']}")
    assert refused.status_code == 409
    conforms(refused.json(), c.OPEN_TRANSACTIONS)
    invalid = api.post("/perms/users", {"userId": api.user()["id"], "permissions": ["not.a.permission"]})
    assert invalid.status_code == 422
    conforms(invalid.json(), c.ERRORS)


def test_user_page_lists(api, custom_field):
    department = api.created("/departments", {"name": "Dept " + uuid.uuid4().hex[:8], "code": uuid.uuid4().hex[:6]})
    conforms(department, c.DEPARTMENT)
    conforms(api.get("/departments", query="cql.allRecords=1 sortby name", limit="10000").json(), c.DEPARTMENT_COLLECTION)
    conforms(api.get(f"/departments/{department['id']}").json(), c.DEPARTMENT)
    duplicate = api.post("/departments", {"name": department["name"], "code": "other"})
    assert duplicate.status_code == 422
    conforms(duplicate.json(), c.ERRORS)
    mod_users = next(m["id"] for m in requests.get(api.url + "/_/proxy/tenants/diku/modules", timeout=30).json()
                     if m["id"].startswith("mod-users-") and not m["id"].startswith("mod-users-bl"))
    headers = {**api.headers, "x-okapi-module-id": mod_users}
    fields = requests.get(api.url + "/custom-fields", params={"limit": "2147483647"}, headers=headers, timeout=30).json()
    assert fields["customFields"]
    conforms(fields, c.CUSTOM_FIELD_COLLECTION)
    conforms(requests.get(f"{api.url}/custom-fields/{custom_field['id']}", headers=headers, timeout=30).json(),
             c.CUSTOM_FIELD)
    user = api.user()
    preference = api.created("/request-preference-storage/request-preference", {
        "userId": user["id"], "fulfillment": "Hold Shelf", "holdShelf": True, "delivery": False, "id": str(uuid.uuid4())})
    conforms(preference, c.REQUEST_PREFERENCE)
    conforms(api.get("/request-preference-storage/request-preference", query=f"userId=={user['id']}").json(),
             c.REQUEST_PREFERENCE_COLLECTION)
    conforms(api.get(f"/request-preference-storage/request-preference/{preference['id']}").json(), c.REQUEST_PREFERENCE)
    note_types = api.get("/note-types", query="cql.allRecords=1 sortby name", limit="500").json()
    conforms(note_types, c.NOTE_TYPE_COLLECTION)
    conforms(api.get(f"/note-types/{note_types['noteTypes'][0]['id']}").json(), c.NOTE_TYPE)
    tags = api.get("/tags", query="cql.allRecords=1 sortby label", limit="10000").json()
    conforms(tags, c.TAG_COLLECTION)
    conforms(api.get(f"/tags/{tags['tags'][0]['id']}").json(), c.TAG)
    spring_error = api.get("/tags", limit="0")
    assert spring_error.status_code == 422
    conforms(spring_error.json(), c.SPRING_ERRORS)


def test_inventory_page_lists(api):
    item = api.item()
    holdings_id = item["holdingsRecordId"]
    instance_id = api.get(f"/holdings-storage/holdings/{holdings_id}").json()["instanceId"]
    part = api.created("/inventory-storage/bound-with-parts", {"holdingsRecordId": holdings_id, "itemId": item["id"]})
    conforms(part, c.BOUND_WITH_PART)
    conforms(api.get("/inventory-storage/bound-with-parts", query=f"(holdingsRecordId=={holdings_id})", limit="5000").json(),
             c.BOUND_WITH_PART_COLLECTION)
    conforms(api.get(f"/inventory-storage/bound-with-parts/{part['id']}").json(), c.BOUND_WITH_PART)
    profiles = api.get("/copycat/profiles", query="enabled=true sortby name", limit="1000").json()
    conforms(profiles, c.COPYCAT_PROFILE_COLLECTION)
    conforms(api.get(f"/copycat/profiles/{profiles['profiles'][0]['id']}").json(), c.COPYCAT_PROFILE)
    conforms(api.get("/remote-storage/mappings", limit="1000").json(), c.LOCATION_MAPPINGS)
    conforms(api.get("/orders/titles", query=f"instanceId=={instance_id}", limit="5000").json(), c.TITLE_COLLECTION)
    conforms(api.get("/orders/pieces", query=f'holdingId=={holdings_id} and displayOnHolding=="true" and '
                                             'receivingStatus="Received"', limit="5000").json(), c.PIECE_COLLECTION)
    conforms(api.get(f"/orders/holding-summary/{holdings_id}").json(), c.HOLDING_SUMMARY_COLLECTION)
    bad_query = api.get("/orders/pieces", query="holdingId==(")
    assert bad_query.status_code == 400
    conforms(bad_query.json(), c.ERRORS)
