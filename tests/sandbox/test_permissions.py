"""mod-permissions: the permission catalogue FOLIO's module descriptors define, and permission users as the PTF's
Patron Record Operations group creates, reads and edits them (POST, GET by userId, GET their permissions with
full=true, PUT the record it read), with the module's checks on what may be added."""

from __future__ import annotations

import json
import uuid
from importlib import resources

import psycopg
import requests

from folioperf.sandbox.auth import hash_password
from tests.sandbox.inventory_data import Api

CATALOGUE = json.loads(resources.files("folioperf.sandbox").joinpath("reference_data", "mod-permissions.json").read_text())
BY_NAME = {p["permissionName"]: p for p in CATALOGUE["permissions"]}
VISIBLE = {p["permissionName"] for p in CATALOGUE["permissions"] if p["visible"] and not p["dummy"]}


def perms_user(api: Api, permissions: list[str] | None = None) -> tuple[dict, str]:
    """A new user and its permission user, created as PRO's "Users Create Save" does (its own record id)."""
    user, perms_id = api.user(), str(uuid.uuid4())
    r = requests.post(api.url + "/perms/users?full=true&indexField=userId", headers=api.headers, timeout=30,
                      json={"userId": user["id"], "permissions": permissions or [], "id": perms_id})
    assert r.status_code == 201, r.text
    return user, perms_id


def granted_to(api: Api, name: str) -> list[str]:
    found = api.get("/perms/permissions", query=f'permissionName=="{name}"', includeDummy="true").json()["permissions"]
    assert len(found) == 1, name
    return found[0]["grantedTo"]


# -- the catalogue --------------------------------------------------------------------------------------------------
def test_the_edit_page_lists_every_visible_permission_set_of_the_catalogue(api):
    body = api.get("/perms/permissions", query="(visible==true)", length="10000").json()
    names = [p["permissionName"] for p in body["permissions"]]
    assert set(names) == VISIBLE and len(names) == len(VISIBLE) == body["totalRecords"]
    users_view = next(p for p in body["permissions"] if p["permissionName"] == "ui-users.view")
    assert users_view["displayName"] == "Users: Can view user profile" and users_view["moduleName"] == "folio_users"
    assert "users.collection.get" in users_view["subPermissions"] and users_view["mutable"] is False
    assert "resultInfo" not in body


def test_dummy_permissions_only_when_asked(api):
    """A sub-permission no enabled module defines is a dummy record, hidden unless includeDummy=true."""
    dummies = {p["permissionName"] for p in CATALOGUE["permissions"] if p["dummy"]}
    assert "settings.enabled" in dummies  # stripes-core's, which the sandbox does not enable
    assert api.get("/perms/permissions", query='permissionName=="settings.enabled"').json()["totalRecords"] == 0
    shown = api.get("/perms/permissions", query='permissionName=="settings.enabled"', includeDummy="true").json()
    assert shown["permissions"][0]["dummy"] is True and "settings.users.enabled" in shown["permissions"][0]["childOf"]


def test_catalogue_paging_and_sub_permission_expansion(api):
    sorted_all = "cql.allRecords=1 sortby permissionName"
    # the module wraps the query as `(query) AND (dummy==false)`, where a sortby is no valid CQL
    refused = api.get("/perms/permissions", query=sorted_all)
    assert refused.status_code == 400 and "sortby" in refused.text
    first = api.get("/perms/permissions", query=sorted_all, length="3", includeDummy="true").json()["permissions"]
    second = api.get("/perms/permissions", query=sorted_all, length="2", start="2", includeDummy="true").json()
    assert [p["permissionName"] for p in second["permissions"]] == [p["permissionName"] for p in first[1:3]]
    everything = api.get("/perms/permissions", length="10000", includeDummy="true").json()
    assert everything["totalRecords"] == len(everything["permissions"]) == len(CATALOGUE["permissions"])
    r = api.get("/perms/permissions", length="0")
    assert r.status_code == 400 and "'length' parameter is incorrect" in r.text
    one = api.get("/perms/permissions", query='permissionName=="ui-users.view"', expandSubs="true").json()["permissions"][0]
    subs = {s["permissionName"]: s for s in one["subPermissions"]}
    assert subs["users.collection.get"]["displayName"] == BY_NAME["users.collection.get"]["displayName"]
    assert "settings.enabled" not in subs or subs["settings.enabled"]["dummy"]
    deep = api.get("/perms/permissions", query='permissionName=="ui-users.edit"', expanded="true").json()["permissions"][0]
    # ui-users.edit names ui-users.view, whose own sub-permissions the recursive expansion reaches
    assert "ui-users.view" in deep["subPermissions"] and "users.collection.get" in deep["subPermissions"]


# -- permission users as PRO uses them ---------------------------------------------------------------------------------
def test_pro_creates_reads_and_edits_a_permission_user(api):
    user, perms_id = perms_user(api)
    by_user = requests.get(f"{api.url}/perms/users/{user['id']}?indexField=userId&full=true", headers=api.headers, timeout=30)
    assert by_user.status_code == 200 and by_user.json()["id"] == perms_id and by_user.json()["permissions"] == []
    names = requests.get(f"{api.url}/perms/users/{user['id']}/permissions?indexField=userId&full=true",
                         headers=api.headers, timeout=30)
    assert names.status_code == 200 and names.json() == {"permissionNames": []}  # full=true: no totalRecords
    edited = {**by_user.json(), "permissions": ["ui-users.view", "ui-users.view", "ui-requests.view"]}
    put = requests.put(f"{api.url}/perms/users/{perms_id}?indexField=userId", data=json.dumps(edited), timeout=30,
                       headers={**api.headers, "Accept": "text/plain"})
    assert put.status_code == 200, put.text
    assert put.json() == {"id": perms_id, "userId": user["id"], "permissions": ["ui-users.view", "ui-requests.view"]}
    full = api.get(f"/perms/users/{user['id']}/permissions", indexField="userId", full="true").json()["permissionNames"]
    assert [p["displayName"] for p in full] == ["Users: Can view user profile", BY_NAME["ui-requests.view"]["displayName"]]
    assert perms_id in full[0]["grantedTo"]
    plain = api.get(f"/perms/users/{perms_id}/permissions").json()
    assert plain == {"permissionNames": ["ui-users.view", "ui-requests.view"], "totalRecords": 2}
    expanded = api.get(f"/perms/users/{perms_id}/permissions", expanded="true").json()["permissionNames"]
    assert {"ui-users.view", "users.collection.get", "module.users.enabled"} <= set(expanded)
    assert requests.put(f"{api.url}/perms/users/{perms_id}", json={**edited, "permissions": ["ui-requests.view"]},
                        headers=api.headers, timeout=30).status_code == 200
    assert perms_id not in granted_to(api, "ui-users.view") and perms_id in granted_to(api, "ui-requests.view")


def test_permission_user_lookups_answer_as_mod_permissions(api):
    user, perms_id = perms_user(api)
    unknown = str(uuid.uuid4())
    cases = [
        (f"/perms/users/{unknown}?indexField=userId", 404, f"No user with userId {unknown}"),
        (f"/perms/users/{unknown}", 404, f"No user with id {unknown}"),
        ("/perms/users/not-a-uuid?indexField=userId", 404, "No user with userId not-a-uuid"),
        ("/perms/users/not-a-uuid", 400, 'invalid input syntax for type uuid: "not-a-uuid"'),
        (f"/perms/users/{perms_id}?indexField=username", 400, "Invalid value 'username' for indexField"),
        (f"/perms/users/{unknown}/permissions?indexField=userId", 404, f"No user found by userId {unknown}"),
        (f"/perms/users/{perms_id}/permissions?indexField=username", 500, "Invalid value 'username' for indexField"),
    ]
    for path, status, text in cases:
        r = requests.get(api.url + path, headers=api.headers, timeout=30)
        assert (r.status_code, r.text) == (status, text), path
    assert api.get(f"/perms/users/{perms_id}").json()["userId"] == user["id"]


def test_writes_refuse_unknown_and_dummy_permissions(api):
    user, perms_id = perms_user(api)
    r = api.post("/perms/users", {"userId": api.user()["id"], "permissions": ["no.such.permission"]})
    assert r.status_code == 422
    assert r.json()["errors"][0]["message"].startswith(
        "Unable to update derived fields: Attempting to add non-existent permissions no.such.permission to permission user")
    record = api.get(f"/perms/users/{perms_id}").json()
    r = api.put(f"/perms/users/{perms_id}", {**record, "permissions": ["settings.enabled"]})
    assert (r.status_code, r.text) == (400, "Cannot add permissions flagged as 'dummy' to users")
    r = api.put(f"/perms/users/{perms_id}", {**record, "permissions": ["no.such.permission"]})
    assert r.status_code == 422 and "Attempting to add non-existent permissions no.such.permission" in r.text
    missing = str(uuid.uuid4())
    r = api.put(f"/perms/users/{missing}", {"userId": user["id"], "permissions": []})
    assert (r.status_code, r.text) == (404, f"No permissions user found with id {missing}")
    r = api.put(f"/perms/users/{perms_id}", {**record, "bogus": 1})
    assert r.status_code == 422 and r.json()["errors"][0]["message"].startswith('Unrecognized field "bogus"')
    assert api.get(f"/perms/users/{perms_id}").json()["permissions"] == []  # nothing of the refused writes stayed


def test_adding_a_permission_needs_the_right_to_assign_it(api, folio_sandbox):
    """checkOperatingPermissions: the operating user must hold perms.users.assign.immutable to grant a module's
    (immutable) permission it does not hold itself."""
    clerk, password = api.user(), "clerk-" + uuid.uuid4().hex[:8]
    salt, digest = hash_password(password)
    with psycopg.connect(folio_sandbox.dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO diku_mod_login.auth_credentials (id, jsonb) VALUES (%s, %s)",
                     (clerk["id"], json.dumps({"userId": clerk["id"], "salt": salt, "hash": digest})))
    granted = api.post("/perms/users", {"userId": clerk["id"],
                                        "permissions": ["perms.users.get", "perms.users.item.put", "ui-requests.view"]})
    assert granted.status_code == 201, granted.text
    login = requests.post(folio_sandbox.url + "/authn/login", json={"username": clerk["username"], "password": password},
                          headers={"X-Okapi-Tenant": "diku"}, timeout=30)
    assert login.status_code == 201, login.text
    clerk_api = Api.of(folio_sandbox, login.headers["x-okapi-token"])
    patron, patron_perms = perms_user(api)
    record = api.get(f"/perms/users/{patron_perms}").json()
    r = clerk_api.put(f"/perms/users/{patron_perms}", {**record, "permissions": ["ui-users.view"]})
    assert (r.status_code, r.text) == (403, f"Cannot add immutable permission ui-users.view not owned by operating user "
                                            f"{clerk['id']}")
    assert clerk_api.put(f"/perms/users/{patron_perms}", {**record, "permissions": ["ui-requests.view"]}).status_code == 200
    assert api.get(f"/perms/users/{patron_perms}").json()["permissions"] == ["ui-requests.view"]
