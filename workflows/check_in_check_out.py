"""Check-in/check-out (PTF CICO, reports 002 and 004): the calls FOLIO's check-out and check-in pages make
(Orchid-era UI), in their order, as PTF's `circulation_checkInCheckOut_orchid.jmx` sends them
(folio-api.md §3.1, §3.2).

Each iteration is a check-in (43 %) or a check-out (57 %), PTF's DISTRIBUTION=43-57 (`--mix 50-50` for the
master scripts' split); a check-in with no checked-out item free becomes a check-out. Think times are
PTF's, times --think-time, and are not part of the transactions. A checked-out item moves into the pool
`checked_out_items` and back into `available_items` when it is checked in.

    locust -f workflows/check_in_check_out.py --headless -u 8 -r 1 -t 30m --pools cico-pools.json
"""

from __future__ import annotations

import random
import uuid
from datetime import datetime, timezone

from folioperf import FolioTaskSet, FolioUser, Option, Workflow, task
from folioperf.okapi import CallFailed


def _mix(text: str) -> str:
    """ "43-57" or "43/57": check-in and check-out percentages, as PTF's DISTRIBUTION property."""
    parts = text.replace("/", "-").split("-")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise ValueError("give the check-in and check-out percentages, e.g. 43-57")
    check_in, check_out = (int(p) for p in parts)
    if check_in + check_out != 100:
        raise ValueError("the two percentages must add up to 100")
    return f"{check_in}-{check_out}"


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")  # PTF's pattern, in 24-hour time


def _first(response, key: str, what: str, name: str) -> dict:
    records = response.json().get(key) or []
    if not records:
        raise CallFailed(name, f"no {what} found")  # fails the transaction; nothing more to do with this entry
    return records[0]


class CheckInCheckOut(FolioTaskSet):
    @task
    def check_in_or_out(self) -> None:
        check_in_share = int(self.options.mix.split("-")[0])
        if random.uniform(0, 100) < check_in_share:
            item = self.pools.acquire("checked_out_items", wait=False)
            if item is not None:
                return self.check_in(item)
        return self.check_out()

    def check_out(self) -> None:
        user = self.pools.acquire("users")
        service_point = self.pools.acquire("service_points")["id"]
        item = self.pools.acquire("available_items")
        ub, ib = user["barcode"], item["barcode"]
        okapi = self.okapi
        with self.transaction("Check-out"):
            okapi.get("/configurations/entries", params={"query": "(module==CHECKOUT and configName==other_settings)"})
            okapi.get("/configurations/entries", params={"query": "(module==USERS and configName==profile_pictures)"})
            okapi.get("/groups")
            self.think(1, 3)
            found = okapi.get("/users", params={
                "query": f'(barcode=="{ub}" OR externalSystemId=="{ub}" OR id=="{ub}" OR username=="{ub}")'})
            patron = _first(found, "users", f"user with barcode {ub}", "GET /users")
            user_id, group = patron["id"], patron.get("patronGroup")
            self.think(1, 4)
            okapi.get("/groups", params={"query": f"(id=={group})"})
            okapi.get("/accounts", params={"query": f"(userId=={user_id} and status.name<>Closed)", "limit": 100})
            okapi.get("/circulation/loans", params={"query": f"(userId=={user_id} and status.name<>Closed)", "limit": 1})
            okapi.get("/circulation/requests", params={"query": f'(requesterId=={user_id} and status=="Open")', "limit": 100})
            okapi.get("/proxiesfor", params={"query": f"query=(userId=={user_id})", "limit": 80})  # the UI's doubled query=
            okapi.get("/proxiesfor", params={"query": f"query=(proxyUserId=={user_id})", "limit": 80})
            okapi.get("/note-links/domain/users/type/user/id/{id}", id=user_id,
                      params={"limit": 10000, "order": "desc", "status": "assigned"})
            okapi.get("/manualblocks", params={"query": f"userId=={user_id}"})
            okapi.get("/automated-patron-blocks/{id}", id=user_id, params={"limit": 100})
            okapi.get("/proxiesfor", params={"query": f"query=(proxyUserId=={user_id})"})
            okapi.get("/circulation/requests", params={
                "query": f'(requesterId=={user_id} and pickupServicePointId={service_point} and status=="Open - Awaiting pickup")'})
            self.think(1, 3)
            okapi.get("/inventory/items", params={"query": f'barcode=="{ib}"', "limit": 40})
            loan = okapi.post("/circulation/check-out-by-barcode", expect=(201,), json={
                "itemBarcode": ib, "userBarcode": ub, "loanDate": _now(), "id": str(uuid.uuid4()),
                "servicePointId": service_point}).json()
            self.pools.release(item, to="checked_out_items")  # lent now, whatever the calls below do
            borrower = loan.get("userId") or user_id
            okapi.get("/circulation/loans", params={"query": f"(userId=={borrower} and status.name<>Closed)", "limit": 1})
            okapi.get("/automated-patron-blocks/{id}", id=borrower, params={"limit": 100})
            okapi.get("/circulation/requests", params={"query": f'(requesterId=={borrower} and status=="Open")', "limit": 100})
        self.think(5, 7)

    def check_in(self, item: dict) -> None:
        service_point = self.pools.acquire("service_points")["id"]
        ib = item["barcode"]
        okapi = self.okapi
        with self.transaction("Check-in"):
            okapi.get("/groups")
            okapi.get("/users")
            okapi.get("/staff-slips-storage/staff-slips", params={"limit": 1000})
            self.think(1, 3)
            okapi.get("/service-points", params={"limit": 1000})
            okapi.get("/configurations/entries", params={"query": "(module=CHECKOUT and configName=other_settings)"})
            found = okapi.get("/inventory/items", params={"query": f'barcode=="{ib}"', "limit": 1000})
            item_id = _first(found, "items", f"item with barcode {ib}", "GET /inventory/items")["id"]
            checked_in = okapi.post("/circulation/check-in-by-barcode", expect=(200,), json={
                "servicePointId": service_point, "checkInDate": _now(), "itemBarcode": ib, "id": str(uuid.uuid4())}).json()
            self.pools.release(item, to="available_items")
            okapi.get("/circulation/requests", params={
                "query": f'(itemId=={item_id} and (status=="Open - Awaiting pickup" or status=="Open - Awaiting delivery"))'})
            self.think(5, 7)
            loan = checked_in.get("loan")
            if loan is None:
                # The item had no open loan (PTF's recycled CSVs hit this and send the fee/fine look-ups with
                # unresolved variables); the UI has no loan to look fees up for, so neither do we.
                return
            loan_id, user_id = loan["id"], loan.get("userId")
            okapi.get("/accounts", params={"query": f'loanId=="{loan_id}"'})
            self.think(1, 4)
            okapi.get("/lost-item-fees-policies", params={"query": f"id=={loan.get('lostItemPolicyId')}"})
            self.think(5, 7)
            okapi.get("/accounts", params={
                "query": f'(userId=={user_id} and itemId=={item_id}) AND (status.name=="Open" OR status.name=="Closed")'})
            okapi.get("/accounts", params={
                "query": f'(userId=={user_id} and itemId=={item_id} and loanId=={loan_id}) and status.name=="Open"'})


workflow = Workflow(
    name="check-in-check-out",
    description="Check items out and in as FOLIO's check-out and check-in pages do (PTF CICO)",
    taskset=CheckInCheckOut,
    dataset="cico",
    pools={"users": "shared", "available_items": "exclusive", "checked_out_items": "exclusive",
           "service_points": "shared"},
    transactions=("Check-out", "Check-in"),
    options=(Option("mix", default="43-57", type=_mix,
                    help="check-in and check-out percentages, as PTF's DISTRIBUTION (43-57; master scripts 50-50)"),),
)


class CheckInCheckOutUser(FolioUser):
    workflow = workflow
