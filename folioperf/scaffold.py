"""`folioperf new workflow NAME`: a runnable workflow to start from, with its test data and its smoke test.

Three files in the directory given (default: the current one), none of which may exist yet:

- `<module>.py`: the workflow (look a patron up, then their open loans and blocks), its pool drawn by a query;
- `<module>.toml`: its dataset, small, which `folioperf run <module>.py` seeds into the sandbox first;
- `test_<module>.py`: a pytest smoke test that runs it briefly against folioperf's sandbox fixture.

`folioperf run <module>.py --users 2 --duration 20s` then works with no other step. docs/writing-workflows.md
is the guide to what the file holds.
"""

from __future__ import annotations

import argparse
import re
import zlib
from pathlib import Path

from folioperf.errors import FolioperfError

WORKFLOW = '''"""{name}: look a patron up by barcode, then their open loans and their blocks, as a librarian does.

Written by `folioperf new workflow {name}`. Run it against folioperf's built-in FOLIO sandbox, its dataset
{module}.toml seeded first and its pool drawn from it:

    folioperf run {module}.py --users 2 --duration 20s

or against your FOLIO with `--okapi-url URL --tenant T --username U` (the password from FOLIOPERF_PASSWORD),
where its pool is drawn from the tenant's users. The guide: docs/writing-workflows.md in folioperf.
"""

from __future__ import annotations

from pathlib import Path

from folioperf import FolioTaskSet, FolioUser, Records, Workflow, task


class {cls}(FolioTaskSet):
    @task
    def look_up(self) -> None:
        patron = self.pools.acquire("patrons")  # shared: handed out round-robin, never released
        with self.transaction("Look up patron"):  # one row in the reports: its calls' time added up
            found = self.okapi.get("/users", params={{"query": f'barcode=="{{patron["barcode"]}}"'}}).json()
            user_id = found["users"][0]["id"]
            self.okapi.get("/circulation/loans", params={{"query": f"userId=={{user_id}} and status.name==Open"}})
            self.okapi.get("/automated-patron-blocks/{{id}}", id=user_id)
        self.think(1, 3)  # 1 to 3 s, times --think-time; no part of the transaction


workflow = Workflow(
    name="{name}",
    description="Look a patron up, then their open loans and blocks",
    taskset={cls},
    dataset=Path(__file__).with_name("{module}.toml"),  # or a built-in dataset: "cico"
    pools={{"patrons": "shared"}},
    draw={{"patrons": Records("users", fields=("id", "barcode"),
                             sql="r.jsonb->>'active' = 'true' AND r.jsonb->>'barcode' IS NOT NULL",
                             cql='active==true and barcode=""')}},
    transactions=("Look up patron",),
)


class {cls}User(FolioUser):  # plain `locust -f {module}.py` runs it too
    workflow = workflow
'''

DATASET = '''# The test data of the {name} workflow: `folioperf run {module}.py` seeds it into the sandbox (and resets it
# before later runs); `folioperf seed {module}.toml` seeds it into a FOLIO database. Counts are multiplied by
# --scale; the names in [records] are reference records folioperf's own reference file defines.

[dataset]
description = "Patrons to look up ({name})"
extends = "reference"
seed = {seed}
prefix = "{prefix}"  # barcodes and HRIDs start with it: unique among the datasets of a tenant

[counts]
users = 200
instances = 100
loans_per_user = [2]
users_per_loan_count = 20

[records]
patron_groups = ["undergrad", "graduate", "faculty", "staff"]
locations = ["Main Library"]
material_types = ["book"]
loan_type = "Can circulate"
instance_type = "text"
holdings_source = "FOLIO"
address_type = "Home"
loan_policy = "Example Loan Policy"
request_policy = "Example Request Policy"
overdue_fine_policy = "Example Overdue Fine Policy"
lost_item_fee_policy = "Example Lost Item Fee Policy"
pickup_service_points = ["Circ Desk 1"]
'''

SMOKE_TEST = '''"""A smoke test of the {name} workflow: a short run against folioperf's FOLIO sandbox (the `folio_sandbox`
fixture of folioperf's pytest plugin), its dataset seeded there, records its transaction without a failure.

    python -m pytest test_{module}.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from folioperf import results

WORKFLOW = Path(__file__).with_name("{module}.py")


def test_{module}_runs_clean(folio_sandbox, tmp_path):
    sandbox = folio_sandbox
    run = subprocess.run(
        [sys.executable, "-m", "folioperf", "run", str(WORKFLOW), "--users", "2", "--duration", "10s",
         "--okapi-url", sandbox.url, "--tenant", sandbox.tenant, "--username", sandbox.username,
         "--db", sandbox.dsn, "--seed", "--results", str(tmp_path)],
        env={{**os.environ, "FOLIOPERF_PASSWORD": sandbox.password}}, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    (directory,) = tmp_path.iterdir()
    looked_up = results.load(directory).entry("Transaction", "Look up patron")
    assert looked_up is not None and looked_up.count > 0 and looked_up.failures == 0
'''


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("new", help="write a new workflow to start from: its file, its dataset and its smoke test",
                       description="Write a runnable workflow (NAME.py), the dataset it is seeded with (NAME.toml) and "
                                   "a pytest smoke test (test_NAME.py); `folioperf run NAME.py` then runs it.")
    p.add_argument("kind", choices=("workflow",), help="what to write")
    p.add_argument("name", metavar="NAME", help="the workflow's name: lower-case letters, digits and '-' (patron-lookup)")
    p.add_argument("--dir", default=".", metavar="DIR", help="where to write the files (default: here)")
    p.set_defaults(handler="folioperf.scaffold:new")


def new(args: argparse.Namespace) -> int:
    from folioperf.workflow import NAME  # what a workflow's name may be

    name = args.name
    if not NAME.match(name):
        raise FolioperfError(f"workflow name {name!r}: use lower-case letters, digits and '-', starting with a letter")
    directory = Path(args.dir)
    if not directory.is_dir():
        raise FolioperfError(f"{args.dir} is not a directory")
    module = name.replace("-", "_")
    values = {"name": name, "module": module, "cls": "".join(part.capitalize() for part in name.split("-") if part),
              "seed": zlib.crc32(name.encode()) % 10_000, "prefix": (re.sub(r"[^a-z0-9]", "", name) + "wf")[:8]}
    files = {directory / f"{module}.py": WORKFLOW, directory / f"{module}.toml": DATASET,
             directory / f"test_{module}.py": SMOKE_TEST}
    there = [str(path) for path in files if path.exists()]
    if there:
        raise FolioperfError(f"{', '.join(there)} {'exists' if len(there) == 1 else 'exist'} already: choose another "
                             "name or --dir (nothing was written)")
    for path, template in files.items():
        path.write_text(template.format(**values))
    print(f"wrote {', '.join(str(p) for p in files)}")
    print(f"run it:   folioperf run {directory / module}.py --users 2 --duration 20s")
    print(f"test it:  python -m pytest {directory / f'test_{module}.py'}")
    return 0
