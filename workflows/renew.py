"""Loan renewal (PTF "renew all loans of a user", report 000), as `users_loanRenewals.jmx` does it
(folio-org/perf-testing workflows-scripts/users/users-loan-renewal/): look the borrower up, list their loans,
renew each listed loan by barcode, list the loans again. There is no batch endpoint: "Renew all loans" is
this client-side loop.

As in the plan, two transactions: "Renew all loans" (the whole iteration) and, inside it, "Renew loans" (the
renewals and the final listing). Every loan the listing shows is renewed: the plan's `status.name==Open` is a
separate URL parameter FOLIO ignores, so closed loans are listed and renewed too, and those renewals fail, as
they do in the PTF's runs; a failed renewal is counted and the loop goes on (JMeter's "continue"). The plan's
script steps (JSR223 samplers: a counter set before the loop and counted up after each renewal) are taken as
samples JMeter counts and a throughput timer paces.

`--ptf-plan master` is the PTF master plan's RENEW group instead (master-script-longevity.jmx lines
36298-36560): one transaction (its inner "transaction controller" is a plain controller), the master plan's
browser headers, and a failed renewal ends the iteration there ("start next thread loop": the borrower's other
loans and the last listing are skipped).

`--loans-per-user 10|50|100|200` picks the borrowers of one group of the renewals dataset (patrons with exactly
that many open loans and no manual block on renewals), so one run reproduces one row of the report's table.
PTF runs the loop back to back, without think time. Each virtual user holds its borrower for the iteration, so
no two users renew the same loans at once.

    locust -f workflows/renew.py --headless -u 2 -r 1 -t 30m --pools renewals-pools.json --loans-per-user 50
"""

from __future__ import annotations

import uuid
from contextlib import nullcontext

from folioperf.workflows.master_plan import MASTER_HEADERS

from folioperf import FolioTaskSet, FolioUser, Option, TestData, Workflow, task
from folioperf.errors import CallFailed

GROUPS = (10, 50, 100, 200)
PLANS = ("stand-alone", "master")
# users_loanRenewals.jmx lines 180-200: every call's headers (the token aside); JMeter asks for no compression
PLAN_HEADERS = {"Accept": "application/json", "content-type": "application/json", "Accept-Encoding": "identity"}
SCRIPTS = {"stand-alone": ("InitCounter", "IncrementCounter"), "master": ("ULR_InitCounter", "ULR_IncrementCounter")}


class RenewAllLoans(FolioTaskSet):
    @task
    def renew_all_loans(self) -> None:
        borrower = self.pools.acquire(f"loan_users_{self.options.loans_per_user}")
        okapi = self.okapi
        master = self.options.ptf_plan == "master"
        init, increment = SCRIPTS[self.options.ptf_plan]
        loans = f"(userId={borrower['id']}) sortby id"
        with self.transaction("Renew all loans"):
            user = okapi.get("/users/{id}", id=borrower["id"], params={"limit": 30}).json()
            listed = okapi.get("/circulation/loans", params={"query": loans, "status.name": "=Open", "limit": 100000}).json()
            self.script(init)
            with nullcontext() if master else self.transaction("Renew loans"):
                for loan in listed.get("loans", []):
                    try:
                        okapi.post("/circulation/renew-by-barcode", expect=(200,), json={
                            "itemBarcode": loan["item"]["barcode"], "userBarcode": user["barcode"], "id": str(uuid.uuid4())})
                    except CallFailed:
                        if master:
                            raise  # "start next thread loop": the iteration ends, its transaction failed
                        # recorded as a failure; the stand-alone plan goes on with the next loan
                    self.script(increment)
                okapi.get("/circulation/loans", params={"query": loans, "limit": 100000})
        self.pools.release(borrower)


def draw(data: TestData) -> dict[str, list[dict]]:
    return {f"loan_users_{n}": data.patrons("renewals", open_loans=n) for n in GROUPS}


workflow = Workflow(
    name="renew",
    description="Renew all loans of a borrower by barcode (PTF loan renewal)",
    taskset=RenewAllLoans,
    dataset="renewals",
    pools={f"loan_users_{n}": "exclusive" for n in GROUPS},
    draw=draw,
    transactions=("Renew all loans", "Renew loans"),
    headers=lambda options: MASTER_HEADERS if options.ptf_plan == "master" else PLAN_HEADERS,
    options=(Option("loans-per-user", default=10, type=int, choices=GROUPS,
                    help="renew the loans of borrowers with this many open loans"),
             Option("ptf-plan", default="stand-alone", choices=PLANS,
                    help="stand-alone: users_loanRenewals.jmx; master: the PTF master plan's RENEW group (one "
                         "transaction, a failed renewal ends the iteration)")),
)


class RenewUser(FolioUser):
    workflow = workflow
