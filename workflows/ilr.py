"""Item-level requests (the PTF master plan's ILR group, master-script-longevity.jmx lines 14758-14940): a patron
looked up by barcode, then an item by barcode and a Hold on it for that patron.

Three transactions, named as the plan names them: "ILR_TC: Get RequesterId" (`GET /users?query=(barcode=="...")`,
the requester is its first user), then, in the loop "Loop Controller: ${RequestsPerUser} ITL Requests per User"
(line 14834), "ILR_TC: Get ItemId" (`GET /inventory/items?query=(barcode=="...")`, the item is its first) and
"ILR_TC: Create ILR" (`POST /circulation/requests`, the plan's body: a Hold, "Hold Shelf" under its older
spelling `fulfilmentPreference`, no request level, its date `yyyy-MM-dd'T'HH:mm:ss'Z'`). The loop's count,
`${RequestsPerUser}`, is the test plan's user-defined variable `${__P(RequestsPerUser,1)}` (line 37): 1, so
JMeter ran the Hold every iteration (the plan also defines `ILR_RequestsPerUser`, line 334, which nothing reads).
An extractor that finds no user or item leaves "NO MATCH", as the plan's do (lines 14818, 14871), and the Hold is
refused. No timers: the group's ConstantThroughputTimer paces it, 3 samples a minute per thread (line 14936;
`--pace 3/m`, as scenarios/ptf-master.toml sets it): 3 calls an iteration, one a minute.

The plan's CSVs give patron and item barcodes (ILR_userBarcodes.csv, ILR_itembarcodes.csv): here patrons without
loans or open requests, each requesting once (no requester asks twice for one item), and checked-out items
(FOLIO takes Holds on them), round-robin; the pickup desk is the dataset's first (the plan's is a fixed id of
the PTF's tenant, line 346).
"""

from __future__ import annotations

from datetime import datetime, timezone

from folioperf.workflows.master_plan import MASTER_HEADERS

from folioperf import FolioTaskSet, FolioUser, TestData, Workflow, task

GET_REQUESTER, GET_ITEM, CREATE = "ILR_TC: Get RequesterId", "ILR_TC: Get ItemId", "ILR_TC: Create ILR"
NO_MATCH = "NO MATCH"  # the plan's JSON extractors' default value


def _first_id(response, key: str) -> str:
    records = response.json().get(key) or []
    return records[0]["id"] if records else NO_MATCH


class ItemLevelRequests(FolioTaskSet):
    @task
    def request(self) -> None:
        requester = self.pools.acquire("requesters")
        item = self.pools.acquire("items")
        pickup = self.pools.acquire("pickup_service_points")
        with self.transaction(GET_REQUESTER):
            requester_id = _first_id(self.okapi.get("/users", params={"query": f'(barcode=="{requester["barcode"]}")'}),
                                     "users")
        with self.transaction(GET_ITEM):
            item_id = _first_id(self.okapi.get("/inventory/items", params={"query": f'(barcode=="{item["barcode"]}")'}),
                                "items")
        with self.transaction(CREATE):
            self.okapi.post("/circulation/requests", expect=(201,), json={
                "requestType": "Hold",
                "fulfilmentPreference": "Hold Shelf",
                "item": {"barcode": item["barcode"]},
                "itemId": item_id,
                "requesterId": requester_id,
                "pickupServicePointId": pickup["id"],
                "requestDate": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            })


def draw(data: TestData) -> dict[str, list[dict]]:
    desks = data.dataset.used("pickup_service_points") if data.dataset is not None else []
    if not desks:  # a tenant without the dataset: its first pickup desk by name
        desks = sorted((s for s in data.service_points() if s.get("pickupLocation") is True), key=lambda s: s["name"])
    return {
        "requesters": data.patrons("requests", open_loans=0, no_open_requests=True),
        "items": data.items("Checked out", open_loan=True),
        "pickup_service_points": [{"id": s["id"], "name": s["name"]} for s in desks[:1]],
    }


workflow = Workflow(
    name="ilr",
    description="Item-level requests: a patron and an item looked up by barcode, a Hold on the item; the plan's "
                "loop count is 1 (its test plan defines RequestsPerUser), so JMeter ran the Hold every "
                "iteration (PTF master plan ILR, paced --pace 3/m)",
    taskset=ItemLevelRequests,
    dataset="holds",
    pools={"requesters": "once", "items": "shared", "pickup_service_points": "shared"},
    draw=draw,
    transactions=(GET_REQUESTER, GET_ITEM, CREATE),
    headers=lambda options: MASTER_HEADERS,
)


class IlrUser(FolioUser):
    workflow = workflow
