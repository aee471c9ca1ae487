"""Check-in/check-out (PTF CICO, reports 002 and 004): FOLIO's check-out and check-in pages as the PTF's plans
drive them, for the FOLIO UI release of your choice (`--ui-release`; workflows/cico_pages.py): every call in
the page's order with the browser's CORS preflights (`--no-preflight` drops them), the plans' headers, and each
of the plans' timers right before the call it delays (JMeter's timers fire before their sampler), read as
JMeter read them (`--plan`, folioperf.jmeter). `--ptf-plan master` is the PTF master plan's CICO group instead
(master-script-longevity.jmx lines 2107-4592): the Orchid pages with the master plan's browser headers.

Each iteration first takes the plan's two script steps (its JSR223 samplers: the branch selector and the
switch, which JMeter counts as samples and a throughput timer paces), then is a check-in (43 %) or a check-out
(57 %), PTF's DISTRIBUTION=43-57 (`--mix 50-50` for the master plan's split); a check-in with no checked-out item
free becomes a check-out. The pauses are not part of the transactions. A check-in happens at a random one of the
service points the check-in page lists (the plans' extractor takes a random match), so most items return "In
transit" to their location's desk. A checked-out item moves into the pool `checked_out_items` and back into
`available_items` when it is checked in.

Its test data: the cico dataset's patrons without loans, and its items at the locations the check-out desk
serves (the primary service point of the dataset's first location), available or on loan, so that a check-in
there makes them Available again.

    locust -f workflows/check_in_check_out.py --headless -u 8 -r 1 -t 30m --pools cico-pools.json --ui-release lotus
"""

from __future__ import annotations

import random
import uuid
from datetime import datetime, timezone

from folioperf.workflows.cico_pages import CHECK_IN, CHECK_OUT, NEWEST
from folioperf.workflows.master_plan import MASTER_HEADERS

from folioperf import FolioTaskSet, FolioUser, Option, TestData, Workflow, task
from folioperf.errors import FolioperfError
from folioperf.page import run

NOT_FOUND = "NOT_FOUND"  # what the plans' extractors leave in a variable the response did not have
PLANS = ("stand-alone", "master")
# Every call's headers in the stand-alone plans: the plan-wide header manager and the transactions' own (e.g.
# Orchid's lines 73-89 and 1232-1249), the token and tenant aside. JMeter sends no Accept-Encoding (HTTPHC4Impl
# disables content compression); "identity" keeps Locust's client from asking for gzip, and FOLIO answers alike.
PLAN_HEADERS = {
    "Access-Control-Request-Method": "GET",
    "Access-Control-Request-Headers": "content-type,x-okapi-tenant,x-okapi-token",
    "Accept": "*/*",
    "User-Agent": ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
                   "Chrome/78.0.3904.97 Safari/537.36"),
    "Origin": "http://localhost",
    "Accept-Encoding": "identity",
}
# The master plan's CICO group: the plan-wide headers (workflows/master_plan.py) under the transactions' own
# (master-script-longevity.jmx lines 2222-2254), whose User-Agent and Accept win.
MASTER_CICO_HEADERS = {**MASTER_HEADERS, **{k: v for k, v in PLAN_HEADERS.items() if k != "Accept-Encoding"}}
SCRIPTS = {"stand-alone": ("Util_Branch selector randomizer", "Util_SWITCH User type"),
           "master": ("CICO_Util_Branch selector randomizer", "CICO_Util_SWITCH User type")}


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
    """The plans' `yyyy-MM-dd'T'hh:mm:ss'Z'`, in UTC and 24-hour time (the plans' 12-hour `hh` is a bug)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _first(response, key: str) -> dict:
    records = (response.json() or {}).get(key) or []
    return records[0] if records else {}


class CheckInCheckOut(FolioTaskSet):
    @task
    def check_in_or_out(self) -> None:
        for script in SCRIPTS[self.options.ptf_plan]:
            self.script(script)
        check_in_share = int(self.options.mix.split("-")[0])
        if random.uniform(0, 100) < check_in_share:
            item = self.pools.acquire("checked_out_items", wait=False)
            if item is not None:
                return self.check_in(item)
        return self.check_out()

    def check_out(self) -> None:
        user = self.pools.acquire("users")
        item = self.pools.acquire("available_items")
        context = {"user_barcode": user["barcode"], "item_barcode": item["barcode"],
                   "service_point": self.pools.acquire("service_points")["id"],
                   "user_id": NOT_FOUND, "group": NOT_FOUND, "item_id": NOT_FOUND}

        def patron(response, ctx: dict) -> None:
            found = _first(response, "users")
            ctx["user_id"], ctx["group"] = found.get("id", NOT_FOUND), found.get("patronGroup", NOT_FOUND)

        def lent(response, ctx: dict) -> None:
            self.pools.release(item, to="checked_out_items")  # lent now, whatever the calls after it do
            ctx["user_id"] = response.json().get("userId") or ctx["user_id"]

        with self.transaction("Check-out"):
            run(self, CHECK_OUT[self.options.ui_release], context,
                hooks={"patron": patron, "item": _item_id, "loan": lent},
                bodies={"/circulation/check-out-by-barcode": lambda ctx: {
                    "itemBarcode": ctx["item_barcode"], "userBarcode": ctx["user_barcode"], "loanDate": _now(),
                    "id": str(uuid.uuid4()), "servicePointId": ctx["service_point"]}})

    def check_in(self, item: dict) -> None:
        context = {"item_barcode": item["barcode"], "service_point": self.pools.acquire("service_points")["id"],
                   "item_id": NOT_FOUND, "loan_id": NOT_FOUND, "user_id": NOT_FOUND, "lost_item_policy": NOT_FOUND}

        def returned(response, ctx: dict) -> None:
            self.pools.release(item, to="available_items")
            loan = response.json().get("loan") or {}
            ctx["loan_id"] = loan.get("id", NOT_FOUND)
            ctx["user_id"] = loan.get("userId", NOT_FOUND)
            ctx["lost_item_policy"] = loan.get("lostItemPolicyId", NOT_FOUND)

        with self.transaction("Check-in"):
            run(self, CHECK_IN[self.options.ui_release], context,
                hooks={"item": _item_id, "service_points": _service_point, "check_in": returned},
                bodies={"/circulation/check-in-by-barcode": lambda ctx: {
                    "servicePointId": ctx["service_point"], "checkInDate": _now(), "itemBarcode": ctx["item_barcode"],
                    "id": str(uuid.uuid4())}})


def _item_id(response, ctx: dict) -> None:
    ctx["item_id"] = _first(response, "items").get("id", NOT_FOUND)


def _service_point(response, ctx: dict) -> None:
    """The plans' `$.servicepoints[*].id` with match number 0: a random one of those listed."""
    ids = [p["id"] for p in (response.json() or {}).get("servicepoints") or [] if p.get("id")]
    ctx["service_point"] = random.choice(ids) if ids else NOT_FOUND


def draw(data: TestData) -> dict[str, list[dict]]:
    desk = data.checkin_service_point()
    served = [loc["id"] for loc in data.locations()
              if desk["id"] in (loc.get("servicePointIds") or []) or loc.get("primaryServicePoint") == desk["id"]]
    return {
        "users": data.patrons("borrowing", open_loans=0),
        "available_items": data.items("Available", locations=sorted(served), no_open_requests=True),
        "checked_out_items": data.items("Checked out", locations=sorted(served), open_loan=True),
        "service_points": [desk],
    }


def _one_plan(options) -> None:
    if options.ptf_plan == "master" and options.ui_release != "orchid":
        raise FolioperfError(f"--ptf-plan master drives the Orchid pages, as the master plan's CICO group does: "
                             f"leave out --ui-release {options.ui_release}")


workflow = Workflow(
    name="check-in-check-out",
    description="Check items out and in as FOLIO's check-out and check-in pages do (PTF CICO)",
    taskset=CheckInCheckOut,
    dataset="cico",
    pools={"users": "shared", "available_items": "exclusive", "checked_out_items": "exclusive",
           "service_points": "shared"},
    draw=draw,
    transactions=("Check-out", "Check-in"),
    browser=True,
    pages={"Check-out": CHECK_OUT, "Check-in": CHECK_IN},
    headers=lambda options: MASTER_CICO_HEADERS if options.ptf_plan == "master" else PLAN_HEADERS,
    check_options=_one_plan,
    options=(Option("mix", default="43-57", type=_mix,
                    help="check-in and check-out percentages, as PTF's DISTRIBUTION (43-57; master plan 50-50)"),
             Option("ui-release", default=NEWEST, choices=tuple(CHECK_OUT),
                    help="the FOLIO UI release whose pages to drive, as the PTF's plan for it"),
             Option("ptf-plan", default="stand-alone", choices=PLANS,
                    help="stand-alone: the release's check-in/check-out plan; master: the PTF master plan's CICO "
                         "group (Orchid's pages, its browser headers and script names)")),
)


class CheckInCheckOutUser(FolioUser):
    workflow = workflow
