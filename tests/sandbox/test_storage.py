"""RMB storage endpoints over HTTP: CQL collections, record CRUD, FOLIO's status codes and error bodies."""

from __future__ import annotations

import uuid

import requests

REF = {  # sandbox reference data ids
    "book": "1a54b431-2e4f-452d-9cae-9cee66c9a892",
    "can_circulate": "2b94c631-fca9-4892-a730-03ee529ffe27",
    "main_library": "fcd64ce1-6995-48f0-840e-89ffa2288371",
    "text": "6312d172-f0cf-40f6-b27d-9fa8feaf332f",
    "folio_source": "f32d531e-df79-46b3-8932-cdd35f7a2264",
}


def _post(sb, token, path, body, tenant=None):
    return requests.post(sb.url + path, json=body, headers=sb.headers(token, tenant))


def _new_item(sb, token, barcode: str, tenant=None) -> dict:
    inst = _post(sb, token, "/instance-storage/instances",
                 {"title": f"Title {barcode}", "source": "FOLIO", "instanceTypeId": REF["text"]}, tenant)
    assert inst.status_code == 201, inst.text
    hold = _post(sb, token, "/holdings-storage/holdings", {"instanceId": inst.json()["id"], "permanentLocationId": REF["main_library"],
                                                           "sourceId": REF["folio_source"]}, tenant)
    assert hold.status_code == 201, hold.text
    item = _post(sb, token, "/item-storage/items", {"barcode": barcode, "holdingsRecordId": hold.json()["id"],
                                                     "status": {"name": "Available"}, "materialTypeId": REF["book"],
                                                     "permanentLoanTypeId": REF["can_circulate"]}, tenant)
    assert item.status_code == 201, item.text
    return item.json()


def test_collection_shape_and_limit(folio_sandbox, admin_token):
    r = requests.get(folio_sandbox.url + "/service-points?limit=2", headers=folio_sandbox.headers(admin_token))
    body = r.json()
    assert r.status_code == 200
    assert len(body["servicepoints"]) == 2 and body["totalRecords"] >= 6
    r = requests.get(folio_sandbox.url + "/groups?query=cql.allRecords=1 sortby group&limit=200",
                     headers=folio_sandbox.headers(admin_token))
    assert [g["group"] for g in r.json()["usergroups"]] == ["faculty", "graduate", "staff", "undergrad"]


def test_default_limit_is_rmbs_10(folio_sandbox, admin_token):
    for i in range(12):
        _post(folio_sandbox, admin_token, "/addresstypes", {"addressType": f"Extra {uuid.uuid4().hex[:6]} {i}"})
    r = requests.get(folio_sandbox.url + "/addresstypes", headers=folio_sandbox.headers(admin_token)).json()
    assert len(r["addressTypes"]) == 10 and r["totalRecords"] >= 18


def test_invalid_cql_is_400_text(folio_sandbox, admin_token):
    r = requests.get(folio_sandbox.url + "/users?query=(barcode==", headers=folio_sandbox.headers(admin_token))
    assert r.status_code == 400
    assert r.headers["Content-Type"].startswith("text/plain")


def test_user_lookup_as_the_checkout_page_does(folio_sandbox, admin_token):
    barcode = uuid.uuid4().hex[:12]
    created = _post(folio_sandbox, admin_token, "/users", {"username": "u" + barcode, "barcode": barcode, "active": True,
                                                           "patronGroup": "bdc2b6d4-5ceb-4a12-ab46-249b9a68473e",
                                                           "personal": {"lastName": "Müller", "firstName": "Jo"}})
    assert created.status_code == 201
    assert created.headers["Location"] == created.json()["id"]  # mod-users, like RMB's PgUtil.post: the bare id
    q = f'(barcode=="{barcode}" OR externalSystemId=="{barcode}" OR id=="{barcode}" OR username=="{barcode}")'
    r = requests.get(folio_sandbox.url + "/users", params={"query": q}, headers=folio_sandbox.headers(admin_token)).json()
    assert r["totalRecords"] == 1 and r["users"][0]["id"] == created.json()["id"]
    assert r["users"][0]["metadata"]["createdByUserId"]


def test_record_crud_and_404(folio_sandbox, admin_token):
    h = folio_sandbox.headers(admin_token)
    r = _post(folio_sandbox, admin_token, "/loan-types", {"name": "Loan type " + uuid.uuid4().hex[:6]})
    rid = r.json()["id"]
    assert requests.get(f"{folio_sandbox.url}/loan-types/{rid}", headers=h).json()["name"] == r.json()["name"]
    assert requests.put(f"{folio_sandbox.url}/loan-types/{rid}", json={"name": "Renamed " + rid}, headers=h).status_code == 204
    assert requests.get(f"{folio_sandbox.url}/loan-types/{rid}", headers=h).json()["name"] == "Renamed " + rid
    assert requests.delete(f"{folio_sandbox.url}/loan-types/{rid}", headers=h).status_code == 204
    missing = requests.get(f"{folio_sandbox.url}/loan-types/{rid}", headers=h)
    assert (missing.status_code, missing.text) == (404, "Not found")


def test_duplicate_barcode_is_422(folio_sandbox, admin_token):
    barcode = uuid.uuid4().hex[:12]
    item = _new_item(folio_sandbox, admin_token, barcode)
    same = {k: item[k] for k in ("holdingsRecordId", "materialTypeId", "permanentLoanTypeId")}
    dup = _post(folio_sandbox, admin_token, "/item-storage/items",
                {**same, "barcode": barcode.upper(), "status": {"name": "Available"}})
    assert dup.status_code == 422
    assert "value already exists in table item" in dup.json()["errors"][0]["message"]


def test_missing_required_fields_is_422(folio_sandbox, admin_token):
    r = _post(folio_sandbox, admin_token, "/item-storage/items", {"barcode": "x"})
    assert r.status_code == 422
    keys = {e["parameters"][0]["key"] for e in r.json()["errors"]}
    assert keys == {"materialTypeId", "permanentLoanTypeId", "holdingsRecordId", "status"}


def test_optimistic_locking_conflict_is_409(folio_sandbox, admin_token):
    item = _new_item(folio_sandbox, admin_token, uuid.uuid4().hex[:12])
    url = f"{folio_sandbox.url}/item-storage/items/{item['id']}"
    h = folio_sandbox.headers(admin_token)
    assert item["_version"] == 1
    assert requests.put(url, json={**item, "descriptionOfPieces": "v2"}, headers=h).status_code == 204
    stale = requests.put(url, json={**item, "descriptionOfPieces": "stale"}, headers=h)
    assert stale.status_code == 409 and "optimistic locking" in stale.text
    assert requests.get(url, headers=h).json()["_version"] == 2


def test_inventory_items_view(folio_sandbox, admin_token):
    barcode = uuid.uuid4().hex[:12]
    item = _new_item(folio_sandbox, admin_token, barcode)
    r = requests.get(folio_sandbox.url + "/inventory/items", params={"query": f'barcode=="{barcode}"', "limit": 40},
                     headers=folio_sandbox.headers(admin_token)).json()
    view = r["items"][0]
    assert r["totalRecords"] == 1 and view["id"] == item["id"]
    assert view["title"] == f"Title {barcode}"
    assert view["materialType"] == {"id": REF["book"], "name": "book"}
    assert view["effectiveLocation"]["name"] == "Main Library"
    assert view["status"]["name"] == "Available"


def test_two_tenants_are_isolated(folio_sandbox_factory):
    sb = folio_sandbox_factory(tenants=("isoa", "isob"))
    token_a, token_b = sb.login("isoa"), sb.login("isob")
    barcode = uuid.uuid4().hex[:12]
    item = _new_item(sb, token_a, barcode, tenant="isoa")
    in_b = requests.get(f"{sb.url}/item-storage/items/{item['id']}", headers=sb.headers(token_b, "isob"))
    assert in_b.status_code == 404
    found = requests.get(sb.url + "/item-storage/items", params={"query": f"barcode=={barcode}"},
                         headers=sb.headers(token_b, "isob")).json()
    assert found["totalRecords"] == 0
    # the same barcode is free in the other tenant
    _new_item(sb, token_b, barcode, tenant="isob")
