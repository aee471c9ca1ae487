"""The PTF master plan's View Holdings (VH; master-script-longevity.jmx lines 43167-44861): a librarian opens the
Inventory app, searches by a keyword (or a holdings HRID or id) and opens, for each of the first hits, the
instance and one of its holdings records.

    VH_Load Inventory                 the app's 26 reference data GETs (lines 43207-44050)
    VH_Inventory Search Holdings      GET /search/instances?query=(keyword all K or isbn=K or holdings.hrid==K or
                                      holdings.id==K) sortby title&limit=100 (line 44090)
    for each of the first N hits (a ForEach from index 0, N `${iterations_count}` of the CSV, line 44133):
    VH_Inventory Choose Holdings      GET holdings by instanceId (one of them at random: the extractor's match 0,
                                      line 44180), instance-relationship-types, locations, the TLR setting, the instance, its open requests,
                                      its MARC record (200 or 404, line 44356), copycat profiles, the holdings
                                      record's item count (`limit=0`, sent with NOT_FOUND when it has none, as the
                                      plan's is), its holdings again, remote-storage mappings, its order titles
    VH_Inventory View Holdings        with a holdings record ("If Holdings Exist", line 44532): the record, the
                                      instance, its items, the tags setting, its bound-with parts, the tags, the
                                      record again, its orders' holding summary and received pieces (200 or 400,
                                      line 44802)

Its ConstantThroughputTimer, 48 samples a minute per thread (calcMode 0, line 44856), is at group level: it paces
every call. `--pace 48/m`, as scenarios/ptf-master.toml runs it: 27 + N × 21 calls an iteration (N 2 to 5, 3.5 on
average), about 0.48 iterations a minute. JMeter ran it as written: `--plan` changes nothing here.

The test data: the plan's VH_keywords.csv (keyword, count): words of the seeded instances'
titles, each in 5 to 100 of them, with a count of 2 to 5 in turn, so each iteration views as many instances as
the count says (workflows/inventory_views.py); shared round-robin; drawn from the database (`--db DSN`).
"""

from __future__ import annotations

from folioperf.workflows import inventory_views as views
from folioperf.workflows.master_plan import MASTER_HEADERS

from folioperf import FolioTaskSet, FolioUser, TestData, Workflow, task

LOAD, SEARCH = "VH_Load Inventory", "VH_Inventory Search Holdings"
CHOOSE, VIEW = "VH_Inventory Choose Holdings", "VH_Inventory View Holdings"
NOT_FOUND = "NOT_FOUND"  # the holdings extractor's default (line 44184)


class ViewHoldings(FolioTaskSet):
    @task
    def view(self) -> None:
        row = self.pools.acquire("keywords")
        keyword, okapi = row["keyword"], self.okapi
        with self.transaction(LOAD):
            views.load_inventory(okapi)
        with self.transaction(SEARCH):
            hits = views.search_instances(
                okapi, f"(keyword all {keyword} or isbn={keyword} or holdings.hrid=={keyword} or holdings.id=={keyword})")
        for instance_id in hits[:int(row["iterations_count"])]:  # indexes 1..iterations_count (line 44138)
            with self.transaction(CHOOSE):
                holdings_id = views.one_of(views.holdings(okapi, instance_id))
                views.instance_head(okapi, instance_id)
                views.open_requests(okapi, instance_id)
                views.source(okapi, instance_id)
                views.copycat(okapi)
                views.items_count(okapi, holdings_id or NOT_FOUND)
                views.holdings(okapi, instance_id)
                views.instance_tail(okapi, instance_id)
            if holdings_id is None:
                continue
            with self.transaction(VIEW):
                okapi.get("/holdings-storage/holdings/{id}", id=holdings_id)
                okapi.get("/inventory/instances/{id}", id=instance_id)
                okapi.get("/inventory/items", params={"query": f"(holdingsRecordId=={holdings_id})", "limit": 5000})
                okapi.get("/configurations/entries", params={"query": views.TAGS})
                okapi.get("/inventory-storage/bound-with-parts",
                          params={"query": f"(holdingsRecordId=={holdings_id})", "limit": 5000})
                okapi.get("/tags", params={"limit": 10000})
                okapi.get("/holdings-storage/holdings/{id}", id=holdings_id)
                okapi.get("/orders/holding-summary/{id}", id=holdings_id)
                okapi.get("/orders/pieces", params={
                    "query": f'holdingId=={holdings_id} and displayOnHolding=="true" and receivingStatus="Received"',
                    "limit": 5000}, expect=(200, 400))


def draw(data: TestData) -> dict[str, list[dict]]:
    return views.draw_keywords(data, "iterations_count")


workflow = Workflow(
    name="vh",
    description="The PTF master plan's View Holdings (VH): the Inventory app's reference data, a keyword search, "
                "then for 2 to 5 of its hits the instance and one of its holdings records (as run and as written alike)",
    taskset=ViewHoldings,
    dataset="rih",  # instances with holdings, items and MARC records
    pools={"keywords": "shared"},
    draw=draw,
    transactions=(LOAD, SEARCH, CHOOSE, VIEW),
    headers=lambda options: MASTER_HEADERS,
)


class VhUser(FolioUser):
    workflow = workflow
