"""The PTF master plan's Blacklight simulation (BLS; master-script-longevity.jmx lines 46089-46428): what a
discovery layer (Blacklight) does to FOLIO for a patron's page request, in one transaction with
`Accept: text/plain` on every call (the group's header manager, lines 46103-46118):

    GET  /item-storage/items                     (no query: the first page of items)
    GET  /item-storage/items/{id}                the item of the plan's CSV row
    PUT  /item-storage/items/{id}                the same record, descriptionOfPieces "SomeDescription_<epoch ms>"
    POST /item-storage/items                     a new Available item in the same holdings, with its loan and
                                                 material types
    GET  /users/{id}
    GET  /patron/account/{id}?includeLoans=false&includeCharges=false&includeHolds=false&sortBy=sort.ascending&...
    POST /circulation/requests                   a Page request for the CSV row's item, at the pickup desk

No pauses (the plan's 300 ms ConstantTimer is disabled, line 46418); the group's ConstantThroughputTimer paces
7 samples a minute per thread (line 46423, calcMode 0): `--pace 7/m`, one iteration a minute, as
scenarios/ptf-master.toml runs it.

The test data: Available items without requests with their holdings and instances (an exclusive pool), patrons
who may request (shared) and the dataset's pickup desk. Each iteration pages its item, and the item it created
(Available, in the same holdings, no request) takes the paged one's place in the pool: the plan's CSV
recycled rows a 5,000-row file could not run out of at a row a minute, and this pool cannot run out at all,
so an 8- or 24-hour run keeps requesting items that can be paged.

The plan's request expires on 2023-05-24 (line 46391), written when that was still to come: sent as written by
default, as JMeter sent it; `--plan as-written` sends what was meant, an expiry 30 days after the request.
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timedelta, timezone

from folioperf.workflows.master_plan import MASTER_HEADERS

from folioperf import FolioTaskSet, FolioUser, TestData, Workflow, task
from folioperf.jmeter import AS_WRITTEN

TRANSACTION = "BLS_TC: Blacklight simulation"  # line 46156
EXPIRES = "2023-05-24T11:04:25.000+00:00"  # line 46391
# patron/account's parameters, in the plan's order (lines 46321-46362)
ACCOUNT = {"includeLoans": "false", "includeCharges": "false", "includeHolds": "false", "sortBy": "sort.ascending",
           "offset": "0", "limit": "100"}
# the plan-wide headers (workflows.master_plan), the group's Accept and Origin over them (lines 46103-46118)
HEADERS = {**MASTER_HEADERS, "Accept": "text/plain", "Origin": "http://localhost"}


def _date(when: datetime) -> str:
    """`yyyy-MM-dd'T'HH:mm:ss.SSS'Z'` (line 46390), in UTC."""
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


class BlacklightSimulation(FolioTaskSet):
    @task
    def simulate(self) -> None:
        item = self.pools.acquire("items")
        user_id = self.pools.acquire("patrons")["id"]
        pickup = self.pools.acquire("pickup_service_points")["id"]
        okapi = self.okapi
        paged = item["id"]
        with self.transaction(TRANSACTION):
            okapi.get("/item-storage/items")
            record = okapi.get("/item-storage/items/{id}", id=paged).json()
            record["descriptionOfPieces"] = f"SomeDescription_{int(time.time() * 1000)}"  # line 46216
            okapi.put("/item-storage/items/{id}", id=paged, json=record, expect=(204,))
            copy = str(uuid.uuid4())
            # the JSON extractor's default (line 46224) where the record lacks a type
            okapi.post("/item-storage/items", expect=(201,), json={
                "id": copy, "holdingsRecordId": item["holdingsRecordId"],
                "permanentLoanTypeId": record.get("permanentLoanTypeId", "not_found"),
                "status": {"name": "Available"}, "materialTypeId": record.get("materialTypeId", "not_found")})
            item["id"] = copy  # the pool's entry is the copy from now on, whatever comes next
            okapi.get("/users/{id}", id=user_id)
            okapi.get("/patron/account/{id}", id=user_id, params=ACCOUNT)
            now = datetime.now(timezone.utc)
            expires = (now + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%S.000+00:00") \
                if self.user.plan == AS_WRITTEN else EXPIRES
            okapi.post("/circulation/requests", expect=(201,), json={
                "id": str(uuid.uuid4()), "requestLevel": "Item", "requestType": "Page", "requestDate": _date(now),
                "requestExpirationDate": expires, "requesterId": user_id, "instanceId": item["instanceId"],
                "holdingsRecordId": item["holdingsRecordId"], "itemId": paged, "fulfilmentPreference": "Hold Shelf",
                "pickupServicePointId": pickup})
        self.pools.release(item)


def draw(data: TestData) -> dict[str, list[dict]]:
    desks = {s["name"]: s for s in data.service_points()}
    wanted = data.dataset.used("pickup_service_points") if data.dataset is not None else []
    pickups = [desks[s["name"]] for s in wanted if s["name"] in desks] or \
        sorted((s for s in desks.values() if s.get("pickupLocation") is True), key=lambda s: s["name"])[:1]
    return {
        "items": [{"id": i["id"], "holdingsRecordId": i["holdingsRecordId"], "instanceId": i["instanceId"]}
                  for i in data.items("Available", no_open_requests=True, with_instance=True)],
        "patrons": data.patrons("requests"),
        "pickup_service_points": [{"id": s["id"], "name": s["name"]} for s in pickups],
    }


workflow = Workflow(
    name="bls",
    description="The PTF master plan's Blacklight simulation (BLS): an item edited and copied, a patron's account, "
                "a Page request; it expires in 2023 as JMeter sent it, 30 days on with --plan as-written",
    taskset=BlacklightSimulation,
    dataset="bls",
    pools={"items": "exclusive", "patrons": "shared", "pickup_service_points": "shared"},
    draw=draw,
    transactions=(TRANSACTION,),
    headers=lambda options: HEADERS,
)


class BlsUser(FolioUser):
    workflow = workflow
