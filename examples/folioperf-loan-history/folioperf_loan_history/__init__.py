"""loan-history: a borrower's open loans, newest first, and the items of the first page of them, as FOLIO's
user page shows a patron's loans (`GET /circulation/loans`, then `GET /inventory/items/{id}` for each loan shown).

A plugin workflow carries everything it needs: its dataset (loan_history.toml, installed with the package),
how its pool is drawn from the tenant's data (`draw`, a function given folioperf's TestData), its option
(`--page-size`), its transaction and its pacing. folioperf finds it through the entry point in pyproject.toml.
"""

from __future__ import annotations

from pathlib import Path

from folioperf import FolioTaskSet, FolioUser, Option, TestData, Workflow, task

LOANS = 3  # each borrower of the dataset has this many open loans


class LoanHistory(FolioTaskSet):
    @task
    def show_loans(self) -> None:
        borrower = self.pools.acquire("borrowers")  # exclusive: no other user shows this borrower meanwhile
        with self.transaction("Show loans"):
            loans = self.okapi.get("/circulation/loans", params={
                "query": f"userId=={borrower['id']} and status.name==Open sortby loanDate/sort.descending",
                "limit": self.options.page_size}).json()["loans"]
            for loan in loans:
                self.okapi.get("/inventory/items/{id}", id=loan["itemId"])
        self.pools.release(borrower)
        self.think(2, 4)


def draw(data: TestData) -> dict[str, list[dict]]:
    """The borrowers with exactly LOANS open loans, and no manual block on borrowing."""
    return {"borrowers": data.patrons("borrowing", open_loans=LOANS)}


workflow = Workflow(
    name="loan-history",
    description="Show a borrower's open loans and their items (example plugin)",
    taskset=LoanHistory,
    dataset=Path(__file__).with_name("loan_history.toml"),
    pools={"borrowers": "exclusive"},
    draw=draw,
    transactions=("Show loans",),
    options=(Option("page-size", default=10, type=int, help="loans a page shows"),),
    pacing=5,  # an iteration every 5 s per user (times --think-time), think time included
)


class LoanHistoryUser(FolioUser):  # plain `locust -f` of this module runs it too
    workflow = workflow
