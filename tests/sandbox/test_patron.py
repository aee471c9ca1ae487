"""mod-patron over HTTP (docs/folio.md §3.4 a, §4.7): holds on an instance or an item and a patron's
account, in mod-patron's own shapes, with its path checks and error mapping."""

from __future__ import annotations

import time
import uuid

from tests.sandbox.inventory_data import ANNEX, CIRC_DESK_1, Api, error_messages, ptf_time


def _api(sandbox, token) -> Api:
    return Api.of(sandbox, token)


def _hold_date() -> str:
    """The holds script's `yyyy-MM-dd'T'HH:mm:ss.SSSZ` (Java's Z is +0000)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S.000+0000", time.gmtime())


def _instance_with_item(api: Api, status: str = "Available") -> tuple[dict, dict]:
    instance = api.instance()
    holdings = api.holdings(instance["id"])
    return instance, api.item(status=status, holdings_id=holdings["id"])


def test_instance_hold_accepts_the_ptf_body(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    user = api.user()
    instance, item = _instance_with_item(api)
    r = api.post(f"/patron/account/{user['id']}/instance/{instance['id']}/hold",
                 {"item": {"instanceId": instance["id"]}, "requestDate": _hold_date(), "pickupLocationId": CIRC_DESK_1})
    assert r.status_code == 201, r.text
    assert '"requestId"' in r.text  # what the PTF script asserts
    hold = r.json()
    assert hold["item"] == {"instanceId": instance["id"], "itemId": item["id"], "title": instance["title"], "author": "Author, An"}
    assert (hold["pickupLocationId"], hold["status"], hold["queuePosition"]) == (CIRC_DESK_1, "Open - Not yet filled", 1)
    request = api.get(f"/circulation/requests/{hold['requestId']}").json()
    assert (request["requestType"], request["requesterId"], request["itemId"]) == ("Page", user["id"], item["id"])
    assert api.item_status(item["id"]) == "Paged"


def test_item_hold_takes_the_first_request_type_the_item_allows(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    _, available = _instance_with_item(api)
    r = api.post(f"/patron/account/{api.user()['id']}/item/{available['id']}/hold",
                 {"requestDate": _hold_date(), "pickupLocationId": CIRC_DESK_1, "expirationDate": "2099-01-01T00:00:00.000+0000"})
    assert r.status_code == 201, r.text
    assert api.get(f"/circulation/requests/{r.json()['requestId']}").json()["requestType"] == "Page"
    assert r.json()["expirationDate"] == "2099-01-01T00:00:00.000+00:00"  # a java.util.Date, as RMB writes it
    _, lent = _instance_with_item(api)
    api.check_out(lent, api.user())
    r = api.post(f"/patron/account/{api.user()['id']}/item/{lent['id']}/hold",
                 {"requestDate": _hold_date(), "pickupLocationId": CIRC_DESK_1})
    assert r.status_code == 201 and api.get(f"/circulation/requests/{r.json()['requestId']}").json()["requestType"] == "Hold"
    _, withdrawn = _instance_with_item(api, "Withdrawn")
    r = api.post(f"/patron/account/{api.user()['id']}/item/{withdrawn['id']}/hold",
                 {"requestDate": _hold_date(), "pickupLocationId": CIRC_DESK_1})
    assert r.status_code == 422
    assert r.json()["errors"] == [{"message": "Cannot find a valid request type for this item",
                                   "parameters": [{"key": "itemId", "value": withdrawn["id"]}]}]


def test_downstream_422_passes_through(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    empty = api.instance()
    r = api.post(f"/patron/account/{api.user()['id']}/instance/{empty['id']}/hold",
                 {"requestDate": _hold_date(), "pickupLocationId": CIRC_DESK_1})
    assert r.status_code == 422
    assert error_messages(r) == ["Cannot create request objects when items list is null or empty"]
    assert '" : ' not in r.text  # mod-patron's own (compact) JSON, not mod-circulation's pretty printing


def test_path_ids_must_match_mod_patrons_uuid_regex(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    not_rfc = "00000000-0000-0000-0000-000000000000"  # version 0: a uuid, but not one mod-patron accepts
    for path in (f"/patron/account/{not_rfc}", f"/patron/account/abc/instance/{uuid.uuid4()}/hold"):
        r = api.post(path, {"requestDate": _hold_date(), "pickupLocationId": CIRC_DESK_1}) if path.endswith("hold") else api.get(path)
        assert r.status_code == 400 and "parameter is incorrect" in r.text


def test_hold_body_is_validated(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    instance, _ = _instance_with_item(api)
    r = api.post(f"/patron/account/{api.user()['id']}/instance/{instance['id']}/hold", {"requestDate": _hold_date()})
    assert r.status_code == 422
    assert r.json()["errors"][0]["parameters"] == [{"key": "pickupLocationId", "value": "null"}]


def test_account(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    user = api.user()
    lent = [api.item() for _ in range(2)]
    for item in lent:
        api.check_out(item, user)
    instance, _ = _instance_with_item(api)
    api.post(f"/patron/account/{user['id']}/instance/{instance['id']}/hold", {"requestDate": _hold_date(), "pickupLocationId": CIRC_DESK_1})
    api.created("/accounts", {"userId": user["id"], "amount": 2.5, "remaining": 2.5, "status": {"name": "Open"},
                              "paymentStatus": {"name": "Outstanding"}, "feeFineType": "Lost item fee", "itemId": lent[0]["id"],
                              "feeFineId": str(uuid.uuid4()), "ownerId": str(uuid.uuid4())})
    everything = api.get(f"/patron/account/{user['id']}", includeLoans="true", includeCharges="true", includeHolds="true",
                         sortBy="sort.ascending", offset=0, limit=100).json()
    assert (everything["totalLoans"], everything["totalHolds"], everything["totalChargesCount"]) == (2, 1, 1)
    assert everything["totalCharges"] == {"amount": 2.5, "isoCurrencyCode": "USD"}
    assert {loan["item"]["itemId"] for loan in everything["loans"]} == {i["id"] for i in lent}
    assert all(loan["overdue"] is False and loan["dueDate"] for loan in everything["loans"])
    assert everything["holds"][0]["item"]["instanceId"] == instance["id"]
    assert everything["charges"][0]["chargeAmount"] == {"amount": 2.5, "isoCurrencyCode": "USD"}
    # BLS's call: counts only
    counts = api.get(f"/patron/account/{user['id']}", includeLoans="false", includeCharges="false", includeHolds="false",
                     sortBy="sort.ascending", offset=0, limit=100).json()
    assert (counts["loans"], counts["holds"], counts["charges"], counts["totalLoans"]) == ([], [], [], 2)
    missing = api.get(f"/patron/account/{uuid.uuid4()}")
    assert (missing.status_code, missing.text) == (404, "User not found")


def test_hold_requires_a_pickup_location_that_is_one(folio_sandbox, admin_token):
    api = _api(folio_sandbox, admin_token)
    instance = api.instance()
    api.item(location=ANNEX, holdings_id=api.holdings(instance["id"], ANNEX)["id"])
    r = api.post(f"/patron/account/{api.user()['id']}/instance/{instance['id']}/hold",
                 {"requestDate": ptf_time(), "pickupLocationId": str(uuid.uuid4())})
    assert r.status_code == 422 and "Pickup service point does not exist" in error_messages(r)
