"""mod-circulation's requests over HTTP (docs/folio.md §4.5, §4.6, §5.2, §5.4): request types per item
status, duplicates, queue positions, what check-in and check-out do to the queue, instance-level requests,
and the storage endpoint that bypasses the rules."""

from __future__ import annotations

import threading
import uuid
from datetime import datetime

import pytest

from tests.sandbox.inventory_data import (
    ANNEX,
    CIRC_DESK_1,
    CIRC_DESK_2,
    MAIN_LIBRARY,
    ONLINE_SP,
    Api,
    error_codes,
    error_messages,
    ptf_time,
)


def _api(sandbox, token) -> Api:
    return Api.of(sandbox, token)


def _queue(api: Api, item: dict) -> list[tuple[str, int]]:
    body = api.get(f"/circulation/requests/queue/item/{item['id']}").json()
    return [(r["requesterId"], r["position"]) for r in body["requests"]]


def test_item_level_request_accepts_the_ptf_body(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    user, item = api.user(), api.item()
    body = {"requestDate": ptf_time(), "requesterId": user["id"], "requestType": "Page", "fulfilmentPreference": "Hold Shelf",
            "itemId": item["id"], "requestExpirationDate": "2099-01-01T00:00:00Z", "pickupServicePointId": CIRC_DESK_1}
    r = api.post("/circulation/requests", body)
    assert r.status_code == 201, r.text
    request = r.json()
    assert r.headers["Location"] == f"/circulation/requests/{request['id']}"
    assert '"id" : ' in r.text
    assert (request["status"], request["position"], request["requestLevel"]) == ("Open - Not yet filled", 1, "Item")
    assert request["fulfillmentPreference"] == "Hold Shelf" and "fulfilmentPreference" not in request
    assert request["holdingsRecordId"] == item["holdingsRecordId"] and request["instanceId"]
    assert request["requester"]["barcode"] == user["barcode"] and request["item"]["barcode"] == item["barcode"]
    assert request["pickupServicePoint"]["name"] == "Circ Desk 1"
    assert api.item_status(item["id"]) == "Paged"  # a Page pages the item
    stored = api.get(f"/request-storage/requests/{request['id']}").json()
    assert stored["position"] == 1 and stored["status"] == "Open - Not yet filled"


def test_a_client_sent_id_and_unknown_fields_are_ignored(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    client_id = str(uuid.uuid4())
    r = api.post("/circulation/requests", {"id": client_id, "someFutureField": True, "requestType": "Page",
                                           "fulfillmentPreference": "Hold Shelf", "itemId": api.item()["id"],
                                           "requesterId": api.user()["id"], "pickupServicePointId": CIRC_DESK_1,
                                           "requestDate": ptf_time()})
    assert r.status_code == 201, r.text
    assert r.json()["id"] != client_id and "someFutureField" not in r.json()


def test_ilr_body_with_item_barcode(folio_sandbox, admin_token):
    """The ILR body: a Hold on a checked-out item, with item{barcode} besides itemId (docs/folio.md §3.4)."""
    api = _api(folio_sandbox, admin_token)
    item = api.item()
    api.check_out(item, api.user())
    requester = api.user()
    r = api.post("/circulation/requests", {"requestType": "Hold", "fulfilmentPreference": "Hold Shelf",
                                           "item": {"barcode": item["barcode"]},
                                           "itemId": item["id"], "requesterId": requester["id"], "pickupServicePointId": CIRC_DESK_1,
                                           "requestDate": ptf_time()})
    assert r.status_code == 201, r.text
    assert api.open_loans(item)[0]["action"] == "holdrequested"
    assert api.item_status(item["id"]) == "Checked out"


@pytest.mark.parametrize("status, request_type, allowed", [
    ("Available", "Page", True), ("Available", "Hold", False), ("Available", "Recall", False),
    ("Checked out", "Page", False), ("Checked out", "Hold", True), ("Checked out", "Recall", True),
    ("Missing", "Hold", True), ("Missing", "Recall", False), ("In transit", "Recall", True),
    ("Paged", "Page", False), ("Withdrawn", "Hold", False),
])
def test_request_types_per_item_status(folio_sandbox, admin_token, status, request_type, allowed):
    api = _api(folio_sandbox, admin_token)
    item = api.item(status=status)
    r = api.request(item, api.user(), request_type)
    if allowed:
        assert r.status_code == 201, r.text
    else:
        assert r.status_code == 422
        assert r.json()["errors"] == [{"message": f"{request_type} requests are not allowed for this patron and item combination",
                                       "parameters": [{"key": "requestType", "value": request_type}]}]


def test_duplicate_requests_and_own_loan(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    borrower, requester, item = api.user(), api.user(), api.item()
    api.check_out(item, borrower)
    first = api.request(item, requester, "Hold")
    again = api.request(item, requester, "Recall")
    assert again.status_code == 422
    assert (error_messages(again), error_codes(again)) == (["This requester already has an open request for this item"],
                                                           ["ITEM_ALREADY_REQUESTED"])
    assert {"key": "requestId", "value": first.json()["id"]} in again.json()["errors"][0]["parameters"]
    own = api.request(item, borrower, "Hold")
    assert own.status_code == 422
    assert error_messages(own) == ["This requester already has this item on loan"]
    assert error_codes(own) == ["REQUESTER_ALREADY_HAS_THIS_ITEM_ON_LOAN"]


def test_pickup_service_point_rules(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    user, item = api.user(), api.item()
    none = api.post("/circulation/requests", {"requestType": "Page", "fulfillmentPreference": "Hold Shelf", "itemId": item["id"],
                                              "requesterId": user["id"], "requestDate": ptf_time()})
    assert none.status_code == 422
    assert error_codes(none) == ["HOLD_SHELF_REQUESTS_REQUIRE_PICKUP_SERVICE_POINT"]
    online = api.request(item, user, "Page", pickup=ONLINE_SP)
    assert (error_messages(online), error_codes(online)) == (["Service point is not a pickup location"],
                                                             ["SERVICE_POINT_IS_NOT_PICKUP_LOCATION"])
    assert api.item_status(item["id"]) == "Available"


def test_inactive_and_blocked_requesters(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    item = api.item(status="Checked out")
    assert error_messages(api.request(item, api.user(active=False), "Hold")) == ["Inactive users cannot make requests"]
    blocked = api.user()
    api.created("/manualblocks", {"userId": blocked["id"], "type": "Manual", "desc": "No requests", "requests": True})
    assert error_messages(api.request(item, blocked, "Hold")) == ["Patron blocked from requesting"]
    unknown = api.request(item, {"id": str(uuid.uuid4())}, "Hold")
    assert error_messages(unknown) == ["A valid user and patron group are required. User is null"]


def test_title_level_is_refused_while_tlr_is_off(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    r = api.post("/circulation/requests", {"requestLevel": "Title", "requestType": "Hold", "fulfillmentPreference": "Hold Shelf",
                                           "instanceId": api.instance()["id"], "requesterId": api.user()["id"],
                                           "pickupServicePointId": CIRC_DESK_1, "requestDate": ptf_time()})
    assert r.status_code == 422 and error_codes(r)[0] == "REQUEST_LEVEL_IS_NOT_ALLOWED"


def test_queue_positions_are_renumbered_when_a_request_is_cancelled(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    item = api.item()
    api.check_out(item, api.user())
    requesters = [api.user() for _ in range(3)]
    ids = [api.request(item, u, "Hold").json()["id"] for u in requesters]
    assert _queue(api, item) == [(u["id"], n) for n, u in enumerate(requesters, start=1)]
    first = api.get(f"/circulation/requests/{ids[0]}").json()
    reason = api.get("/cancellation-reason-storage/cancellation-reasons").json()["cancellationReasons"][0]["id"]
    put = api.put(f"/circulation/requests/{ids[0]}", {**first, "status": "Closed - Cancelled", "cancellationReasonId": reason})
    assert put.status_code == 204
    cancelled = api.get(f"/circulation/requests/{ids[0]}").json()
    assert cancelled["status"] == "Closed - Cancelled" and "position" not in cancelled and cancelled["cancelledDate"]
    assert _queue(api, item) == [(requesters[1]["id"], 1), (requesters[2]["id"], 2)]
    again = api.put(f"/circulation/requests/{ids[0]}", {**first, "status": "Closed - Cancelled"})
    assert again.status_code == 422 and error_codes(again) == ["REQUEST_ALREADY_CLOSED"]


def test_cancelling_a_page_makes_the_item_available_again(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    item = api.item()
    page = api.request(item, api.user(), "Page").json()
    assert api.put(f"/circulation/requests/{page['id']}", {**page, "status": "Closed - Cancelled"}).status_code == 204
    assert api.item_status(item["id"]) == "Available"


def test_recall_shortens_the_due_date(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    item = api.item()
    loan = api.check_out(item, api.user()).json()
    assert api.request(item, api.user(), "Recall").status_code == 201
    recalled = api.get(f"/circulation/loans/{loan['id']}").json()
    assert recalled["action"] == "recallrequested" and recalled["dueDateChangedByRecall"] is True
    # Example Loan Policy: recall return interval 1 week, minimum guaranteed loan period 1 week
    assert datetime.fromisoformat(recalled["dueDate"]) < datetime.fromisoformat(loan["dueDate"])


def test_hold_fulfilled_at_the_pickup_desk(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    borrower, first, second, item = api.user(), api.user(), api.user(), api.item()
    api.check_out(item, borrower)
    hold = api.request(item, first, "Hold").json()
    api.request(item, second, "Hold")
    body = api.check_in(item, CIRC_DESK_1).json()
    assert body["item"]["status"]["name"] == "Awaiting pickup"
    assert body["staffSlipContext"]["requester"]["barcode"] == first["barcode"]
    awaiting = api.get(f"/circulation/requests/{hold['id']}").json()
    assert awaiting["status"] == "Open - Awaiting pickup" and awaiting["holdShelfExpirationDate"]
    # PTF's check-in step 8 finds it
    q = f'(itemId=={item["id"]} and (status=="Open - Awaiting pickup" or status=="Open - Awaiting delivery"))'
    assert api.get("/circulation/requests", query=q).json()["totalRecords"] == 1
    other = api.check_out(item, second)
    assert other.status_code == 422
    assert error_messages(other)[0].endswith("because it has been requested by another patron")
    assert api.check_out(item, first).status_code == 201
    filled = api.get(f"/circulation/requests/{hold['id']}").json()
    assert filled["status"] == "Closed - Filled" and "position" not in filled
    assert _queue(api, item) == [(second["id"], 1)]


def test_hold_checked_in_elsewhere_goes_in_transit_then_waits(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    item = api.item()
    api.check_out(item, api.user())
    hold = api.request(item, api.user(), "Hold", pickup=CIRC_DESK_2).json()
    body = api.check_in(item, CIRC_DESK_1).json()
    assert body["item"]["status"]["name"] == "In transit" and body["item"]["inTransitDestinationServicePointId"] == CIRC_DESK_2
    assert api.get(f"/circulation/requests/{hold['id']}").json()["status"] == "Open - In transit"
    api.check_in(item, CIRC_DESK_2)
    assert api.item_status(item["id"]) == "Awaiting pickup"
    assert api.get(f"/circulation/requests/{hold['id']}").json()["status"] == "Open - Awaiting pickup"


def test_delivery_request_awaits_delivery(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    item = api.item()
    api.check_out(item, api.user())
    r = api.post("/circulation/requests", {"requestType": "Hold", "fulfillmentPreference": "Delivery", "itemId": item["id"],
                                           "requesterId": api.user()["id"], "requestDate": ptf_time()})
    assert r.status_code == 201, r.text
    api.check_in(item)
    assert api.item_status(item["id"]) == "Awaiting delivery"
    assert api.get(f"/circulation/requests/{r.json()['id']}").json()["status"] == "Open - Awaiting delivery"


def test_page_checked_out_by_its_requester(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    requester, item = api.user(), api.item()
    page = api.request(item, requester, "Page").json()
    assert api.check_out(item, requester).status_code == 201
    assert api.get(f"/circulation/requests/{page['id']}").json()["status"] == "Closed - Filled"


# -- instance-level requests ---------------------------------------------------------------------------
def _instance_with_items(api: Api, statuses: list[tuple[str, str]]) -> tuple[dict, list[dict]]:
    instance = api.instance()
    items = []
    for status, location in statuses:
        holdings = api.holdings(instance["id"], location)
        items.append(api.item(status=status, location=location, holdings_id=holdings["id"]))
    return instance, items


def test_instance_request_accepts_the_ptf_body_and_pages_an_available_item(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    instance, items = _instance_with_items(api, [("Checked out", ANNEX), ("Available", ANNEX), ("Available", MAIN_LIBRARY)])
    r = api.post("/circulation/requests/instances", {"requestDate": ptf_time(), "requesterId": api.user()["id"],
                                                     "instanceId": instance["id"], "requestExpirationDate": "2099-01-01T00:00:00Z",
                                                     "pickupServicePointId": CIRC_DESK_1})
    assert r.status_code == 201, r.text
    request = r.json()
    assert '"id" : ' in r.text and request["requestType"] == "Page" and request["requestLevel"] == "Item"
    assert request["itemId"] == items[2]["id"]  # available and in a location the pickup desk serves
    assert request["instanceId"] == instance["id"] and request["fulfillmentPreference"] == "Hold Shelf"
    assert api.item_status(items[2]["id"]) == "Paged"


def test_instance_request_recalls_when_nothing_is_available(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    instance, items = _instance_with_items(api, [("Available", ANNEX), ("Available", ANNEX)])
    for item in items:
        api.check_out(item, api.user())
    api.request(items[0], api.user(), "Hold")  # a longer queue on the first item
    r = api.post("/circulation/requests/instances", {"requestDate": ptf_time(), "requesterId": api.user()["id"],
                                                     "instanceId": instance["id"], "pickupServicePointId": CIRC_DESK_1})
    assert r.status_code == 201, r.text
    assert (r.json()["requestType"], r.json()["itemId"]) == ("Recall", items[1]["id"])


def test_instance_request_errors(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    empty = api.post("/circulation/requests/instances", {"requestDate": ptf_time(), "requesterId": api.user()["id"],
                                                         "instanceId": api.instance()["id"], "pickupServicePointId": CIRC_DESK_1})
    assert empty.status_code == 422
    assert error_messages(empty) == ["Cannot create request objects when items list is null or empty"]
    instance, _ = _instance_with_items(api, [("Available", ANNEX), ("Checked out", ANNEX)])
    r = api.post("/circulation/requests/instances", {"requestDate": ptf_time(), "requesterId": api.user(active=False)["id"],
                                                     "instanceId": instance["id"], "pickupServicePointId": CIRC_DESK_1})
    assert r.status_code == 422
    messages = error_messages(r)
    assert "Inactive users cannot make requests" in messages
    assert "Page requests are not allowed for this patron and item combination" in messages  # from the checked-out item
    no_date = api.post("/circulation/requests/instances", {"requesterId": api.user()["id"], "instanceId": instance["id"]})
    assert error_messages(no_date) == ["Request must have a request date"]


def test_concurrent_holds_get_distinct_positions(two_process_sandbox):
    sandbox = two_process_sandbox
    api = _api(sandbox, sandbox.login())
    item = api.item()
    api.check_out(item, api.user())
    requesters = [api.user() for _ in range(12)]
    results = []
    start = threading.Barrier(len(requesters))

    def hold(user: dict) -> None:
        start.wait()
        results.append(api.request(item, user, "Hold"))

    threads = [threading.Thread(target=hold, args=(u,)) for u in requesters]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.status_code for r in results] == [201] * 12, [r.text for r in results if r.status_code != 201]
    assert sorted(r.json()["position"] for r in results) == list(range(1, 13))
    assert sorted(p for _, p in _queue(api, item)) == list(range(1, 13))


def test_request_storage_bypasses_the_rules(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    item = api.item()  # Available: a Hold would be refused by mod-circulation
    instance_id = api.get(f"/holdings-storage/holdings/{item['holdingsRecordId']}").json()["instanceId"]
    body = {"requestType": "Hold", "requestLevel": "Item", "requestDate": ptf_time(), "requesterId": api.user()["id"],
            "itemId": item["id"], "instanceId": instance_id, "fulfillmentPreference": "Hold Shelf",
            "status": "Open - Not yet filled", "position": 1, "pickupServicePointId": CIRC_DESK_1}
    r = api.post("/request-storage/requests", body)
    assert r.status_code == 201, r.text
    found = api.get("/circulation/requests", query=f"itemId=={item['id']}").json()
    assert found["totalRecords"] == 1 and found["requests"][0]["fulfillmentPreference"] == "Hold Shelf"
    assert api.item_status(item["id"]) == "Available"


def test_unknown_request_is_404(folio_sandbox, admin_token):
    missing = str(uuid.uuid4())
    r = _api(folio_sandbox, admin_token).get(f"/circulation/requests/{missing}")
    assert (r.status_code, r.text) == (404, f'Request record with ID "{missing}" cannot be found')
