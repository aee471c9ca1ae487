"""Retrieving instances and holdings (PTF RIH, report 003; docs/folio.md §3.5): an instance's SRS MARC record
by HRID, then its holdings, with no think time.

An open model, as PTF paces RIH with a shared ConstantThroughputTimer: iterations start at 3/s for the whole
run by default (the report's normal load; `--rate 20/s` is its high load), whatever the number of users and
workers. Users are only the concurrency that carries the rate: give enough of them (rate x response time,
with room to spare), or the run falls behind and is flagged "target rate missed". Latency is also recorded
from each iteration's scheduled start (request type "Scheduled"), so a slow FOLIO shows there in full.

The calls and headers are the PTF master plan's RIH group's (master-script-longevity.jmx lines 36561-36669),
which sends the instance's HRID; the stand-alone plan sends the instance UUID as `instanceHrid` by mistake.

    locust -f workflows/rih.py --headless -u 20 -r 20 -t 1h --pools rih-pools.json --rate 20/s
"""

from __future__ import annotations

from folioperf.workflows.master_plan import MASTER_HEADERS

from folioperf import FolioTaskSet, FolioUser, Records, Workflow, task


class RetrieveInstanceAndHoldings(FolioTaskSet):
    @task
    def retrieve(self) -> None:
        instance = self.pools.acquire("instances")
        with self.transaction("Retrieve instance and holdings"):
            self.okapi.get("/source-storage/source-records", params={"instanceHrid": instance["hrid"], "limit": 1000})
            self.okapi.get("/holdings-storage/holdings", params={"query": f"instanceId=={instance['id']}", "limit": 1000})


workflow = Workflow(
    name="rih",
    description="Retrieve an instance's MARC record and its holdings at a constant rate (PTF RIH)",
    taskset=RetrieveInstanceAndHoldings,
    dataset="rih",
    pools={"instances": "shared"},
    draw={"instances": Records("instances", fields=("id", "hrid"), sql="r.jsonb->>'source' = 'MARC'",
                               cql='source=="MARC"')},  # those with a MARC record (FOLIO gives each an HRID)
    transactions=("Retrieve instance and holdings",),
    rate="3/s",
    headers=lambda options: MASTER_HEADERS,
)


class RihUser(FolioUser):
    workflow = workflow
