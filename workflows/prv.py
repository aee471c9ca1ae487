"""View a patron record (the PTF master plan's PRV group, master-script-longevity.jmx lines 46560-46709): the
user by id, a search of users by the start of their name, and in one iteration of two their open requests.

One transaction, "PRV_TC: View Patron record Group" (the plan's name): `GET /users/{id}`, `GET /users` with the
plan's CQL (username, first, preferred first or last name starting with the name, sorted by last and first name,
100), and `GET /circulation/requests` of the user's open requests when the plan's Throughput Controller (lines
46657-46666, 50 % by percent) lets it: JMeter's is not random, it runs in every second iteration from the second
(folioperf.jmeter.PercentController); `--requests-view` sets the percent. The group's header manager sends
`Accept: text/plain` (line 46584) over the plan's JSON one. No timers: its ConstantThroughputTimer paces it, 3
samples a minute per thread (line 46704; `--pace 3/m`, as scenarios/ptf-master.toml sets it): 2.5 calls an
iteration, 1.2 iterations a minute.

The plan's CSV (PRV_user_ids.csv) gives a user's id and a name: here the dataset's users and their last names,
round-robin.
"""

from __future__ import annotations

from folioperf.workflows.master_plan import MASTER_HEADERS, percent

from folioperf import FolioTaskSet, FolioUser, Option, Records, Workflow, task
from folioperf.jmeter import PercentController

TRANSACTION = "PRV_TC: View Patron record Group"


class ViewPatronRecord(FolioTaskSet):
    def on_start(self) -> None:
        self.requests_view = PercentController(self.options.requests_view)

    @task
    def view(self) -> None:
        user = self.pools.acquire("users")
        name = user["lastName"]
        with self.transaction(TRANSACTION):
            self.okapi.get("/users/{id}", id=user["id"])
            self.okapi.get("/users", params={
                "query": f'((username="{name}*" or personal.firstName="{name}*" or personal.preferredFirstName="{name}*" '
                         f'or personal.lastName="{name}*")) sortby personal.lastName personal.firstName',
                "limit": 100})
            if self.requests_view.runs():
                self.okapi.get("/circulation/requests",
                               params={"query": f'requesterId=={user["id"]} and status=="Open"', "limit": 100})


workflow = Workflow(
    name="prv",
    description="View a patron record: the user, a search by name, 50 % their open requests (PTF master plan PRV, "
                "paced --pace 3/m)",
    taskset=ViewPatronRecord,
    dataset="holds",
    pools={"users": "shared"},
    draw={"users": Records("users", fields={"id": "id", "lastName": "personal.lastName"},
                           sql="r.jsonb->'personal'->>'lastName' IS NOT NULL", cql='personal.lastName=""')},
    transactions=(TRANSACTION,),
    options=(Option("requests-view", default=50.0, type=percent,
                    help="percent of iterations that list the user's open requests (the plan's 50; JMeter's "
                         "Throughput Controller: every second iteration, not at random)"),),
    headers=lambda options: {**MASTER_HEADERS, "Accept": "text/plain"},  # the group's header manager, line 46584
)


class PrvUser(FolioUser):
    workflow = workflow
