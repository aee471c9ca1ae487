"""`folioperf run` end to end: real sandboxes, real Locust processes, the results directory read back."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import uuid
from pathlib import Path

import psutil
import pytest
import requests

from folioperf import results
from tests.locust_process import (
    SEEDS_FULL_CICO,
    WORKFLOWS,
    answered,
    clean_env,
    folioperf,
    folioperf_command,
    free_port,
    only_results,
    results_in,
    served,
    start_run,
    wait_for,
)

BROWSE = str(WORKFLOWS / "browse.py")
AUTH_CALLS = ("POST /authn/login-with-expiry", "POST /authn/login", "POST /authn/refresh")


def run(args: list[str], cwd: Path, password: str = "admin", timeout: float = 150) -> subprocess.CompletedProcess:
    return folioperf("run", *args, cwd=cwd, timeout=timeout, FOLIOPERF_PASSWORD=password)


@pytest.fixture(scope="module")
def secret_sandbox(folio_sandbox_factory):
    """A sandbox with a tenant of its own and an admin password that must never be written anywhere."""
    password = f"Zebra-{uuid.uuid4().hex[:12]}"
    sandbox = folio_sandbox_factory(tenants=("fs00000042",), admin_password=password)
    sandbox.password = password
    return sandbox


@pytest.mark.long_run(12)
def test_two_workers_count_what_the_sandbox_counted_and_keep_secrets(secret_sandbox, tmp_path):
    before = secret_sandbox.counters()
    proc = run([BROWSE, "--users", "4", "--spawn-rate", "4", "--duration", "8s", "--workers", "2",
                "--okapi-url", secret_sandbox.url, "--tenant", secret_sandbox.tenant, "--results", "out"],
               tmp_path, password=secret_sandbox.password)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = secret_sandbox.counters()
    res = only_results(tmp_path / "out")
    assert res.run.workers == 2 and res.run.users == 4 and not any(vars(res.run.flags).values())
    apis = res.apis()
    assert {e.name for e in apis} >= {"GET /groups", "GET /groups/{id}", "GET /users", "GET /users/{id}"}
    for entry in apis:
        counted = answered(after, entry.name) - answered(before, entry.name)
        if entry.name in AUTH_CALLS:  # the master's one login (preflight, test data) is not part of the load
            assert counted - entry.count in (0, 1), entry.name
        elif entry.name == "GET /groups":  # nor is the master's one read of the workflow's test data
            assert counted == entry.count + 1
        else:
            assert counted == entry.count, f"{entry.name}: sandbox {counted}, folioperf {entry.count}"
    browse = res.entry("Transaction", "Browse")
    assert browse.count > 0 and browse.failures == 0
    # every transaction began with GET /groups; one a user was in when the run ended, pausing, is not recorded
    assert 0 <= res.entry("GET", "GET /groups").count - browse.count <= 4
    # no password and no token in anything the run printed or wrote
    texts = [proc.stdout, proc.stderr] + [p.read_text() for p in res.path.iterdir()]
    for text in texts:
        assert secret_sandbox.password not in text
        assert "eyJ" not in text  # the sandbox's tokens are JWTs


def test_the_sandbox_run_seeds_nothing_it_does_not_need_and_reports_the_database(run_dsn, tmp_path):
    proc = run([BROWSE, "--users", "2", "--duration", "5s", "--db", run_dsn, "--tag", "smoke"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    res = only_results(tmp_path / "results")
    assert res.run.target.sandbox and res.run.tag == "smoke" and res.run.duration_s == 5
    assert res.run.target.modules, "the sandbox lists its module versions"
    assert res.report_html is not None and "Browse" in res.report_html.read_text()
    assert res.db is not None and res.db["statements"]["available"]
    assert any(s["calls"] > 0 and "mod_users" in s["query"] for s in res.db["statements"]["top"])
    assert "Results (ms)" in proc.stdout and "Browse" in proc.stdout and "exit code 0" in proc.stdout


def test_ctrl_c_mid_run_writes_a_complete_directory_flagged_interrupted(folio_sandbox, tmp_path):
    proc = start_run([BROWSE, "--users", "3", "--duration", "2m", "--okapi-url", folio_sandbox.url, "--results", "out"],
                 tmp_path)
    try:
        base = served(folio_sandbox, "GET /groups")
        wait_for(lambda: served(folio_sandbox, "GET /groups") > base + 20, "the load to start")
        os.kill(proc.pid, signal.SIGINT)
        output, _ = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode == 130, output
    assert "interrupted: stopping the test and writing its results" in output  # the master says it, above its view
    assert "stopping: the results are being written" not in output  # folioperf run no longer prints into the view
    res = only_results(tmp_path / "out")
    assert res.run.flags.interrupted and res.run.exit_code == 130
    assert res.run.elapsed_s < 60
    assert res.run.duration_s <= res.run.elapsed_s  # the time the load ran, not the 2 minutes asked for
    assert res.entry("Transaction", "Browse").count > 0
    assert {p.name for p in res.path.iterdir()} >= {"run.json", "stats.json", "timeseries.csv", "failures.csv", "locust-report.html"}


@pytest.mark.long_run
def test_a_killed_worker_is_flagged(folio_sandbox, tmp_path):
    proc = start_run([BROWSE, "--users", "4", "--spawn-rate", "4", "--duration", "20s", "--workers", "2",
                  "--okapi-url", folio_sandbox.url, "--results", "out"], tmp_path)
    try:
        def workers():
            found = [p for p in psutil.Process(proc.pid).children() if "--worker" in p.cmdline()]
            return found if len(found) == 2 else None

        victim = wait_for(workers, "two workers")[0]
        base = served(folio_sandbox, "GET /groups")
        wait_for(lambda: served(folio_sandbox, "GET /groups") > base + 20, "the load to start")
        victim.kill()
        output, _ = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode == 5, output
    res = only_results(tmp_path / "out")
    assert res.run.flags.worker_lost and not res.run.flags.interrupted
    assert res.entry("Transaction", "Browse").count > 0


@pytest.mark.long_run(8)
def test_web_ui_driven_from_a_browser_writes_the_results(folio_sandbox, chromium, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    port = free_port()
    proc = start_run([BROWSE, "--users", "2", "--duration", "30s", "--web", "--web-port", str(port),
                  "--okapi-url", folio_sandbox.url, "--results", "out"], tmp_path)
    try:
        def answers() -> bool:
            try:
                return requests.get(f"http://127.0.0.1:{port}/", timeout=1).status_code == 200
            except requests.RequestException:
                return False

        wait_for(answers, "the web UI")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/")
            form = page.content()  # the page holds the form's options and their labels
            # short labels, not whole help texts the form cuts with "…"
            assert "failure share allowed, e.g. 1%" in form and "any failure" not in form and "%%" not in form
            assert "think times: 1 = PTF's, 0 = none" in form and "maximum pressure" not in form
            assert "browse: also look up a service point in each transaction" in form  # the workflow by name
            assert "--variant" not in form and "/tmp" not in form  # no other workflow's options, no temporary path
            page.get_by_role("button", name="Start").click()
            # a call's row is its path (its type the method), not `GET GET /groups/{id}`
            expect(page.get_by_role("cell", name="/groups/{id}", exact=True)).to_be_visible(timeout=30_000)
            expect(page.get_by_role("cell", name="Browse", exact=True)).to_be_visible(timeout=30_000)
            page.get_by_role("button", name="Stop").click()
            wait_for(lambda: (tmp_path / "out").exists() and any(
                not p.name.startswith(".") for p in (tmp_path / "out").iterdir()), "the results directory")
            (written,) = _finished(tmp_path / "out")
            page.get_by_role("tab", name="folioperf").click()  # the workflow, and where the test's results went
            report = page.get_by_role("cell", name=f"folioperf report {written} -o report.md")
            expect(report).to_be_visible(timeout=10_000)
            expect(page.get_by_role("cell", name="browse", exact=True)).to_be_visible()
            page.get_by_role("tab", name="Current ratio").click()  # the workflow, not the classes that run it
            expect(page.get_by_text(re.compile(r"^[\d.]+% browse\b")).first).to_be_visible(timeout=10_000)
            assert "WorkflowUser" not in page.locator("main").inner_text()
            browser.close()
        # the header's RPS and failures and the Aggregated row are of API calls: a transaction is their sum
        stats = requests.get(f"http://127.0.0.1:{port}/stats/requests", timeout=10).json()["stats"]
        *rows, total = stats
        calls = [e for e in rows if e["method"] not in ("Transaction", "Script", "Scheduled", "Error")]
        assert total["name"] == "Aggregated" and len(calls) < len(rows)
        assert total["num_requests"] == sum(e["num_requests"] for e in calls)
        assert not [e["name"] for e in rows if e["name"].startswith(e["method"] + " ")]
        os.kill(proc.pid, signal.SIGINT)
        output, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert "KeyboardInterrupt" not in output and "Traceback" not in output  # Ctrl-C after a finished test
    res = only_results(tmp_path / "out")
    assert res.run.users == 2 and not res.run.flags.interrupted
    assert res.entry("Transaction", "Browse").count > 0


def _web_ui_answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=1).status_code == 200
    except requests.RequestException:
        return False


def _ui_count(url: str, name: str) -> int:
    """How many `name` requests the web UI's statistics count in the test under way (the UI's answer is kept
    for 2 s: one from before the test started, the former test's, says "stopped")."""
    answer = requests.get(f"{url}/stats/requests", timeout=10).json()
    running = answer["state"] in ("spawning", "running")
    rows = [e for e in answer["stats"] if name in (e["name"], f"{e['method']} {e['name']}")]  # a call's is its path
    return sum(e["num_requests"] for e in rows) if running else 0


def _ui_state(url: str) -> str:
    return requests.get(f"{url}/stats/requests", timeout=10).json()["state"]


def _finished(root: Path) -> list[Path]:
    """The results directories written whole (not a test's partial one, written as it runs)."""
    return [p for p in results_in(root) if not p.name.endswith("-partial") and (p / "run.json").is_file()]


@SEEDS_FULL_CICO
@pytest.mark.long_run(150)
def test_three_tests_from_the_web_ui_each_start_from_the_seeded_data(run_dsn, chromium, tmp_path):
    """Before, the second and third tests of one web UI session got the first's pools again and checked out the
    items it had lent (HTTP 422 "Item is already checked out"), and each test stopped from the UI was recorded
    as lasting its whole run time."""
    from playwright.sync_api import expect, sync_playwright

    port = free_port()
    ui = f"http://127.0.0.1:{port}"
    # a run time the waits below do not reach (with the default minute, a busy machine's slow check-outs once let
    # the first test end on its own before Stop was clicked)
    proc = start_run(["check-in-check-out", "--users", "4", "--duration", "5m", "--web", "--web-port", str(port),
                      "--results", "out"], tmp_path, FOLIOPERF_DB=run_dsn)
    try:
        wait_for(lambda: _web_ui_answers(ui) or proc.poll() is not None, "the web UI", timeout=400)  # seeds cico
        assert proc.poll() is None, proc.communicate()[0]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page()
            page.set_default_timeout(120_000)  # not Playwright's 30 s: chromium shares the CPU with the whole suite
            page.goto(ui)
            for n in range(1, 4):
                if n > 1:
                    page.get_by_role("button", name="New").click()
                page.get_by_role("button", name="Start").click()
                # shown once the test runs: its data is reset and its pools drawn first
                expect(page.get_by_role("button", name="Stop")).to_be_visible(timeout=120_000)
                wait_for(lambda: _ui_count(ui, "POST /circulation/check-out-by-barcode") >= 3,
                         f"check-outs in test {n}", timeout=120)
                page.get_by_role("button", name="Stop").click()
                wait_for(lambda n=n: len(_finished(tmp_path / "out")) == n, f"the results of test {n}", timeout=120)
                # no answer of this test's, kept for 2 s, may count for the next one
                wait_for(lambda: _ui_state(ui) == "stopped", f"the UI to say test {n} stopped")
            browser.close()
        os.kill(proc.pid, signal.SIGINT)
        output, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert "Traceback" not in output, output[-4000:]
    tests = [results.load(path) for path in _finished(tmp_path / "out")]
    assert len(tests) == 3
    failed = [[(e.name, e.failures) for e in res.entries if e.failures] for res in tests]
    assert failed == [[], [], []] and [res.run.exit_code for res in tests] == [0, 0, 0], failed
    for res in tests:
        assert {p.name for p in res.path.iterdir()} >= {"run.json", "stats.json", "timeseries.csv", "failures.csv",
                                                       "locust-report.html"}
        assert not res.run.flags.raised(), (res.path.name, res.run.flags)
        assert res.entry("POST", "POST /circulation/check-out-by-barcode").count >= 3
        # stopped from the UI before its 5-minute run time: recorded as long as its load ran, not 300 s
        assert 0 < res.run.duration_s < 300 and res.run.duration_s <= res.run.elapsed_s


def test_trace_ticked_in_the_web_ui_gets_the_sandboxs_trace_headers(run_dsn, tmp_path):
    """Before, `folioperf run --web` started its sandbox without trace headers: "Trace" ticked in the form got no
    module times, and the warning blamed Okapi."""
    port = free_port()
    ui = f"http://127.0.0.1:{port}"
    proc = start_run([BROWSE, "--users", "2", "--web", "--web-port", str(port), "--results", "out"], tmp_path,
                     FOLIOPERF_DB=run_dsn)
    try:
        wait_for(lambda: _web_ui_answers(ui) or proc.poll() is not None, "the web UI", timeout=120)
        assert proc.poll() is None, proc.communicate()[0]
        form = {"user_count": 2, "spawn_rate": 2, "trace": "true"}
        assert requests.post(f"{ui}/swarm", data=form, timeout=10).json()["success"]
        wait_for(lambda: _ui_count(ui, "Browse") >= 2, "two Browse transactions")
        assert requests.post(f"{ui}/stop", timeout=10).json()["success"]
        wait_for(lambda: _finished(tmp_path / "out"), "the results")
        os.kill(proc.pid, signal.SIGINT)
        output, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    (path,) = _finished(tmp_path / "out")
    stats = json.loads((path / "stats.json").read_text())
    assert stats["trace"]["responses"] > 0 and stats["trace"]["without_trace"] == 0 and stats["modules"]
    assert "X-Okapi-Trace" not in output and "Traceback" not in output, output[-3000:]


@pytest.mark.parametrize("args, message", [
    (["no-such-workflow", "--users", "1"], "no-such-workflow"),
    ([BROWSE, "--users", "0"], "--users"),
    ([BROWSE, "--users", "1", "--duration", "soon"], "invalid duration"),
    ([BROWSE, "--users", "1", "--variant", "item"], "unknown option --variant"),
    ([BROWSE, "--users", "1", "--workers", "2", "--master"], "choose one"),
    ([BROWSE, "--users", "1", "--okapi-url", "http://127.0.0.1:9", "--results", "out"], "127.0.0.1:9"),
    ([BROWSE, "--users", "1", "--db", "postgresql://postgres@127.0.0.1:9/x", "--results", "out"],
     "the sandbox did not start: cannot connect to PostgreSQL"),
    ([BROWSE, "--users", "1", "--results", "/dev/null/out"], "/dev/null is not a directory"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path):
    proc = run(args, tmp_path, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert not (tmp_path / "out").exists()


def test_a_busy_web_port_is_one_line_before_anything_starts(tmp_path):
    """Before, the sandbox started, the dataset was seeded, and Locust's web server then failed with two tracebacks."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = run([BROWSE, "--users", "1", "--web", "--web-port", str(port), "--results", "out"], tmp_path, timeout=60)
    refused = (f"folioperf: error: --web-port {port}: the web UI cannot listen on port {port}: it is already in use; "
               "give another --web-port\n")
    assert (proc.returncode, proc.stderr) == (2, refused), proc.stdout
    assert not (tmp_path / "out").exists()


def test_a_workflow_whose_test_data_cannot_be_drawn_is_refused_before_anything_starts(tmp_path):
    """Before, a file workflow ran the sandbox and seeded its dataset, then failed for want of a pools file."""
    undrawn = run([str(WORKFLOWS / "cico.py"), "--users", "1", "--results", "out"], tmp_path, timeout=60)
    assert undrawn.returncode == 2, undrawn.stdout + undrawn.stderr
    assert undrawn.stderr == ("folioperf: error: workflow test-cico needs test data (pools users, available_items, "
                              "checked_out_items, service_points) but does not say how to draw it (Workflow(draw=...)): "
                              "give --pools FILE\n")
    sql_only = tmp_path / "sql_only.py"
    shutil.copy(WORKFLOWS / "events.py", tmp_path)  # browse.py's instrumentation, beside it
    sql_only.write_text((WORKFLOWS / "browse.py").read_text().replace(
        'Records("patron_groups", fields=("id", "group"))',
        'Records("patron_groups", fields=("id", "group"), sql="r.jsonb->>\'group\' <> \'staff\'")'))
    through_api = run([str(sql_only), "--users", "1", "--okapi-url", "http://127.0.0.1:9", "--results", "out"], tmp_path,
                      timeout=60)
    assert (through_api.returncode, through_api.stderr) == (2, (
        "folioperf: error: pool groups of workflow browse is drawn with SQL only: give --db DSN (the database of your "
        "FOLIO) or --pools FILE\n"))
    assert not (tmp_path / "out").exists()


@pytest.mark.long_run(8)
def test_master_and_a_worker_started_apart_as_on_two_machines(folio_sandbox, tmp_path):
    port = free_port()
    master = start_run([BROWSE, "--users", "2", "--duration", "6s", "--master", "--expect-workers", "1",
                    "--master-port", str(port), "--okapi-url", folio_sandbox.url, "--results", "out"], tmp_path)
    worker = subprocess.Popen(folioperf_command("worker", "--master-host", "127.0.0.1", "--master-port", str(port)),
                              cwd=tmp_path, env=clean_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)  # no password: the master sends it
    try:
        output, _ = master.communicate(timeout=120)
        worker.communicate(timeout=60)
    finally:
        master.kill()
        worker.kill()
    assert master.returncode == 0, output
    assert "waiting for 1 worker on port" in output and "(this machine only" in output  # loopback unless told
    res = only_results(tmp_path / "out")
    assert res.run.workers == 1 and res.entry("Transaction", "Browse").count > 0
    assert worker.returncode == 0


@pytest.mark.long_run
def test_the_sandbox_dataset_is_seeded_then_reset_and_seeded_again_at_another_scale(own_run_dsn, tmp_path):
    def run_at(scale: str) -> str:
        # the PTF's think times: this is about the data, and users that never pause would only load the CPU; a
        # 3 s test on a busy machine may have its users start late, which is no part of this test either
        proc = run(["check-in-check-out", "--users", "2", "--duration", "3s", "--scale", scale, "--db", own_run_dsn,
                    "--allow-partial-ramp"], tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stderr

    assert "seeded dataset cico (scale 0.01)" in run_at("0.01")
    assert "resetting it to its seeded state" in run_at("0.01")  # the first run's loans are undone
    again = run_at("0.02")
    assert "cico is seeded differently in tenant diku: seeding it again at scale 0.02" in again
    assert "seeded dataset cico (scale 0.02)" in again


def test_a_workers_log_lines_are_said_after_the_run_not_inside_the_live_view(folio_sandbox, tmp_path):
    """A worker writes to the terminal the master's live view holds: its lines landed inside the view."""
    shutil.copy(WORKFLOWS / "events.py", tmp_path)  # browse.py's instrumentation, beside it
    talking = tmp_path / "talking.py"
    talking.write_text((WORKFLOWS / "browse.py").read_text().replace(
        '        group = self.pools.acquire("groups")\n',
        '        if not getattr(Browse, "said", False):\n'
        '            Browse.said = True\n'
        '            import logging\n'
        '            logging.getLogger("folioperf").warning("a line from a worker")\n'
        '        group = self.pools.acquire("groups")\n'))
    proc = run([str(talking), "--users", "1", "--duration", "4s", "--workers", "1", "--okapi-url", folio_sandbox.url,
                "--results", "out"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    said = next(k for k, line in enumerate(lines) if "a line from a worker" in line)
    assert lines[said - 1] == "folioperf: worker-1 logged:", lines
    assert proc.stdout.rstrip().endswith("exit code 0")  # the summary and the view came first: the master is done
    assert "a line from a worker" not in proc.stdout


@pytest.mark.long_run(170)
def test_the_product_cards_command_runs_as_typed(run_dsn, tmp_path):
    """`folioperf run holds --users 8`: holds starts a user every 10 s (the PTF's ramp), 1m10s for 8 users, which
    the default minute cannot hold (before: exit 2). With no --duration the run takes one that fits, says so, and
    every user runs."""
    proc = folioperf("run", "holds", "--users", "8", cwd=tmp_path, timeout=600, FOLIOPERF_DB=run_dsn)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "no --duration given: 2m30s, so that after the ramp-up (1m10s) every user runs for 1m20s" in proc.stderr
    res = only_results(tmp_path / "results")
    assert (res.run.users, res.run.users_target, res.run.duration_s) == (8, 8, 150)
    assert res.run.full_load_at is not None and not any(vars(res.run.flags).values())
    assert res.entry("Transaction", "Place hold").count > 0


@pytest.mark.long_run(12)
def test_a_ramp_up_the_start_accepts_at_its_boundary_is_not_flagged_at_the_end(folio_sandbox, tmp_path):
    """One rule before and after: 5 users over 4 s of an 8 s test is accepted (the last starts at its middle).
    Before, the run then measured the last start a few ms after the middle and flagged it (exit 7)."""
    proc = run([BROWSE, "--users", "5", "--ramp-up", "4s", "--duration", "8s", "--okapi-url", folio_sandbox.url,
                "--results", "out"], tmp_path)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    res = only_results(tmp_path / "out")
    assert res.run.users == 5 and res.run.full_load_at is not None and not res.run.flags.ramp_incomplete
