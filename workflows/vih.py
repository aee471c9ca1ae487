"""View an instance's holdings details (the PTF master plan's VIH group, master-script-longevity.jmx lines
46710-46866): a page of 1,000 instances updated since 2023-04-03, a pause, then one instance's holdings and its
MARC record.

One transaction, "TC: VIH_View instance holdings details" (the plan's name): `GET /inventory/instances` (the
plan's query and page), a Flow Control Action pausing `${__Random(300,500,)}` ms (line 46788: a sampler, which
the throughput timer paces too, and whose pause is no part of the transaction), `GET /holdings-storage/holdings`
of the instance, and `GET /source-storage/records/{id}/formatted?idType=INSTANCE`. Its ConstantThroughputTimer
paces the four samplers, 3 a minute per thread (line 46861; `--pace 3/m`, as scenarios/ptf-master.toml sets
it): 3 calls an iteration, 0.75 iterations a minute.

Which instance: the plan's post-processor (line 46758) stores the page's ids in a property and the holdings
call's pre-processor (line 46807) removes the first, from the list fetched in the same iteration: JMeter views
the page's first instance every time (`--plan as-run`, the default). `--plan as-written` views the page's
instances in turn, one an iteration, as the list was meant to be walked.
"""

from __future__ import annotations

from folioperf.workflows.master_plan import MASTER_HEADERS

from folioperf import FolioTaskSet, FolioUser, Workflow, task
from folioperf.errors import FolioperfError
from folioperf.jmeter import AS_WRITTEN
from folioperf.page import uniform

TRANSACTION = "TC: VIH_View instance holdings details"
UPDATED_SINCE = "2023-04-03"  # the plan's query, line 46738


class ViewInstanceHoldings(FolioTaskSet):
    def on_start(self) -> None:
        self.iteration = 0

    @task
    def view(self) -> None:
        with self.transaction(TRANSACTION):
            page = self.okapi.get("/inventory/instances", params={
                "offset": 0, "limit": 1000, "query": f'metadata.updatedDate>="{UPDATED_SINCE}"'}).json()
            ids = [instance["id"] for instance in page.get("instances", [])]
            if not ids:
                raise FolioperfError(f"no instance updated since {UPDATED_SINCE}: nothing to view (seed a dataset)")
            self.action(uniform("300", "200"))  # ${__Random(300,500,)}, line 46790
            instance_id = ids[self.iteration % len(ids)] if self.user.plan == AS_WRITTEN else ids[0]
            self.iteration += 1
            self.okapi.get("/holdings-storage/holdings", params={"query": f"instanceId=={instance_id}", "limit": 1000})
            self.okapi.get("/source-storage/records/{id}/formatted", id=instance_id, params={"idType": "INSTANCE"})


workflow = Workflow(
    name="vih",
    description="View instance holdings details: a page of recently updated instances, then an instance's holdings "
                "and MARC record; as run, always the page's first instance (--plan as-written: each in turn) "
                "(PTF master plan VIH, paced --pace 3/m, the pause a sample too)",
    taskset=ViewInstanceHoldings,
    dataset="rih",  # instances with MARC records, so the formatted record is found
    transactions=(TRANSACTION,),
    headers=lambda options: MASTER_HEADERS,
)


class VihUser(FolioUser):
    workflow = workflow
