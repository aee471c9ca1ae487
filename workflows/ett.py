"""The PTF master plan's Edit Bib via quickMARC (ETT, "Edit Bib RecordTagTable Group"; master-script-longevity.jmx
lines 6184-8489): a cataloguer opens Inventory, finds an instance by keyword and then by an item's HRID, views it
and its MARC source, opens it in quickMARC, replaces (or appends) field 520 and saves; the UI then reloads the
record. All of it is one transaction, "ETT_TC: Edit Bib RecordTagTable Group" (line 6231):

    [INV-REF] 26 reference GETs                          ETT_SC: Load Inventory (lines 6236-7115)
    GET /search/instances (keyword all K ...)            ETT_SC: Inventory Search Instance (lines 7116-7194)
    GET /search/instances ((items.hrid=="H") sortby title), its first instance I
    [INST-VIEW] with copycat, 12 GETs; as written, with  ETT_SC: Inventory Choose Instance (lines 7195-7627)
      a holdings record, its items' count (as run, never: see below)
    if no 404 was ever seen from SRS (line 7628):
      GET /inventory/instances?query=id==I, SRS formatted     ETT_SC: Inventory View Instance Source
      GET /inventory/instances/I (_version), GET /records-editor/records?externalId=I, GET /locations
      GET /inventory/instances/I, PUT /records-editor/records/{parsedRecordId}, 19 reload GETs

No pauses; the group's ConstantThroughputTimer, 66 samples a minute per thread (line 8483, calcMode 0, in the
transaction's scope: every sampler), paces the 66 calls (67 as written): `--pace 66/m`, as scenarios/ptf-master.toml runs it,
about one iteration a minute.

The PUT (Groovy at line 7766): the record the GET answered, `relatedRecordVersion` the instance's `_version` as
text, field 520 replaced (the first one) or appended as `{"isProtected": "false", "tag": "520", "indicators":
["\\\\", "\\\\"], "content": "$a UpdatedField"}`.

As JMeter ran it (the default): the SRS view's post-processor (line 7427) sets `instance_source` NOT_FOUND on a 404
and nothing ever resets it, so after one 404 the thread never views a source nor edits again (the If, line 7628,
holds both); the reload's user look-up sends `id==1` (`${current_userID}`, PRO's user-defined variable, as JMeter
set it: workflows/master_plan.py) `or id==not_found` (the PUT answers 202 with no body, so
`$.metadata.updatedByUserId`, line 7891, takes its default).
The holdings extractor's `$.holdingsRecords.id` (line 7519; VB's and VH's are `$.holdingsRecords.*.id`) finds
nothing in the list of holdings records: JMeter's JSONPath throws on it and the extractor leaves NOT_FOUND, so
"If Holdings Exist" (line 7586) never sends the items count, as in VTT.
`--plan as-written`: the 404 skips that iteration's source and edit only; the items count is sent for the
instance's first holdings record; the look-up names the logged-in user.

The test data: the plan's ETT_keywords.csv (words of titles) and ETT_search_items.csv (item HRIDs): here words of
the dataset's MARC instances' titles and the HRIDs of their items (rih: every instance has an SRS MARC bib
record, holdings and items), both shared round-robin. Editing keeps the records editable: each save makes a new
SRS generation and a new instance `_version`, which the next iteration reads, so the pools never run out.
"""

from __future__ import annotations

import re

from folioperf.workflows import inventory_views as views
from folioperf.workflows.master_plan import MASTER_HEADERS, current_user_id

from folioperf import FolioTaskSet, FolioUser, Records, TestData, Workflow, task
from folioperf.jmeter import AS_WRITTEN

TRANSACTION = "ETT_TC: Edit Bib RecordTagTable Group"  # line 6231
NEW_520 = {"isProtected": "false", "tag": "520", "indicators": ["\\", "\\"], "content": "$a UpdatedField"}  # line 7780
NOT_FOUND = "NOT_FOUND"



class EditBib(FolioTaskSet):
    def on_start(self) -> None:
        self.source_missing = False  # the plan's `instance_source`, a thread variable (line 7427)
        self.current_user = current_user_id(self.okapi, self.user.plan == AS_WRITTEN)

    @task
    def edit(self) -> None:
        keyword = self.pools.acquire("keywords")["keyword"]
        hrid = self.pools.acquire("item_hrids")["hrid"]
        okapi = self.okapi
        as_written = self.user.plan == AS_WRITTEN
        with self.transaction(TRANSACTION):
            views.load_inventory(okapi)
            okapi.get("/search/instances", params={
                "query": f"(keyword all {keyword} or isbn={keyword} or hrid=={keyword} or id=={keyword}) sortby title",
                "limit": 100})
            found = okapi.get("/search/instances", params={"query": f'(items.hrid=="{hrid}") sortby title',
                                                           "limit": 100}).json()
            instances = found.get("instances") or [{}]
            instance_id = instances[0].get("id", NOT_FOUND)  # $.instances[0].id, default NOT_FOUND (line 7187)
            # ETT_SC: Inventory Choose Instance (lines 7195-7627)
            holdings_ids = views.holdings(okapi, instance_id)
            views.instance_head(okapi, instance_id)
            okapi.get("/configurations/entries", params={"query": views.TAGS})
            views.open_requests(okapi, instance_id)
            missing = views.source(okapi, instance_id) == 404  # the assertion accepts 200 and 404 (line 7415)
            self.source_missing = self.source_missing or missing
            views.copycat(okapi)
            views.holdings(okapi, instance_id)
            views.instance_tail(okapi, instance_id)
            # as run, `$.holdingsRecords.id` (line 7519) is always NOT_FOUND: the If at line 7586 never holds
            if as_written and holdings_ids:
                views.items_count(okapi, holdings_ids[0])
            if missing if as_written else self.source_missing:
                return
            self._view_source_and_edit(instance_id, keyword)

    def _view_source_and_edit(self, instance_id: str, keyword: str) -> None:
        okapi = self.okapi
        # ETT_SC: Inventory View Instance Source (line 7634)
        okapi.get("/inventory/instances", params={"query": f"id=={instance_id}"})
        okapi.get("/source-storage/records/{id}/formatted", id=instance_id, params={"idType": "INSTANCE"})
        # ETT_SC: Actions Edit MARC bib records (line 7691)
        instance = okapi.get("/inventory/instances/{id}", id=instance_id, params={"limit": 1000}).json()
        record = okapi.get("/records-editor/records", params={"limit": 1000, "externalId": instance_id}).json()
        okapi.get("/locations", params={"limit": 1000})
        # the Groovy post-processor at line 7766
        parsed_id = record.get("parsedRecordId", "not_found")
        record["parsedRecordId"] = parsed_id
        record["parsedRecordDtoId"] = record.get("parsedRecordDtoId", "not_found")
        record["relatedRecordVersion"] = str(instance.get("_version", "not_found"))
        fields = record.setdefault("fields", [])
        at = next((i for i, f in enumerate(fields) if f.get("tag") == "520"), None)
        if at is None:
            fields.append(dict(NEW_520))
        else:
            fields[at] = dict(NEW_520)
        # ETT_SC: Click Save & Close (line 7835)
        okapi.get("/inventory/instances/{id}", id=instance_id, params={"limit": 1000})
        saved = okapi.put("/records-editor/records/{id}", id=parsed_id, json=record, expect=(202,))
        updated_by = _updated_by(saved.text)
        okapi.get("/inventory/instances/{id}", id=instance_id, params={"limit": 1000})
        okapi.get("/records-editor/records", params={"limit": 1000, "externalId": instance_id})
        okapi.get("/locations", params={"limit": 1000})
        holdings = okapi.get("/holdings-storage/holdings", params={"query": f"instanceId=={instance_id}",
                                                                    "limit": 1000}).json()
        first = (holdings.get("holdingsRecords") or [{}])[0].get("id", "not_found")  # line 8022
        views.instance_head(okapi, instance_id)
        okapi.get("/configurations/entries", params={"query": views.TAGS})
        views.copycat(okapi)
        okapi.get("/search/instances", params={
            "query": f'(keyword all "{keyword}" or isbn="{keyword}" or hrid=="{keyword}" or id=="{keyword}") sortby title',
            "limit": 100})
        views.open_requests(okapi, instance_id)
        okapi.get("/source-storage/records/{id}/formatted", id=instance_id, params={"idType": "INSTANCE"})
        okapi.get("/users", params={"query": f"id=={self.current_user} or id=={updated_by}"})  # line 8299
        views.copycat(okapi)
        okapi.get("/inventory/items", params={"query": f"holdingsRecordId=={first}", "limit": 0})
        okapi.get("/holdings-storage/holdings", params={"query": f"instanceId=={instance_id}", "limit": 1000})
        views.instance_tail(okapi, instance_id)


def _updated_by(text: str) -> str:
    """`$.metadata.updatedByUserId` of the PUT's answer (line 7891), default not_found: quickMARC answers 202
    without a body."""
    m = re.search(r'"updatedByUserId"\s*:\s*"([^"]+)"', text or "")
    return m.group(1) if m else "not_found"


_WORD = re.compile(r"[A-Za-z]{4,}")


def draw(data: TestData) -> dict[str, list[dict]]:
    """Words of the MARC instances' titles (one per title, its first of 4 letters or more), and the HRIDs of
    those instances' items."""
    titles = data.records(Records("instances", fields=("title",), sql="r.jsonb->>'source' = 'MARC'",
                                  cql='source=="MARC"'))
    words = sorted({m.group(0) for t in titles if (m := _WORD.search(t.get("title") or ""))})
    items = data.records(Records(
        "items", fields=("hrid",),
        sql="coalesce(r.jsonb->>'hrid', '') <> '' AND EXISTS (SELECT 1 FROM {holdings_record} h JOIN {instance} n "
            "ON n.id = h.instanceid WHERE h.id = r.holdingsrecordid AND n.jsonb->>'source' = 'MARC')",
        cql='hrid=""'))
    return {"keywords": [{"keyword": w} for w in words], "item_hrids": [{"hrid": i["hrid"]} for i in items]}


workflow = Workflow(
    name="ett",
    description="The PTF master plan's Edit Bib via quickMARC (ETT): find an instance by keyword and item HRID, view "
                "it and its MARC, replace field 520 in quickMARC and save; as run, no source view nor edit after one "
                "SRS 404 (--plan as-written: that iteration only)",
    taskset=EditBib,
    dataset="rih",
    pools={"keywords": "shared", "item_hrids": "shared"},
    draw=draw,
    transactions=(TRANSACTION,),
    headers=lambda options: MASTER_HEADERS,
)


class EttUser(FolioUser):
    workflow = workflow
