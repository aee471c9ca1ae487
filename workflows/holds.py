"""Placing holds (PTF report 001, `api-scripts/request/place-holds/`; docs/folio.md §3.4), one call per
iteration, three variants (`--variant`):

- `patron` (default): the discovery layer's (EDS) instance hold through mod-patron,
  POST /patron/account/{id}/instance/{instanceId}/hold;
- `instance`: mod-circulation's instance-level request, POST /circulation/requests/instances;
- `item`: an item-level Page request, POST /circulation/requests.

Each instance (or item) is requested once, so no requester/instance pair repeats and FOLIO has no reason
to refuse as a duplicate; requesters are shared round-robin. As in the plans, the request's date is taken
first, then PTF's 3 s pause (times --think-time), then the request:
its `requestDate` is about 3 s old, `yyyy-MM-ddTHH:mm:ss.SSSZ` in UTC, and an instance or item request
expires at that very date (`requestExpirationDate` = `requestDate`). The pause is a plain number in the plans:
JMeter waited it as written. Users start one per 10 s as PTF's
ramp-up (8 users in 80 s). Its test data: patrons without open requests nor a manual block on requests,
requestable instances, available items without requests, and the pickup service points.

    locust -f workflows/holds.py --headless -u 8 -r 0.1 -t 30m --pools holds-pools.json --variant instance
"""

from __future__ import annotations

from datetime import datetime, timezone

from folioperf import FolioTaskSet, FolioUser, Option, TestData, Workflow, task
from folioperf.page import constant

VARIANTS = ("patron", "instance", "item")
PAUSE = constant("3000")  # placeHolds_*.jmx line 312 (item-level: 314), a ConstantTimer in the POST's scope
# placeHolds_*.jmx lines 222-242: every call's headers (the token aside); JMeter asks for no compression
PLAN_HEADERS = {"Accept": "application/json", "content-type": "application/json", "Accept-Encoding": "identity"}


def _date(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"  # the plans' date, in UTC


class PlaceHold(FolioTaskSet):
    @task
    def place_hold(self) -> None:
        variant = self.options.variant
        requester = self.pools.acquire("requesters")["id"]
        pickup = self.pools.acquire("pickup_service_points")["id"]
        target = self.pools.acquire("items" if variant == "item" else "instances")
        date = _date(datetime.now(timezone.utc))  # taken before the pause, as the plans' pre-processor does
        self.timer(PAUSE)
        okapi = self.okapi
        with self.transaction("Place hold"):
            if variant == "patron":
                okapi.post("/patron/account/{id}/instance/{instanceId}/hold", id=requester, instanceId=target["id"],
                           expect=(201,), json={"item": {"instanceId": target["id"]}, "requestDate": date,
                                                "pickupLocationId": pickup})
            elif variant == "instance":
                okapi.post("/circulation/requests/instances", expect=(201,), json={
                    "requestDate": date, "requesterId": requester, "instanceId": target["id"],
                    "requestExpirationDate": date, "pickupServicePointId": pickup})
            else:
                okapi.post("/circulation/requests", expect=(201,), json={
                    "requestDate": date, "requesterId": requester, "requestType": "Page",
                    "fulfilmentPreference": "Hold Shelf", "itemId": target["id"],
                    "requestExpirationDate": date, "pickupServicePointId": pickup})


def draw(data: TestData) -> dict[str, list[dict]]:
    pickups = sorted((s for s in data.service_points() if s.get("pickupLocation") is True), key=lambda s: s["name"])
    return {
        "requesters": data.patrons("requests", no_open_requests=True),
        "instances": data.instances(requestable=True),
        "items": data.items("Available", no_open_requests=True, with_instance=True),
        "pickup_service_points": [{"id": s["id"], "name": s["name"]} for s in pickups],
    }


workflow = Workflow(
    name="holds",
    description="Place holds: mod-patron instance holds, instance- or item-level requests (PTF placing holds)",
    taskset=PlaceHold,
    dataset="holds",
    pools={"requesters": "shared", "instances": "once", "items": "once", "pickup_service_points": "shared"},
    draw=draw,
    transactions=("Place hold",),
    headers=lambda options: PLAN_HEADERS,
    spawn_rate=0.1,
    options=(Option("variant", default="patron", choices=VARIANTS,
                    help="patron: POST /patron/account/{id}/instance/{instanceId}/hold; instance: "
                         "POST /circulation/requests/instances; item: POST /circulation/requests (Page)"),),
)


class PlaceHoldUser(FolioUser):
    workflow = workflow
