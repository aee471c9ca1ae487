"""The PTF master plan's View MARC Authority (VAR; master-script-longevity.jmx lines 44862-45209): a librarian
opens the MARC authority app, searches a surname and opens one to three of the Authorized headings found.

    pause 1-3 s                                        the Flow Control Action "--- ThinkTimer: Fast" (line 44897)
    VAR_TC: GoTo Marc Authority
      GET /authority-source-files?limit=100
      GET /search/authorities/facets?query=id=*&facet=sourceFileId
    VAR_TC: Search Marc Authority
      GET /search/authorities/facets?query=(keyword=="K")&facet=sourceFileId
      GET /search/authorities?offset=0&query=(keyword=="K")&limit=100
    1 to 3 times (`${__Random(1,3,)}`, line 45082), if the search found Authorized headings, one of them at random:
    VAR_TC: Click Authorized Record
      GET /source-storage/records/{id}/formatted?idType=AUTHORITY
      GET /search/authorities?query=(id==A)&limit=0
      GET /search/authorities?offset=0&query=(id==A)&limit=500

The pause is a sampler to JMeter (a TestAction): the group's ConstantThroughputTimer, 7 samples a minute per
thread (line 45204, calcMode 0), paces it as it paces the calls, and the pause is taken after that wait, so
it delays the next call only when the thread is behind its pace (folioperf's `action`). `--pace 7/m`, as
scenarios/ptf-master.toml runs it: 5 + 3 × 2 = 11 samples, about 0.64 iterations a minute. A failed search
ends the iteration, as the plan's "start next thread loop" (line 45069) does.

JMeter ran it as written: the pause's `__Random` is a number, and the loop count a function JMeter evaluates;
the plan keeps the Authorized ids in a JMeter property, shared by the group's threads, which with its one
thread changes nothing. So `--plan` changes nothing here.

The test data: the surnames of the dataset's MARC authorities' headings (the plan's VAR_search_marc_keyword.csv),
shared round-robin, drawn from the database (against a FOLIO, `--db DSN`).
"""

from __future__ import annotations

import random

from folioperf.workflows.master_plan import MASTER_HEADERS

from folioperf import FolioTaskSet, FolioUser, TestData, Workflow, task
from folioperf.jmeter import Delay

GOTO, SEARCH, CLICK = "VAR_TC: GoTo Marc Authority", "VAR_TC: Search Marc Authority", "VAR_TC: Click Authorized Record"
THINK = Delay("uniform", 1000, 2000)  # `${__Random(1000,3000,)}` ms (line 44900)
CLICKS = (1, 3)  # `${__Random(1,3,)}` (line 45082), both included


class ViewMarcAuthority(FolioTaskSet):
    @task
    def view(self) -> None:
        keyword = self.pools.acquire("keywords")["keyword"]
        okapi = self.okapi
        self.action(THINK)
        with self.transaction(GOTO):
            okapi.get("/authority-source-files", params={"limit": 100})
            okapi.get("/search/authorities/facets", params={"query": "id=*", "facet": "sourceFileId"})
        query = f'(keyword=="{keyword}")'
        with self.transaction(SEARCH):
            okapi.get("/search/authorities/facets", params={"query": query, "facet": "sourceFileId"})
            found = okapi.get("/search/authorities", params={"offset": 0, "query": query, "limit": 100}).json()
        # the plan's JSONPath $.authorities[?(@.authRefType=='Authorized')].id (line 45059)
        authorized = [a["id"] for a in found.get("authorities", []) if a.get("authRefType") == "Authorized"]
        if not authorized:
            return  # "IF: If Marc Authority Records exist" (line 45074)
        for _ in range(random.randint(*CLICKS)):
            marc_id = random.choice(authorized)
            with self.transaction(CLICK):
                okapi.get("/source-storage/records/{id}/formatted", id=marc_id, params={"idType": "AUTHORITY"})
                okapi.get("/search/authorities", params={"query": f"(id=={marc_id})", "limit": 0})
                okapi.get("/search/authorities", params={"offset": 0, "query": f"(id=={marc_id})", "limit": 500})


# A personal name's heading: the sandbox's authority records are AuthorityDto jsonb, a FOLIO's mod-entities-links
# keeps it in columns (heading, heading_type); the row as jsonb reads either. The dataset's authorities when it
# is seeded, else the tenant's.
_SURNAMES = ("SELECT DISTINCT split_part(coalesce(to_jsonb(r)->'jsonb'->>'personalName', CASE WHEN "
             "to_jsonb(r)->>'heading_type' = 'personalName' THEN to_jsonb(r)->>'heading' END), ',', 1) "
             "FROM {authority} r WHERE r.id BETWEEN %s AND %s")


def draw(data: TestData) -> dict[str, list[dict]]:
    """The surnames of the MARC authorities' personal-name headings ("Surname, Given"), each once (SQL: mod-search
    pages authorities 500 at a time, and no further than the 10,000th)."""
    rows = data.sql(_SURNAMES, *data.id_range("authority"))
    if not any(surname for surname, in rows):
        rows = data.sql(_SURNAMES, *data.id_range())
    surnames = sorted({s.strip() for s, in rows if s and s.strip()})
    return {"keywords": [{"keyword": s} for s in surnames[:data.limit or None]]}


workflow = Workflow(
    name="var",
    description="The PTF master plan's View MARC Authority (VAR): search MARC authorities by surname, open one to "
                "three Authorized headings (as run and as written alike)",
    taskset=ViewMarcAuthority,
    dataset="var",
    pools={"keywords": "shared"},
    draw=draw,
    transactions=(GOTO, SEARCH, CLICK),
    headers=lambda options: MASTER_HEADERS,
)


class VarUser(FolioUser):
    workflow = workflow
