"""The PTF master plan's Item Record Operations (IRO; master-script-longevity.jmx lines 8490-14757): a librarian
finds an item in Inventory by its HRID and views it, edits it (numberOfPieces) or deletes it.

Each iteration: the JSR223 samplers "Branch selector randomizer" and "SWITCH" (lines 8539, 8556: samples the
throughput timer paces, folioperf's `script`) pick view, edit or delete by `IRO_DISTRIBUTION` (line 430: plan
default 100-0-0; master_script_longevity_config.json 35-30-35; `--distribution`). Then:

    IRO_TC: View Item (line 8588)      [INV-REF] 26 GETs, copycat, search/instances by the item HRID
                                       (`item.hrid`), [INST-VIEW] 13 GETs; per holdings record (ForEach, line
                                       9952) its items, and the JSR223 sampler that keeps the item when the HRID
                                       is among them; the item's page (9 GETs); the pause (Flow Control Action
                                       `__Random(1000,3000)` ms, line 10257)
    IRO_TC: Edit Item (line 10271)     the same navigation and search, on the delete list's HRID (the plan's
                                       `hrid_delete`); outside the transaction: the item's page, 6 GETs of the
                                       edit form, PUT /inventory/items/{id} (the item read, numberOfPieces 1-50,
                                       204), 10 reload GETs, the pause
    IRO_TC: Delete Item (line 12393)   the same navigation and search; outside it: the item's page, 6 GETs,
                                       DELETE /inventory/items/{id}, 19 reload GETs, the pause

The group's ConstantThroughputTimer, 197 samples a minute per thread (line 14752, calcMode 0), paces every
sampler, the scripts and the pauses included: `--pace 197/m`, as scenarios/ptf-master.toml runs it.

As JMeter ran it (the default): `inventory/items?query=holdingsRecordId==${holdingsRecordId}&limit=0` in the
instance view (lines 9917, 11600, 13722) comes before the ForEach that sets `holdingsRecordId`: it names the
last holdings record of the thread's previous iteration, and in its first iteration the text `${holdingsRecordId}`
(undefined: JMeter sends it as it is); the edit's reload sends `users?query=id==1` (`${current_userID}`, PRO's
user-defined variable, as JMeter set it: workflows/master_plan.py). The item edited or deleted is `items[0]` of
the (last) holdings record holding the HRID (line 9994), not necessarily the item searched; with this dataset's
one item per holdings record it is. `--plan as-written` names the instance's first holdings record in that count
and the logged-in user in the reload.

The test data (datasets/iro.toml, its own instances so no other group holds an item IRO deletes): the first half
of its items' HRIDs to view (the plan's IRO_search_items.csv; shared, round-robin), the second half to edit or
delete (IRO_search_items_delete.csv; a `once` pool, each entry held by one user at a time). An edit puts its item
back at the end of the list; a delete drops it the moment FOLIO has deleted it, and no iteration takes it again
(an iteration that fails drops its item too). The pool runs dry, ending the run, only once every item to delete
is deleted. The dataset's 5,000 items to
delete last about 80 hours at the longevity json's 35 % deletes (about one a minute), as the plan's 3,442-row
list lasted (57 hours) before JMeter recycled it onto deleted items.
"""

from __future__ import annotations

import random

from folioperf.workflows import inventory_views as views
from folioperf.workflows.master_plan import MASTER_HEADERS, current_user_id

from folioperf import FolioTaskSet, FolioUser, Option, TestData, Workflow, task
from folioperf.jmeter import AS_WRITTEN, Delay

VIEW, EDIT, DELETE = "IRO_TC: View Item", "IRO_TC: Edit Item", "IRO_TC: Delete Item"  # lines 8588, 10271, 12393
SCRIPTS = ("Branch selector randomizer", "SWITCH")  # lines 8539, 8556
FOUND = "JSR223 Sampler"  # lines 10017, 11700, 13822
THINK = Delay("uniform", 1000, 2000)  # `${__Random(1000,3000,)}` ms (lines 10257, 12380, 14745)
ITEM_REQUESTS = ('(itemId=={id}) and status==("Open - Awaiting pickup" or "Open - Not yet filled" or '
                 '"Open - In transit" or "Open - Awaiting delivery") sortby requestDate desc')
UNDEFINED_HOLDINGS = "${holdingsRecordId}"


def distribution(text: str) -> tuple[int, int, int]:
    """"35-30-35": the view, edit and delete percentages (the plan's IRO_DISTRIBUTION), adding up to 100."""
    parts = text.strip().split("-")
    if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
        raise ValueError("give the view, edit and delete percentages, e.g. 35-30-35")
    shares = tuple(int(p) for p in parts)
    if sum(shares) != 100:
        raise ValueError("the three percentages must add up to 100")
    return shares  # type: ignore[return-value]


class ItemRecordOperations(FolioTaskSet):
    def on_start(self) -> None:
        self.holdings_id: str | None = None  # the plan's `holdingsRecordId`, a thread variable the ForEach sets
        self.item_id = "${itemId}"  # the plan's `itemId`, set when the HRID is found (undefined before)
        self.current_user = current_user_id(self.okapi, self.user.plan == AS_WRITTEN)
        shares = self.options.distribution
        self.shares = distribution(shares) if isinstance(shares, str) else shares  # the default is text

    @task
    def operate(self) -> None:
        for script in SCRIPTS:
            self.script(script)
        # BranchSelectorRandomizerScript.gvy: r in 1..100, the first branch whose cumulative share reaches it
        flow = random.choices((VIEW, EDIT, DELETE), weights=self.shares)[0]
        if flow == VIEW:
            hrid = self.pools.acquire("view_items")["hrid"]
            with self.transaction(VIEW):
                instance_id = self._find(hrid)
                self._item_page(instance_id)
                self.action(THINK)
            return
        item = self.pools.acquire("edit_items")
        with self.transaction(flow):
            instance_id = self._find(item["hrid"])
        if flow == EDIT:
            self._edit(instance_id)
        else:
            self._delete(instance_id, item)
        self.action(THINK)
        if flow == EDIT:
            self.pools.release(item, to="edit_items")  # still there: back to the end of the list

    def _find(self, hrid: str) -> str:
        """Inventory, the search by the item's HRID, the instance (IRO_Go_to_Inventory ... IRO_Click_Holdings):
        the instance's id, the item kept as `self.item_id` when a holdings record has it."""
        okapi = self.okapi
        views.load_inventory(okapi)
        views.copycat(okapi)
        found = okapi.get("/search/instances", params={
            "query": f'(keyword all "{hrid}" or isbn="{hrid}" or item.hrid=="{hrid}" or item.id=="{hrid}") sortby title',
            "limit": 100}).json()
        instance_id = ((found.get("instances") or [{}])[0]).get("id", "instanceId_notFound")  # line 9535
        holdings = okapi.get("/holdings-storage/holdings",
                             params={"query": f"instanceId=={instance_id}", "limit": 1000}).json()
        ids = [h["id"] for h in holdings.get("holdingsRecords") or []]  # $.holdingsRecords[*].id (line 9605)
        self._instance_view(instance_id, ids)
        for holdings_id in ids:  # the ForEach (line 9952)
            self.holdings_id = holdings_id
            items = okapi.get("/inventory/items", params={"query": f"holdingsRecordId=={holdings_id}",
                                                          "limit": 50000}).json().get("items") or []
            if any(i.get("hrid") == hrid and i.get("barcode") for i in items):  # line 10002, the If at 10011
                self.script(FOUND)
                self.item_id = items[0]["id"]  # $.items[0].id (line 9994)
        return instance_id

    def _instance_view(self, instance_id: str, holdings_ids: list[str]) -> None:
        okapi = self.okapi
        views.instance_head(okapi, instance_id)
        okapi.get("/configurations/entries", params={"query": views.TAGS})
        views.open_requests(okapi, instance_id)
        okapi.get("/source-storage/records/{id}/formatted", id=instance_id, params={"idType": "INSTANCE"})
        views.copycat(okapi)
        views.holdings(okapi, instance_id)
        views.instance_tail(okapi, instance_id)
        # before the ForEach sets it: the previous iteration's (lines 9917, 11600, 13722)
        holdings_id = self.holdings_id or UNDEFINED_HOLDINGS
        if self.user.plan == AS_WRITTEN and holdings_ids:
            holdings_id = holdings_ids[0]
        okapi.get("/inventory/items", params={"query": f"holdingsRecordId=={holdings_id}", "limit": 0})

    def _item_page(self, instance_id: str, *, blank: bool = False) -> dict:
        """IRO_Click_Barcode (line 10028): the item (the delete's with an empty parameter, `?=`, line 13836) and
        what its page shows; the item as read."""
        okapi = self.okapi
        item_id = self.item_id
        item = okapi.get("/inventory/items/{id}", id=item_id, params={"": ""} if blank else None).json()
        self._item_reload(instance_id, users=False)
        return item

    def _item_reload(self, instance_id: str, *, users: bool) -> None:
        okapi = self.okapi
        item_id = self.item_id
        if users:  # the edit's reload opens the item again first (line 12141)
            okapi.get("/inventory/items/{id}", id=item_id)
        okapi.get("/holdings-storage/holdings/{id}", id=self.holdings_id or UNDEFINED_HOLDINGS)
        okapi.get("/inventory/instances/{id}", id=instance_id)
        okapi.get("/service-points")
        okapi.get("/circulation/requests", params={"query": ITEM_REQUESTS.format(id=item_id), "limit": 1})
        okapi.get("/circulation/loans", params={"query": f'status.name=="Open" and itemId=={item_id}'})
        okapi.get("/configurations/entries", params={"query": views.TAGS})
        if users:  # line 12312
            okapi.get("/users", params={"query": f"id=={self.current_user}"})
        okapi.get("/tags", params={"limit": 10000})
        okapi.get("/inventory/items/{id}", id=item_id)

    def _edit_form(self, instance_id: str) -> None:
        """The form's loads (lines 11941-12095, 14070-14224)."""
        okapi = self.okapi
        okapi.get("/locations", params={"query": views.ALL, "limit": 5000})
        okapi.get("/locations", params={"query": views.ALL, "limit": 5000})
        okapi.get("/remote-storage/mappings", params={"limit": 1000})
        okapi.get("/inventory/instances/{id}", id=instance_id)
        okapi.get("/holdings-storage/holdings/{id}", id=self.holdings_id or UNDEFINED_HOLDINGS)
        okapi.get("/inventory/items/{id}", id=self.item_id)

    def _edit(self, instance_id: str) -> None:
        item = self._item_page(instance_id)
        self._edit_form(instance_id)
        item["numberOfPieces"] = random.randint(1, 50)  # the post-processor at line 11733: `${__Random(1,50,)}`
        self.okapi.put("/inventory/items/{id}", id=self.item_id, json=item, expect=(204,))  # line 12104
        self._item_reload(instance_id, users=True)

    def _delete(self, instance_id: str, entry: dict) -> None:
        okapi = self.okapi
        self._item_page(instance_id, blank=True)
        self._edit_form(instance_id)
        okapi.delete("/inventory/items/{id}", id=self.item_id, expect=(204,))  # line 14227
        self.pools.release(entry)  # a `once` entry: dropped, no later iteration searches it
        okapi.get("/holdings-storage/holdings", params={"query": f"instanceId=={instance_id}", "limit": 1000})
        views.instance_head(okapi, instance_id)
        okapi.get("/configurations/entries", params={"query": views.TAGS})
        views.copycat(okapi)
        hrid = entry["hrid"]
        okapi.get("/search/instances", params={
            "query": f'(keyword all "{hrid}" or isbn="{hrid}" or item.hrid=="{hrid}" or item.id=="{hrid}") sortby title',
            "limit": 100})
        views.open_requests(okapi, instance_id)
        okapi.get("/inventory/instances/{id}", id=instance_id)
        okapi.get("/source-storage/records/{id}/formatted", id=instance_id, params={"idType": "INSTANCE"})
        views.copycat(okapi)
        okapi.get("/inventory/instances/{id}", id=instance_id)
        okapi.get("/inventory/items", params={"query": f"holdingsRecordId=={self.holdings_id or UNDEFINED_HOLDINGS}",
                                              "limit": 0})
        okapi.get("/holdings-storage/holdings", params={"query": f"instanceId=={instance_id}", "limit": 1000})
        views.instance_tail(okapi, instance_id)


def draw(data: TestData) -> dict[str, list[dict]]:
    """The dataset's items with an HRID, in id order: the first half to view, the second to edit or delete."""
    items = data.sql("SELECT r.jsonb->>'hrid' FROM {item} r WHERE coalesce(r.jsonb->>'hrid', '') <> '' "
                     "AND r.id BETWEEN %s AND %s ORDER BY r.id", *data.id_range("item"))
    hrids = [{"hrid": h} for h, in items]
    half = (len(hrids) + 1) // 2
    return {"view_items": hrids[:half], "edit_items": hrids[half:]}


workflow = Workflow(
    name="iro",
    description="The PTF master plan's Item Record Operations (IRO): find an item by HRID in Inventory, then view, "
                "edit (numberOfPieces) or delete it, split by --distribution (the plan's 100-0-0 by default)",
    taskset=ItemRecordOperations,
    dataset="iro",
    pools={"view_items": "shared", "edit_items": "once"},
    draw=draw,
    transactions=(VIEW, EDIT, DELETE),
    options=(Option("distribution", default="100-0-0", type=distribution,
                    help="view, edit and delete percentages (the plan's IRO_DISTRIBUTION, line 430: 100-0-0; "
                         "the longevity json's 35-30-35)"),),
    headers=lambda options: MASTER_HEADERS,
)


class IroUser(FolioUser):
    workflow = workflow
