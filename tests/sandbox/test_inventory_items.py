"""mod-inventory's item writes, `PUT` and `DELETE /inventory/items/{id}`, as the PTF's IRO group makes them: the
item read from mod-inventory, `numberOfPieces` set to a number, sent back whole; the optimistic lock on `_version`
that item-storage enforces; and mod-inventory's own refusals."""

from __future__ import annotations

import uuid

import requests

from tests.sandbox.inventory_data import Api, unique
from tests.sandbox.staff import staff_api


def _iro_edit(api: Api, item_id: str, pieces: int) -> tuple[dict, requests.Response]:
    """IRO's edit (master-script-longevity.jmx, IRO_Click_Barcode's JSR223 PostProcessor): the item as mod-inventory
    answers it, `jsonData.numberOfPieces = ${__Random(1,50,)}` (a JSON number), PUT back."""
    body = api.get(f"/inventory/items/{item_id}").json()
    body["numberOfPieces"] = pieces
    return body, api.put(f"/inventory/items/{item_id}", body)


def test_iro_edit_updates_the_stored_item_and_its_version(api):
    item = api.item()
    before = api.get(f"/item-storage/items/{item['id']}").json()
    _, r = _iro_edit(api, item["id"], 37)
    assert (r.status_code, r.text) == (204, "")
    stored = api.get(f"/item-storage/items/{item['id']}").json()
    assert stored["numberOfPieces"] == "37"  # mod-inventory reads it with getString: stored as text
    assert stored["_version"] == before["_version"] + 1
    # what item-storage computes is kept, and mod-inventory's representation-only fields are not stored
    assert stored["effectiveLocationId"] == before["effectiveLocationId"]
    assert stored["status"] == before["status"] and stored["hrid"] == before["hrid"]
    assert stored["materialTypeId"] == before["materialTypeId"]
    for never in ("title", "materialType", "effectiveLocation", "contributorNames", "isBoundWith", "callNumber"):
        assert never not in stored, never
    again = api.get(f"/inventory/items/{item['id']}").json()
    assert again["numberOfPieces"] == "37" and again["_version"] == str(before["_version"] + 1)


def test_a_stale_version_is_item_storages_409_as_text(api):
    item = api.item()
    stale, first = _iro_edit(api, item["id"], 3)
    assert first.status_code == 204
    stale["numberOfPieces"] = 4
    r = api.put(f"/inventory/items/{item['id']}", stale)
    assert r.status_code == 409 and r.headers["Content-Type"].startswith("text/plain")
    assert r.text == (f"Cannot update record {item['id']} because it has been changed (optimistic locking): "
                      f"Stored _version is 2, _version of request is 1")
    assert api.get(f"/item-storage/items/{item['id']}").json()["numberOfPieces"] == "3"


def test_mod_inventory_refusals(api):
    item = api.item()
    body = api.get(f"/inventory/items/{item['id']}").json()
    missing = api.put(f"/inventory/items/{uuid.uuid4()}", body)
    assert (missing.status_code, missing.text) == (404, "No item found")
    for status, message, key, value in (
            (None, "Status is a required field", "status", None),
            ({"name": "Lent"}, "Undefined status specified", "status.name", "Lent")):
        r = api.put(f"/inventory/items/{item['id']}", {**body, "status": status})
        assert r.status_code == 422
        assert r.json() == {"errors": [{"message": message, "parameters": [{"key": key, "value": value}]}]}
    r = api.put(f"/inventory/items/{item['id']}", {**body, "hrid": "it-changed"})
    assert r.status_code == 422
    assert r.json()["errors"][0]["message"] == "HRID can not be updated"
    other = api.item()
    r = api.put(f"/inventory/items/{item['id']}", {**body, "barcode": other["barcode"]})
    assert (r.status_code, r.text) == (400, f"Barcode must be unique, {other['barcode']} is already assigned to another item")
    r = api.put(f"/inventory/items/{item['id']}", {**body, "materialType": None})  # item-storage's bean validation
    assert r.status_code == 422 and r.headers["Content-Type"].startswith("text/plain")
    assert "materialTypeId" in r.text
    assert api.get(f"/item-storage/items/{item['id']}").json()["_version"] == 1  # nothing was written


def test_a_new_barcode_and_a_new_circulation_note(api, folio_sandbox):
    item = api.item()
    body = api.get(f"/inventory/items/{item['id']}").json()
    barcode = unique("i")
    note = {"noteType": "Check out", "note": "Count the pieces", "staffOnly": True}
    r = api.put(f"/inventory/items/{item['id']}", {**body, "barcode": barcode, "circulationNotes": [note]})
    assert r.status_code == 204, r.text
    stored = api.get(f"/item-storage/items/{item['id']}").json()
    assert stored["barcode"] == barcode
    [saved] = stored["circulationNotes"]
    assert uuid.UUID(saved["id"]) and saved["note"] == "Count the pieces" and saved["date"].endswith("+0000")
    admin = api.get("/users", query=f'username=="{folio_sandbox.username}"').json()["users"][0]
    assert saved["source"]["id"] == admin["id"]


def test_iro_delete(api):
    item = api.item()
    r = api.delete(f"/inventory/items/{item['id']}")
    assert (r.status_code, r.text) == (204, "")
    assert api.get(f"/inventory/items/{item['id']}").status_code == 404
    assert api.get(f"/item-storage/items/{item['id']}").status_code == 404
    again = api.delete(f"/inventory/items/{item['id']}")
    assert (again.status_code, again.text) == (404, "Not found")


def test_writes_need_their_permissions(folio_sandbox, api):
    item = api.item()
    reader = staff_api(folio_sandbox, ["inventory.items.item.get"])
    body = reader.get(f"/inventory/items/{item['id']}").json()
    r = reader.put(f"/inventory/items/{item['id']}", body)
    assert r.status_code == 403 and r.text.endswith("requires permission: inventory.items.item.put")
    r = reader.delete(f"/inventory/items/{item['id']}")
    assert r.status_code == 403 and r.text.endswith("requires permission: inventory.items.item.delete")
    no_token = requests.delete(f"{folio_sandbox.url}/inventory/items/{item['id']}",
                               headers={"X-Okapi-Tenant": folio_sandbox.tenant}, timeout=30)
    assert no_token.status_code == 400  # mod-authtoken since 2.15.1 (Quesnelia on): no token is 400
    assert api.get(f"/item-storage/items/{item['id']}").json()["_version"] == 1
