"""Monitoring pick slips and requests (the PTF master plan's MPS groups, master-script-longevity.jmx lines
21736-21919): three thread groups, each polling on its own; `--poll` says which one a user is. The plan names no
transactions: each call is a sample of its own, as in its reports.

- `locations` ("MPS for service-points & locations", lines 21736-21803): `GET /service-points` and
  `GET /locations`, with no query, then a Flow Control Action pausing 3,600,000 ms: once an hour. No throughput
  timer.
- `requests` ("MPS for circulation/requests", lines 21804-21855): `GET /circulation/requests`, with no query;
  its ConstantThroughputTimer paces it, 1 sample a minute per thread (line 21846; `--pace 1/m`).
- `pick-slips` ("MPS for circulation/pick-slips", lines 21856-21919): `GET /circulation/pick-slips/{id}` of a
  service point, the plan's CSV's (MPS_servicepoints.csv, 13 rows) in turn; 20 samples a minute per thread
  (line 21910; `--pace 20/m`).

scenarios/ptf-master.toml runs the three as three groups of one user each, at those paces. The service points
are those that are a location's primary desk, whose pick slips list the Page requests of items there (the
holds dataset's Page requests).
"""

from __future__ import annotations

from folioperf.workflows.master_plan import MASTER_HEADERS

from folioperf import FolioTaskSet, FolioUser, Option, TestData, Workflow, task
from folioperf.page import constant

POLLS = ("locations", "requests", "pick-slips")
HOUR = constant("3600000")  # the Flow Control Action's duration, line 21775


class MonitorPickSlips(FolioTaskSet):
    @task
    def poll(self) -> None:
        poll = self.options.poll
        if poll == "locations":
            self.okapi.get("/service-points")
            self.okapi.get("/locations")
            self.action(HOUR)
        elif poll == "requests":
            self.okapi.get("/circulation/requests")
        else:
            point = self.pools.acquire("service_points")
            self.okapi.get("/circulation/pick-slips/{id}", id=point["id"])


def draw(data: TestData) -> dict[str, list[dict]]:
    locations = data.locations()
    if data.dataset is not None:  # the dataset's locations, when the tenant holds it
        wanted = {loc["id"] for loc in data.dataset.used("locations")}
        locations = [loc for loc in locations if loc["id"] in wanted] or locations
    primary = {loc.get("primaryServicePoint") for loc in locations}
    return {"service_points": sorted(({"id": s["id"], "name": s["name"]} for s in data.service_points()
                                      if s["id"] in primary), key=lambda s: s["id"])}


workflow = Workflow(
    name="mps",
    description="Monitoring pick slips and requests: service points and locations hourly, requests, a desk's pick "
                "slips; --poll picks the thread group (PTF master plan MPS)",
    taskset=MonitorPickSlips,
    dataset="holds",
    pools={"service_points": "shared"},
    draw=draw,
    options=(Option("poll", default="pick-slips", choices=POLLS,
                    help="the plan's thread group: locations (service points and locations, then an hour's pause), "
                         "requests (all requests; the plan paces it 1/m) or pick-slips (a desk's; 20/m)"),),
    headers=lambda options: MASTER_HEADERS,
)


class MpsUser(FolioUser):
    workflow = workflow
