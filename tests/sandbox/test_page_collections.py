"""The lists and look-ups that the PTF master plan's inventory and user pages load beside their records: bound-with
parts, departments, custom fields, request preferences, copy-cataloguing profiles, tags, note types, remote-storage
mappings and mod-orders' reads, each with its module's rules on writes and FOLIO's reference records."""

from __future__ import annotations

import re
import uuid

import psycopg
import pytest
import requests
from psycopg.types.json import Jsonb

from tests.sandbox.inventory_data import CIRC_DESK_1, MAIN_LIBRARY, Api, unique


def module_id(api: Api, name: str) -> str:
    """The id of the tenant's module `name`, as Okapi lists the tenant's modules."""
    listed = requests.get(api.url + "/_/proxy/tenants/diku/modules", headers=api.headers, timeout=30).json()
    return next(m["id"] for m in listed if re.fullmatch(re.escape(name) + r"-\d+\.\d+\.\d+.*", m["id"]))


def messages(r: requests.Response) -> list[str]:
    return [e["message"] for e in r.json()["errors"]]


# -- mod-inventory-storage ---------------------------------------------------------------------------------------
def test_bound_with_parts(api):
    item = api.item()
    holdings = api.holdings(api.get(f"/holdings-storage/holdings/{item['holdingsRecordId']}").json()["instanceId"])
    empty = api.get("/inventory-storage/bound-with-parts", query=f"(holdingsRecordId=={holdings['id']})", limit="5000")
    assert empty.json() == {"boundWithParts": [], "totalRecords": 0}  # what VH reads for almost every holdings record
    part = api.created("/inventory-storage/bound-with-parts", {"holdingsRecordId": holdings["id"], "itemId": item["id"]})
    found = api.get("/inventory-storage/bound-with-parts", query=f"(holdingsRecordId=={holdings['id']})", limit="5000").json()
    assert [p["id"] for p in found["boundWithParts"]] == [part["id"]] and found["totalRecords"] == 1
    again = api.post("/inventory-storage/bound-with-parts", {"holdingsRecordId": holdings["id"], "itemId": item["id"]})
    assert again.status_code == 422 and "already exists in table bound_with_part" in messages(again)[0]
    nowhere = str(uuid.uuid4())
    dangling = api.post("/inventory-storage/bound-with-parts", {"holdingsRecordId": holdings["id"], "itemId": nowhere})
    assert dangling.status_code == 422
    assert messages(dangling) == [f"Cannot set bound_with_part.itemid = {nowhere} because it does not exist in item.id."]
    incomplete = api.post("/inventory-storage/bound-with-parts", {"itemId": item["id"]})
    assert incomplete.status_code == 422 and messages(incomplete) == ["must not be null"]
    assert api.delete(f"/inventory-storage/bound-with-parts/{part['id']}").status_code == 204


def test_reference_vocabularies_take_rmb_writes(api):
    name = unique("Lends on Tuesdays ")
    assert api.post("/ill-policies", {"name": name}).status_code == 422  # source is required
    created = api.created("/ill-policies", {"name": name, "source": "local"})
    duplicate = api.post("/ill-policies", {"name": name.upper(), "source": "local"})
    assert duplicate.status_code == 422 and "already exists in table ill_policy" in messages(duplicate)[0]
    assert api.delete(f"/ill-policies/{created['id']}").status_code == 204
    assert api.post("/item-damaged-statuses", {"name": unique("Chewed "), "source": "local", "x": 1}).status_code == 422
    assert api.post("/instance-relationship-types", {"name": unique("sequel ")}).status_code == 201


# -- mod-users ---------------------------------------------------------------------------------------------------
def test_departments_count_their_users_and_guard_them(api):
    department = api.created("/departments", {"name": unique("Accounting "), "code": unique("ACC")})
    listed = api.get("/departments", query="cql.allRecords=1 sortby name", limit="10000").json()["departments"]
    assert next(d for d in listed if d["id"] == department["id"])["usageNumber"] == 0
    user = api.user(departments=[department["id"]])
    assert api.get(f"/departments/{department['id']}").json()["usageNumber"] == 1
    for field in ("name", "code"):
        clash = {"name": unique("Other "), "code": unique("OTH"), field: department[field]}
        r = api.post("/departments", clash)
        assert r.status_code == 422 and r.json()["errors"] == [{
            "message": f"Department with this {field} already exists", "type": "1", "code": "-1",
            "parameters": [{"key": field, "value": department[field]}]}]
    missing = str(uuid.uuid4())
    r = api.post("/users", Api.user_body(departments=[missing]))
    assert r.status_code == 422
    assert messages(r) == [f"Cannot set users.departments = {missing} because it does not exist in departments.id."]
    in_use = api.delete(f"/departments/{department['id']}")
    assert (in_use.status_code, in_use.text) == (400, f"Cannot delete departments.id = {department['id']} because id is "
                                                      "still referenced from table users.")
    assert api.put(f"/users/{user['id']}", {**api.get(f"/users/{user['id']}").json(), "departments": []}).status_code == 204
    assert api.delete(f"/departments/{department['id']}").status_code == 204


def test_custom_fields_are_reached_through_the_module_id(api, custom_field):
    """custom-fields is an interface of type multiple: Okapi routes it only to the module X-Okapi-Module-Id names."""
    path = "/custom-fields?limit=2147483647"
    nobody = requests.get(api.url + path, headers=api.headers, timeout=30)
    assert (nobody.status_code, nobody.text) == (404, "No suitable module found for path /custom-fields for tenant diku")
    as_planned = requests.get(api.url + path, headers={**api.headers, "x-okapi-module-id": "mod-users-19.1.1"}, timeout=30)
    assert as_planned.status_code == 404  # the plan's module id names another mod-users than the tenant's
    headers = {**api.headers, "x-okapi-module-id": module_id(api, "mod-users")}
    found = requests.get(api.url + path, headers=headers, timeout=30).json()
    mine = next(f for f in found["customFields"] if f["id"] == custom_field["id"])
    assert mine["name"] == custom_field["name"] and (mine["visible"], mine["required"], mine["isRepeatable"]) == (True, False, False)
    assert [f["order"] for f in found["customFields"]] == sorted(f["order"] for f in found["customFields"])
    assert found["totalRecords"] == len(found["customFields"])
    one = requests.get(f"{api.url}/custom-fields/{custom_field['id']}", headers=headers, timeout=30)
    assert one.status_code == 200 and one.json()["refId"] == custom_field["refId"]
    unknown = str(uuid.uuid4())
    r = requests.get(f"{api.url}/custom-fields/{unknown}", headers=headers, timeout=30)
    assert (r.status_code, r.text) == (404, f"CustomField not found by id: {unknown}")
    # a module id on a request to an ordinary interface: Okapi looks only among the multiple ones
    assert requests.get(api.url + "/groups", headers=headers, timeout=30).status_code == 404


# -- mod-circulation-storage -------------------------------------------------------------------------------------------
def test_request_preferences_one_per_user(api):
    user = api.user()
    pro_body = {"userId": user["id"], "fulfillment": "Hold Shelf", "holdShelf": True, "delivery": False,
                "defaultServicePointId": None, "defaultDeliveryAddressTypeId": None, "id": str(uuid.uuid4())}
    created = api.created("/request-preference-storage/request-preference", pro_body)
    assert "defaultServicePointId" not in created and created["metadata"]["createdDate"]
    found = api.get("/request-preference-storage/request-preference", query=f"userId=={user['id']}").json()
    assert [p["id"] for p in found["requestPreferences"]] == [pro_body["id"]]
    again = api.post("/request-preference-storage/request-preference", {**pro_body, "id": str(uuid.uuid4())})
    assert again.status_code == 422 and again.json()["errors"] == [{
        "message": "Request preference for specified user already exists", "type": "1", "code": "-1",
        "parameters": [{"key": "userId", "value": user["id"]}]}]
    bad = api.put(f"/request-preference-storage/request-preference/{pro_body['id']}", {**pro_body, "fulfillment": "Drone"})
    assert bad.status_code == 400 and bad.headers["Content-Type"].startswith("text/plain")
    edited = {**pro_body, "delivery": True, "fulfillment": "Delivery", "defaultServicePointId": CIRC_DESK_1}
    assert api.put(f"/request-preference-storage/request-preference/{pro_body['id']}", edited).status_code == 204
    assert api.get(f"/request-preference-storage/request-preference/{pro_body['id']}").json()["fulfillment"] == "Delivery"


# -- mod-copycat, mod-tags, mod-notes, mod-remote-storage ---------------------------------------------------------------
def test_copycat_profiles(api):
    enabled = api.get("/copycat/profiles", query="enabled=true sortby name", limit="1000").json()
    assert "OCLC WorldCat" in [p["name"] for p in enabled["profiles"]]
    assert "Library of Congress" not in [p["name"] for p in enabled["profiles"]]  # FOLIO ships it disabled
    job = str(uuid.uuid4())
    created = api.created("/copycat/profiles", {"name": unique("Local Z39.50 "), "url": "z3950.example.org:210/db",
                                                "createJobProfileId": job, "updateJobProfileId": job, "enabled": True})
    assert created["allowedCreateJobProfileIds"] == [job] and created["allowedUpdateJobProfileIds"] == [job]
    r = api.post("/copycat/profiles", {"name": unique("No job profiles ")})
    assert r.status_code == 422 and len(r.json()["errors"]) == 2  # both job profile ids are required


def test_tags_and_note_types(api, folio_sandbox):
    tags = api.get("/tags", limit="10000").json()
    assert {"important", "urgent"} <= {t["label"] for t in tags["tags"]} and tags["totalRecords"] == len(tags["tags"])
    labels = [t["label"] for t in api.get("/tags", query="cql.allRecords=1 sortby label", limit="1000").json()["tags"]]
    assert labels == sorted(labels)
    r = api.get("/tags", limit="0")
    assert r.status_code == 422 and r.json()["errors"][0]["code"] == "VALIDATION_ERROR"
    unknown = str(uuid.uuid4())
    r = api.get(f"/tags/{unknown}")
    assert r.status_code == 404 and r.json()["errors"] == [{"message": f"Tag with id [{unknown}] was not found",
                                                            "type": "-1", "code": "NOT_FOUND_ERROR"}]
    types = api.get("/note-types", query="cql.allRecords=1 sortby name", limit="500").json()["noteTypes"]
    general = next(t for t in types if t["name"] == "General note")
    assert general["usage"] == {"isAssigned": False}
    with psycopg.connect(folio_sandbox.dsn, autocommit=True) as conn:
        note_id = str(uuid.uuid4())
        conn.execute("INSERT INTO diku_mod_notes.note (id, jsonb) VALUES (%s, %s)",
                     (note_id, Jsonb({"typeId": general["id"], "domain": "users", "title": "Note", "links": []})))
        try:
            assert api.get(f"/note-types/{general['id']}").json()["usage"] == {"isAssigned": True}
        finally:
            conn.execute("DELETE FROM diku_mod_notes.note WHERE id = %s", (note_id,))


def test_remote_storage_mappings(api, folio_sandbox):
    assert api.get("/remote-storage/mappings", limit="1000").json() == {"mappings": [], "totalRecords": 0}
    configuration = str(uuid.uuid4())
    with psycopg.connect(folio_sandbox.dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO diku_mod_remote_storage.location_mappings (id, jsonb) VALUES (%s, %s)",
                     (MAIN_LIBRARY, Jsonb({"folioLocationId": MAIN_LIBRARY, "configurationId": configuration})))
        try:
            mapping = {"folioLocationId": MAIN_LIBRARY, "configurationId": configuration}
            assert api.get("/remote-storage/mappings", limit="1000").json() == {"mappings": [mapping], "totalRecords": 1}
            other = api.get("/remote-storage/mappings", remoteStorageConfigurationId=str(uuid.uuid4())).json()
            assert other == {"mappings": [], "totalRecords": 0}
            assert api.get(f"/remote-storage/mappings/{MAIN_LIBRARY}").json() == mapping
        finally:
            conn.execute("DELETE FROM diku_mod_remote_storage.location_mappings WHERE id = %s", (MAIN_LIBRARY,))
    nothing = api.get(f"/remote-storage/mappings/{uuid.uuid4()}")
    assert (nothing.status_code, nothing.content) == (200, b"")


# -- mod-orders --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path, params, body", [
    ("/orders/titles", {"query": f"instanceId=={uuid.uuid4()}", "limit": "5000"}, {"titles": [], "totalRecords": 0}),
    ("/orders/pieces", {"query": f'holdingId=={uuid.uuid4()} and displayOnHolding=="true" and receivingStatus="Received"',
                        "limit": "5000"}, {"pieces": [], "totalRecords": 0}),
    (f"/orders/holding-summary/{uuid.uuid4()}", {}, {"holdingSummaries": [], "totalRecords": 0}),
], ids=["titles", "pieces", "holding-summary"])
def test_orders_answer_as_for_a_library_without_orders(api, path, params, body):
    r = api.get(path, **params)
    assert (r.status_code, r.json()) == (200, body)


def test_orders_errors(api):
    r = api.get("/orders/titles", query="instanceId==(")
    assert r.status_code == 400 and r.json()["errors"][0]["code"] == "genericError" and r.json()["total_records"] == 1
    r = api.get("/orders/holding-summary/not-a-uuid")
    assert r.status_code == 400 and r.text.startswith("'id' parameter is incorrect. parameter value {not-a-uuid}")


# -- Okapi's rules in front of them --------------------------------------------------------------------------------
SOMEONE = "5b8a4d2e-58c4-4d5e-9a8c-2f7d3e1c0b11"
GUARDED = [  # (path, the permission the module's descriptor requires)
    ("/perms/permissions", "perms.permissions.get"),
    (f"/perms/users/{SOMEONE}/permissions", "perms.users.get"),
    (f"/bl-users/by-id/{SOMEONE}/open-transactions", "users-bl.transactions.get"),
    ("/departments", "departments.collection.get"),
    ("/request-preference-storage/request-preference", "circulation-storage.request-preferences.collection.get"),
    ("/ill-policies", "inventory-storage.ill-policies.collection.get"),
    ("/inventory-storage/bound-with-parts", "inventory-storage.bound-with-parts.collection.get"),
    ("/copycat/profiles", "copycat.profiles.collection.get"),
    ("/tags", "tags.collection.get"),
    ("/note-types", "note.types.collection.get"),
    ("/remote-storage/mappings", "remote-storage.mappings.collection.get"),
    ("/orders/titles", "orders.titles.collection.get"),
    (f"/orders/holding-summary/{SOMEONE}", "orders.holding-summary.collection.get"),
]


@pytest.mark.parametrize("path, permission", GUARDED, ids=[p for p, _ in GUARDED])
def test_tenant_and_token_are_required(folio_sandbox, path, permission):
    r = requests.get(folio_sandbox.url + path, headers={"X-Okapi-Tenant": "diku"}, timeout=30)
    assert (r.status_code, r.text) == (400, f"Token missing, access requires permission: {permission}")
    r = requests.get(folio_sandbox.url + path, headers={"X-Okapi-Tenant": "nosuchtenant"}, timeout=30)
    assert (r.status_code, r.text) == (400, "No such Tenant nosuchtenant")
