"""mod-users-bl's open transactions and its guarded user deletion, as PRO's "Delete User" calls them: a user with
an open loan, request, fee/fine, manual block or proxy relation is refused with 409 and the counts; otherwise the
user goes, and with it what mod-users-bl deletes."""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest

from tests.sandbox.inventory_data import CIRC_DESK_1, Api

NOTHING_OPEN = {"hasOpenTransactions": False, "loans": 0, "requests": 0, "feesFines": 0, "proxies": 0, "blocks": 0}


def transactions(api: Api, user: dict) -> dict:
    r = api.get(f"/bl-users/by-id/{user['id']}/open-transactions")
    assert r.status_code == 200, r.text
    return r.json()


def test_a_user_with_nothing_open(api):
    user = api.user()
    assert transactions(api, user) == {"userId": user["id"], "userBarcode": user["barcode"], **NOTHING_OPEN}
    by_name = api.get(f"/bl-users/by-username/{user['username']}/open-transactions")
    assert by_name.status_code == 200 and by_name.json() == transactions(api, user)


def test_each_kind_of_open_transaction_is_counted(api):
    user = api.user()
    item, other = api.item(), api.item()
    assert api.check_out(item, user).status_code == 201
    holder = api.user()
    assert api.check_out(other, holder).status_code == 201
    assert api.request(other, user, "Hold").status_code == 201
    assert api.post("/manualblocks", {"userId": user["id"], "desc": "Lost library card", "type": "Manual",
                                      "borrowing": True}).status_code == 201
    assert api.post("/proxiesfor", {"userId": api.user()["id"], "proxyUserId": user["id"]}).status_code == 201
    assert api.post("/proxiesfor", {"userId": user["id"], "proxyUserId": api.user()["id"]}).status_code == 201
    found = transactions(api, user)
    assert found == {"userId": user["id"], "userBarcode": user["barcode"], "hasOpenTransactions": True, "loans": 1,
                     "requests": 1, "feesFines": 0, "proxies": 2, "blocks": 1}
    assert api.check_in(item).status_code == 200  # a closed loan is no open transaction
    assert transactions(api, user)["loans"] == 0


def test_delete_is_refused_while_anything_is_open(api):
    user, item = api.user(), api.item()
    assert api.check_out(item, user).status_code == 201
    refused = api.delete(f"/bl-users/by-id/{user['id']}")
    assert refused.status_code == 409 and refused.headers["Content-Type"].startswith("application/json")
    assert refused.json() == {"userId": user["id"], "userBarcode": user["barcode"], **NOTHING_OPEN,
                              "hasOpenTransactions": True, "loans": 1}
    assert api.get(f"/users/{user['id']}").status_code == 200


@pytest.mark.parametrize("same_id", [True, False], ids=["perms-id-is-user-id", "perms-id-of-its-own"])
def test_delete_removes_the_user_and_its_records(api, folio_sandbox, same_id):
    user = api.user()
    perms_id = user["id"] if same_id else str(uuid.uuid4())
    assert api.post("/perms/users", {"id": perms_id, "userId": user["id"], "permissions": ["ui-users.view"]}).status_code == 201
    preference = api.created("/request-preference-storage/request-preference", {
        "userId": user["id"], "holdShelf": True, "delivery": False, "fulfillment": "Hold Shelf",
        "defaultServicePointId": CIRC_DESK_1})
    credentials = "SELECT count(*) FROM diku_mod_login.auth_credentials WHERE jsonb->>'userId' = %s"
    with psycopg.connect(folio_sandbox.dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO diku_mod_login.auth_credentials (id, jsonb) VALUES (%s, %s)",
                     (str(uuid.uuid4()), json.dumps({"userId": user["id"], "salt": "s", "hash": "h"})))
        r = api.delete(f"/bl-users/by-id/{user['id']}")
        assert r.status_code == 204, r.text
        assert conn.execute(credentials, (user["id"],)).fetchone()[0] == 0
    assert api.get(f"/users/{user['id']}").status_code == 404
    assert api.get(f"/request-preference-storage/request-preference/{preference['id']}").status_code == 404
    # mod-users-bl asks DELETE /perms/users/{userId}, which mod-permissions reads as a record id
    left = api.get(f"/perms/users/{user['id']}", indexField="userId")
    assert left.status_code == (404 if same_id else 200)
    grantees = api.get("/perms/permissions", query='permissionName=="ui-users.view"').json()["permissions"][0]["grantedTo"]
    assert (perms_id in grantees) is not same_id


def test_unknown_users(api):
    missing = str(uuid.uuid4())
    for method, path in (("GET", f"/bl-users/by-id/{missing}/open-transactions"), ("DELETE", f"/bl-users/by-id/{missing}")):
        r = api.get(path) if method == "GET" else api.delete(path)
        assert (r.status_code, r.text) == (404, f"User with id '{missing}' not found")
    r = api.get("/bl-users/by-username/nobody-at-all/open-transactions")
    assert (r.status_code, r.text) == (404, "Users with username 'nobody-at-all' not found")
