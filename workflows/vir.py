"""Inventory record monitoring (the PTF master plan's VIR group, master-script-longevity.jmx lines 46429-46559):
a page of instances and of holdings with no query, one instance by id, and in one iteration of five its item.

One transaction, "VIR_TC:  inventory record monitoring" (the plan's name, its two spaces included), of three
calls, and a fourth, `GET /inventory/items/{id}`, when the plan's Throughput Controller (lines 46526-46530, by
percent, shared by the group's threads) lets it: JMeter's controller is not random, it runs its sampler in the
3rd, 8th, 13th ... iteration at 20 % (folioperf.jmeter.PercentController); `--item-view` sets the percent
(`VIR_VIEW_DISTRIBUTION`, 20 by default). No timers: the group is paced only by its ConstantThroughputTimer,
168 samples a minute per thread (line 46554; `--pace 168/m`, as scenarios/ptf-master.toml sets it): 3.2 calls
an iteration, 52.5 iterations a minute.

The plan's CSV pairs an instance with one of its items (VIR_instance_item.csv): here the dataset's items with
their instances, handed out round-robin.
"""

from __future__ import annotations

from folioperf.workflows.master_plan import MASTER_HEADERS, percent

from folioperf import FolioTaskSet, FolioUser, Option, TestData, Workflow, task
from folioperf.jmeter import PercentController

TRANSACTION = "VIR_TC:  inventory record monitoring"


class InventoryRecordMonitoring(FolioTaskSet):
    def on_start(self) -> None:
        self.item_view = PercentController(self.options.item_view)

    @task
    def monitor(self) -> None:
        pair = self.pools.acquire("instance_items")
        with self.transaction(TRANSACTION):
            self.okapi.get("/instance-storage/instances")
            self.okapi.get("/inventory/instances/{id}", id=pair["instanceId"])
            self.okapi.get("/holdings-storage/holdings")
            if self.item_view.runs():
                self.okapi.get("/inventory/items/{id}", id=pair["id"])


def draw(data: TestData) -> dict[str, list[dict]]:
    return {"instance_items": [{"id": i["id"], "instanceId": i["instanceId"]}
                               for i in data.items("Available", with_instance=True)]}


workflow = Workflow(
    name="vir",
    description="Inventory record monitoring: instances, an instance, holdings, 20 % an item (PTF master plan VIR, "
                "paced --pace 168/m)",
    taskset=InventoryRecordMonitoring,
    dataset="rih",
    pools={"instance_items": "shared"},
    draw=draw,
    transactions=(TRANSACTION,),
    options=(Option("item-view", default=20.0, type=percent,
                    help="percent of iterations that view the item (the plan's VIR_VIEW_DISTRIBUTION; "
                         "JMeter's Throughput Controller: every 5th iteration at 20, not at random)"),),
    headers=lambda options: MASTER_HEADERS,
)


class VirUser(FolioUser):
    workflow = workflow
