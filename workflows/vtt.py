"""The PTF master plan's View MARC Tag Table (VTT; master-script-longevity.jmx lines 41683-43166): VB's view of
instances found by a keyword, each instance's MARC record viewed too.

    VTT_Load Inventory                the app's 26 reference data GETs (lines 41723-42566)
    VTT_Inventory Search Instance     GET /search/instances?query=(keyword all K or isbn=K or hrid==K or id==K)
                                      sortby title&limit=100 (line 42606)
    for each of the first N hits (a ForEach from index 0, N `${instances_count}` of the CSV, line 42649):
    VTT_Inventory Choose Instance     VB's Choose Instance, copycat profiles after the MARC record (line 42914)
    VTT_Inventory View Instance Source  "If Instance Source Exist" (line 43093): GET /inventory/instances?query=
                                      id==I, GET /source-storage/records/{I}/formatted?idType=INSTANCE

Its ConstantThroughputTimer, 42 samples a minute per thread (calcMode 0, line 43161), is at group level: it paces
every call. `--pace 42/m`, as scenarios/ptf-master.toml runs it: 27 + N × 14 calls an iteration (N 2 to 5, 3.5 on
average), about 0.55 iterations a minute.

Two quirks; `--plan as-run` (the default) does what JMeter ran, `--plan as-written` what the plan meant:
- the holdings extractor's `$.holdingsRecords.id` (line 42984; VB's and VH's are `$.holdingsRecords.*.id`) finds
  nothing in the list of holdings records: JMeter's JSONPath throws on it and the extractor leaves NOT_FOUND, so
  "If Holdings Exist" (line 43051) never sends the items count as run; as written, it does, for one of the
  instance's holdings records;
- the JSR223 PostProcessor on the MARC record (line 42902) sets `instance_source` to NOT_FOUND on a 404 and
  nothing ever sets it back: as run, after one instance without a MARC record the thread never views a source
  again; as written, the source is viewed for each instance whose record was found.

The test data: the plan's VTT_keywords.csv (keyword, count; VB's file): words of the seeded instances'
titles, each in 5 to 100 of them, with a count of 2 to 5 in turn, so each iteration views as many instances as
the count says (workflows/inventory_views.py); shared round-robin; drawn from the database (`--db DSN`).
"""

from __future__ import annotations

from folioperf.workflows import inventory_views as views
from folioperf.workflows.master_plan import MASTER_HEADERS

from folioperf import FolioTaskSet, FolioUser, TestData, Workflow, task
from folioperf.jmeter import AS_WRITTEN

LOAD, SEARCH, CHOOSE = "VTT_Load Inventory", "VTT_Inventory Search Instance", "VTT_Inventory Choose Instance"
SOURCE = "VTT_Inventory View Instance Source"


class ViewMarcTagTable(FolioTaskSet):
    def on_start(self) -> None:
        self.source_not_found = False  # the thread's `instance_source` variable is NOT_FOUND (line 42908)

    @task
    def view(self) -> None:
        row = self.pools.acquire("keywords")
        keyword, okapi = row["keyword"], self.okapi
        as_written = self.user.plan == AS_WRITTEN
        with self.transaction(LOAD):
            views.load_inventory(okapi)
        with self.transaction(SEARCH):
            hits = views.search_instances(
                okapi, f"(keyword all {keyword} or isbn={keyword} or hrid=={keyword} or id=={keyword})")
        for instance_id in hits[:int(row["instances_count"])]:  # indexes 1..instances_count (line 42654)
            with self.transaction(CHOOSE):
                views.holdings(okapi, instance_id)
                views.instance_head(okapi, instance_id)
                okapi.get("/configurations/entries", params={"query": views.TAGS})
                views.open_requests(okapi, instance_id)
                found = views.source(okapi, instance_id) != 404
                self.source_not_found = not found if as_written else self.source_not_found or not found
                views.copycat(okapi)
                holdings = views.holdings(okapi, instance_id)
                views.instance_tail(okapi, instance_id)
                holdings_id = views.one_of(holdings) if as_written else None  # as run, always NOT_FOUND (line 42984)
                if holdings_id is not None:  # "If Holdings Exist" (line 43051)
                    views.items_count(okapi, holdings_id)
            if self.source_not_found:
                continue
            with self.transaction(SOURCE):
                okapi.get("/inventory/instances", params={"query": f"id=={instance_id}"})
                views.source(okapi, instance_id, expect=(200,))


def draw(data: TestData) -> dict[str, list[dict]]:
    return views.draw_keywords(data, "instances_count")


workflow = Workflow(
    name="vtt",
    description="The PTF master plan's View MARC Tag Table (VTT): VB's instance views with each MARC record; as run, "
                "no items count and no source after the first 404 (--plan as-written: both as the plan meant)",
    taskset=ViewMarcTagTable,
    dataset="rih",  # instances with holdings, items and MARC records
    pools={"keywords": "shared"},
    draw=draw,
    transactions=(LOAD, SEARCH, CHOOSE, SOURCE),
    headers=lambda options: MASTER_HEADERS,
)


class VttUser(FolioUser):
    workflow = workflow
