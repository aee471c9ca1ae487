"""mod-circulation's pick slips, `GET /circulation/pick-slips/{servicePointId}`, as the PTF's MPS group polls them:
the open Page requests for items at the locations the service point serves, with the item, request and requester
as the slip templates use them."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.sandbox.inventory_data import CIRC_DESK_1, MAIN_LIBRARY, Api, unique


@pytest.fixture(scope="module")
def desk(api: Api) -> dict:
    """A service point of its own with two locations (its primary one), an item of the Main Library's (another
    desk's), and requests of every kind at them."""
    main = api.get(f"/locations/{MAIN_LIBRARY}").json()
    point = api.created("/service-points", {"name": unique("Stacks desk "), "code": unique("sd"),
                                            "discoveryDisplayName": "Stacks desk", "pickupLocation": False})

    def location(name: str) -> dict:
        return api.created("/locations", {
            "name": unique(name), "code": unique("ST/"), "discoveryDisplayName": name, "isActive": True,
            "institutionId": main["institutionId"], "campusId": main["campusId"], "libraryId": main["libraryId"],
            "primaryServicePoint": point["id"], "servicePointIds": [point["id"]]})

    east, west = location("East stacks "), location("West stacks ")
    requester = api.user(first="Pat", last="Pager")
    paged = []
    for loc in (east, east, west):
        item = api.item(location=loc["id"])
        r = api.request(item, requester, "Page")
        assert r.status_code == 201, r.text
        paged.append((item, r.json(), loc))
    cancelled = api.request(api.item(location=east["id"]), requester, "Page").json()
    assert api.put(f"/circulation/requests/{cancelled['id']}", {**cancelled, "status": "Closed - Cancelled",
                                                               "cancellationReasonId": None}).status_code == 204
    held = api.item(location=east["id"])
    assert api.check_out(held, api.user()).status_code == 201
    assert api.request(held, requester, "Hold").status_code == 201
    elsewhere = api.request(api.item(location=MAIN_LIBRARY), requester, "Page")
    assert elsewhere.status_code == 201
    return {"point": point, "paged": paged, "requester": requester, "east": east, "west": west,
            "elsewhere": elsewhere.json()}


def test_the_open_page_requests_at_the_desks_locations_and_no_others(api, desk):
    r = api.get(f"/circulation/pick-slips/{desk['point']['id']}")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("application/json")
    assert r.text.startswith('{\n  "pickSlips" : [')  # mod-circulation pretty-prints
    body = r.json()
    assert body["totalRecords"] == len(body["pickSlips"])
    found = {slip["request"]["requestID"] for slip in body["pickSlips"]}
    assert {request["id"] for _, request, _ in desk["paged"]} <= found  # (another test pages and cancels one more)
    assert body["totalRecords"] in (3, 4)
    assert desk["elsewhere"]["id"] not in json.dumps(body)


def test_a_slip_holds_what_the_pick_slip_template_prints(api, desk):
    slips = api.get(f"/circulation/pick-slips/{desk['point']['id']}").json()["pickSlips"]
    item, request, loc = desk["paged"][2]
    [slip] = [s for s in slips if s["request"]["requestID"] == request["id"]]
    instance = api.get(f"/inventory/items/{item['id']}").json()
    assert slip["item"]["barcode"] == item["barcode"] and slip["item"]["status"] == "Paged"
    assert slip["item"]["title"] == instance["title"]
    assert slip["item"]["primaryContributor"] == "Author, An" == slip["item"]["allContributors"]
    assert (slip["item"]["materialType"], slip["item"]["loanType"]) == ("book", "Can circulate")
    assert slip["item"]["callNumber"] == "QA76 .T4" and slip["item"]["copy"] == ""
    assert slip["item"]["effectiveLocationSpecific"] == loc["name"]
    assert slip["item"]["effectiveLocationPrimaryServicePointName"] == desk["point"]["name"]
    library = api.get(f"/location-units/libraries/{loc['libraryId']}").json()
    assert slip["item"]["effectiveLocationLibrary"] == library["name"]
    assert slip["item"]["enumeration"] is None and "enumeration" in slip["item"]  # Vert.x's put keeps nulls
    assert slip["request"]["servicePointPickup"] == "Circ Desk 1"
    assert slip["request"]["requestDate"].endswith("Z") and "requestExpirationDate" in slip["request"]
    requester = desk["requester"]
    assert slip["requester"] == {
        "firstName": "Pat", "preferredFirstName": "Pat", "lastName": "Pager", "middleName": None,
        "barcode": requester["barcode"], "patronGroup": "undergrad", "departments": ""}
    assert slip["currentDateTime"].endswith("Z")


def test_a_desk_without_locations_or_an_unknown_one_has_no_slips(api):
    for point in (CIRC_DESK_1.replace("3a40", "0000"), str(uuid.uuid4())):
        r = api.get(f"/circulation/pick-slips/{point}")
        assert r.status_code == 200 and r.json() == {"pickSlips": [], "totalRecords": 0}, r.text
    bad = api.get("/circulation/pick-slips/not-a-uuid")  # UUID.fromString in the handler, no failure handler
    assert (bad.status_code, bad.text) == (500, "Internal Server Error")


def test_a_cancelled_page_leaves_the_slips(api, desk):
    request = api.request(api.item(location=desk["west"]["id"]), desk["requester"], "Page").json()
    listed = api.get(f"/circulation/pick-slips/{desk['point']['id']}").json()
    assert request["id"] in {slip["request"]["requestID"] for slip in listed["pickSlips"]}
    assert api.put(f"/circulation/requests/{request['id']}", {**request, "status": "Closed - Cancelled"}).status_code == 204
    slips = api.get(f"/circulation/pick-slips/{desk['point']['id']}").json()
    assert slips["totalRecords"] == listed["totalRecords"] - 1 and request["id"] not in json.dumps(slips)
