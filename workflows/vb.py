"""The PTF master plan's View Bib (VB; master-script-longevity.jmx lines 40301-41682): a librarian opens the
Inventory app, searches instances by a keyword and views the first hits, one after another.

    VB_Load Inventory                 the app's 26 reference data GETs (lines 40341-41184)
    VB_Inventory Search Instance      GET /search/instances?query=(keyword all K or isbn=K or hrid==K or id==K)
                                      sortby title&limit=100 (line 41224)
    for each of the first N hits (a ForEach from index 0, N `${iterations_count}` of the CSV, line 41267):
    VB_Inventory Choose Instance      GET holdings by instanceId, instance-relationship-types, locations, the TLR
                                      setting, GET /inventory/instances/{id}, the tags setting, its open requests,
                                      its MARC record (200 or 404, line 41509), its holdings again (one of them at
                                      random: the extractor's match 0, line 41555), remote-storage mappings, its
                                      order titles; with a holdings record, GET /inventory/items?limit=0 of it

The group's ConstantThroughputTimer, 39 samples a minute per thread (calcMode 0, line 41676), sits in the ForEach:
JMeter paces only the ForEach's samplers, while the 27 calls before it go as fast as FOLIO answers (the default,
`--plan as-run`). `--plan as-written` paces every call, as the timer of VTT and VH, at group level, does.
`--pace 39/m`, as scenarios/ptf-master.toml runs it: N × 12 paced calls an iteration (N 2 to 5, 3.5 on average),
about 0.9 iterations a minute as run.

The test data: the plan's VB_keywords.csv (keyword, count): words of the seeded instances'
titles, each in 5 to 100 of them, with a count of 2 to 5 in turn, so each iteration views as many instances as
the count says (workflows/inventory_views.py); shared round-robin; drawn from the database (`--db DSN`).
"""

from __future__ import annotations

from contextlib import nullcontext

from folioperf.workflows import inventory_views as views
from folioperf.workflows.master_plan import MASTER_HEADERS

from folioperf import FolioTaskSet, FolioUser, TestData, Workflow, task
from folioperf.jmeter import AS_WRITTEN

LOAD, SEARCH, CHOOSE = "VB_Load Inventory", "VB_Inventory Search Instance", "VB_Inventory Choose Instance"


class ViewBib(FolioTaskSet):
    @task
    def view(self) -> None:
        row = self.pools.acquire("keywords")
        keyword, okapi = row["keyword"], self.okapi
        # as run, the throughput timer (line 41676) is in the ForEach's scope only
        with nullcontext() if self.user.plan == AS_WRITTEN else self.unpaced():
            with self.transaction(LOAD):
                views.load_inventory(okapi)
            with self.transaction(SEARCH):
                hits = views.search_instances(
                    okapi, f"(keyword all {keyword} or isbn={keyword} or hrid=={keyword} or id=={keyword})")
        for instance_id in hits[:int(row["iterations_count"])]:  # indexes 1..iterations_count (line 41272)
            with self.transaction(CHOOSE):
                views.holdings(okapi, instance_id)
                views.instance_head(okapi, instance_id)
                okapi.get("/configurations/entries", params={"query": views.TAGS})
                views.open_requests(okapi, instance_id)
                views.source(okapi, instance_id)
                holdings_id = views.one_of(views.holdings(okapi, instance_id))
                views.instance_tail(okapi, instance_id)
                if holdings_id is not None:  # "If Holdings Exist" (line 41624)
                    views.items_count(okapi, holdings_id)


def draw(data: TestData) -> dict[str, list[dict]]:
    return views.draw_keywords(data, "iterations_count")


workflow = Workflow(
    name="vb",
    description="The PTF master plan's View Bib (VB): the Inventory app's reference data, a keyword search, then "
                "2 to 5 of its hits viewed; as run, only the views paced (--plan as-written: every call)",
    taskset=ViewBib,
    dataset="rih",  # instances with holdings, items and MARC records
    pools={"keywords": "shared"},
    draw=draw,
    transactions=(LOAD, SEARCH, CHOOSE),
    headers=lambda options: MASTER_HEADERS,
)


class VbUser(FolioUser):
    workflow = workflow
