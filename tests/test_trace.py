"""`folioperf run --trace` end to end: the built-in sandbox started with Okapi's trace headers, the real
check-in/check-out workflow with the PTF's pauses (check-outs only), and each module's time in stats.json,
the reports and `compare`; against a target that sends no trace headers, the user is told."""

from __future__ import annotations

import json
import shutil

import pytest

from folioperf import okapi_trace
from folioperf.histogram import decode_histogram, percentiles_us
from tests.conftest import own_database
from tests.locust_process import WORKFLOWS, folioperf, only_results
from tests.test_run import BROWSE

pytestmark = pytest.mark.long_run(50)  # its run (a module fixture) keeps these tests on one xdist worker (conftest)

CHECK_OUT = "POST /circulation/check-out-by-barcode"
CALLED = {"mod-users", "mod-inventory-storage", "mod-circulation-storage", "mod-patron-blocks"}


@pytest.fixture(scope="module")
def traced_run(folio_postgres, tmp_path_factory):
    cwd = tmp_path_factory.mktemp("trace")
    # The Lotus report's response times (check-out about 290 ms at the median, in mod-circulation's own part), as
    # a FOLIO answers: without them the sandbox checks out in 6 ms, of which the 0.4 ms outside the modules (its
    # gateway, the loopback, the client) already made 7 % on an idle machine, and 12 % in one CI run with the
    # suite's other tests on the CPU. First in line for the CPU all the same: every wait of the load generator
    # lands in "gateway and network". Check-outs only (--mix 0-100, the PTF's pauses kept): with the PTF's
    # 43-57 mix, a CI run's 4 users drew check-ins and finished no check-out in 30 s. A twentieth of the dataset:
    # 4 users for 30 s use a few dozen items, and the breakdown does not depend on it. In a database of its own: in
    # the worker's shared one, the next full-scale `folioperf seed cico` would be refused
    with own_database(folio_postgres) as dsn:
        proc = folioperf("run", "check-in-check-out", "--trace", "--latency-profile", "lotus", "--users", "4",
                         "--duration", "30s", "--mix", "0-100", "--scale", "0.05", "--db", dsn, cwd=cwd, timeout=300,
                         first_in_line=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert okapi_trace.NO_HEADERS not in proc.stdout + proc.stderr
    return only_results(cwd / "results")


def _table(text: str, heading: str) -> str:
    """The Markdown table under a bold heading."""
    start = text.index(heading)
    end = text.find("\n\n", text.index("|", start))
    return text[start:end if end >= 0 else None]


def test_check_out_time_is_split_among_the_modules_mod_circulation_calls(traced_run):
    stats = json.loads((traced_run.path / "stats.json").read_text())
    # every module-served response had its lines; the preflights, which Okapi answers itself, are no such response
    assert stats["trace"]["responses"] > 0 and stats["trace"]["without_trace"] == 0
    assert any(e["type"] == "OPTIONS" and e["count"] for e in stats["entries"])
    api = next(e for e in stats["entries"] if e["name"] == CHECK_OUT)
    rows = {m["module"]: m for m in stats["modules"] if m["name"] == CHECK_OUT and m["type"] == "POST"}
    assert {"mod-authtoken", "mod-circulation"} | CALLED <= set(rows)
    assert rows["mod-users"]["calls"] >= rows["mod-users"]["count"]  # at least one call per check-out
    # Every microsecond of every check-out is in one row: the rows' totals add up to the API's.
    assert sum(m["total"] for m in rows.values()) == pytest.approx(api["avg"] * api["count"], rel=1e-3)
    # The modules explain the typical check-out: for the median one, "gateway and network" (the sandbox's
    # gateway, the loopback, the load generator) is at most 10 % of its latency (0.2 % on an idle machine); a
    # module's time counted outside the modules would be most of it. The median, not the mean: even first in
    # line, the generator now and then waits for a CPU, and each wait lands there.
    gateway = decode_histogram(rows[okapi_trace.GATEWAY]["histogram"])
    (gateway_p50_us,) = percentiles_us(gateway, (0.5,), 0, max(gateway))
    assert gateway_p50_us / 1000 <= 0.1 * api["p50"], (gateway_p50_us, api["p50"])
    transaction = {m["module"] for m in stats["modules"] if m["type"] == "Transaction" and m["name"] == "Check-out"}
    assert CALLED <= transaction


def test_the_reports_show_where_the_time_goes(traced_run, tmp_path):
    for name in ("report.md", "report.html"):
        proc = folioperf("report", str(traced_run.path), "-o", name, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "report.md").read_text()
    table = _table(md[md.index("## Where the time goes"):], f"**{CHECK_OUT}: where the time goes")
    assert all(f"| {module} |" in table for module in CALLED | {"mod-circulation"}), table
    # the reports' one orientation: a row per user count and module
    assert "| Users | Module | Calls | Average | 95th | Share |" in table and "\n| 4 users | mod-circulation |" in table
    html = (tmp_path / "report.html").read_text()
    assert "Where the time goes" in html and "mod-circulation-storage" in html and "<img" in html


def test_compare_shows_per_module_deltas(traced_run, tmp_path):
    base = tmp_path / "base"
    shutil.copytree(traced_run.path, base)
    proc = folioperf("compare", str(base), str(traced_run.path), "-o", "compare.md", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    table = _table((tmp_path / "compare.md").read_text(), f"**{CHECK_OUT}: time per module")
    assert all(f"| {module} |" in table for module in CALLED), table
    assert "| mod-circulation-storage | " in table and "0.00% ≈ |" in table  # the same run on both sides


def test_a_target_without_trace_headers_is_named(folio_sandbox, tmp_path):
    events = tmp_path / "events.jsonl"
    proc = folioperf("run", BROWSE, "--trace", "--users", "2", "--duration", "5s", "--okapi-url", folio_sandbox.url,
                     cwd=tmp_path, FOLIOPERF_TEST_EVENTS=str(events))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # numpy, which a process that writes no report needs not, is not loaded to read the lines
    first = json.loads(events.read_text().splitlines()[0])
    assert first["imported"] == [], first
    said = [line for line in (proc.stdout + proc.stderr).splitlines() if okapi_trace.NO_HEADERS in line]
    assert len(said) == 1 and folio_sandbox.url in said[0], proc.stdout + proc.stderr
    stats = json.loads((only_results(tmp_path / "results").path / "stats.json").read_text())
    assert stats["trace"]["responses"] == 0 and stats["trace"]["without_trace"] > 0 and not stats.get("modules")


@pytest.mark.parametrize("workers", [(), ("--workers", "2")], ids=["local", "2 workers"])
def test_nested_transactions_have_their_own_calls_modules_and_every_call_counts_once(folio_sandbox_factory, tmp_path,
                                                                                     workers):
    """A user's calls wait for its outermost transaction: then each transaction that ended in it gets the
    module times of its own calls, and every call those of its API, once; a call outside any transaction
    and a transaction that a failed call ends count the same. The calls of the transactions the stop cuts
    short count for their APIs too, a worker's as well (it hands them over before its final report)."""
    sandbox = folio_sandbox_factory(trace_headers=True)
    proc = folioperf("run", str(WORKFLOWS / "nested.py"), "--trace", "--users", "4", *workers, "--duration", "5s",
                     "--okapi-url", sandbox.url, cwd=tmp_path)
    stats = json.loads((only_results(tmp_path / "results").path / "stats.json").read_text())
    failed = {(e["type"], e["name"]) for e in stats["entries"] if e["failures"]}
    assert proc.returncode == 1 and failed == {("Transaction", "Miss"), ("GET", "GET /users/{id}")}, proc.stdout
    entries = {(e["type"], e["name"]): e["count"] for e in stats["entries"]}
    modules = {(m["type"], m["name"], m["module"]): (m["count"], m["calls"]) for m in stats["modules"]}
    assert stats["trace"]["without_trace"] == 0

    def calls(transaction: str) -> dict[str, int]:
        """Module -> its calls per transaction, over the transaction's every recorded run."""
        count = entries[("Transaction", transaction)]
        rows = {module: n for (kind, name, module), n in modules.items() if (kind, name) == ("Transaction", transaction)}
        assert count > 0 and all(runs == count for runs, _ in rows.values()), (transaction, count, rows)
        return {module: hops / count for module, (_, hops) in rows.items() if module != okapi_trace.GATEWAY}

    # Visit: GET /groups and GET /users (mod-users), GET /service-points (mod-inventory-storage), each through
    # the auth filter; Look up, within it, GET /users alone; Miss, its one GET that found no user
    assert calls("Visit") == {"mod-authtoken": 3, "mod-users": 2, "mod-inventory-storage": 1}
    assert calls("Look up") == {"mod-authtoken": 1, "mod-users": 1}
    assert calls("Miss") == {"mod-authtoken": 1, "mod-users": 1}
    for (kind, name), count in entries.items():  # each API's calls, each once, also outside any transaction
        if kind == "GET":
            assert modules[(kind, name, "mod-authtoken")] == (count, count), name
