"""Ctrl-C (SIGINT to `folioperf run`, as a terminal sends it) at every stage of a run: each ends with exit code
130 and a line that says what happened — what was undone, whether anything ran, where the results are."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import threading
import time
import uuid

import psutil
import psycopg
import pytest

from folioperf import results
from folioperf.db import database_name, ensure_database, with_database
from folioperf.launch import Processes
from folioperf.outcome import EXIT_INTERRUPTED
from tests.locust_process import (
    SEEDS_FULL_CICO,
    WORKFLOWS,
    clean_env,
    folioperf,
    folioperf_command,
    free_port,
    results_in,
    served,
    start_run,
    wait_for,
)

BROWSE = str(WORKFLOWS / "browse.py")
SEEDING = ("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name = 'folioperf-seed' "
           "AND query ILIKE 'COPY%%'")


def interrupted(proc: subprocess.Popen, sig: int = signal.SIGINT) -> str:
    """Send `sig` to `folioperf run` and return all it printed."""
    proc.send_signal(sig)
    try:
        output, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    return output


def copying(dsn: str) -> bool:
    """Whether seeding (or a reset) is COPYing records into this database now (not another test's)."""
    with psycopg.connect(with_database(dsn, "postgres"), autocommit=True) as conn:
        return conn.execute(SEEDING, (database_name(dsn),)).fetchone()[0] > 0


def locust_children(proc: subprocess.Popen) -> list[psutil.Process]:
    try:
        return [c for c in psutil.Process(proc.pid).children() if "folioperf.locust_main" in c.cmdline()]
    except psutil.NoSuchProcess:
        return []


@pytest.mark.long_run(40)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_while_seeding_nothing_is_written_and_nothing_runs(sig, folio_postgres, tmp_path):
    dsn = with_database(folio_postgres, f"folioperf_test_signal_{uuid.uuid4().hex[:8]}")
    ensure_database(dsn)
    proc = start_run(["check-in-check-out", "--users", "2", "--duration", "30s", "--db", dsn, "--results", "out"],
                     tmp_path)
    wait_for(lambda: copying(dsn) or proc.poll() is not None, "seeding to begin", timeout=180)
    output = interrupted(proc, sig)
    assert proc.returncode == EXIT_INTERRUPTED, output
    assert "folioperf: seeding cico interrupted: rolled back, nothing was written" in output
    assert "Traceback" not in output and not locust_children(proc) and not results_in(tmp_path / "out")
    with psycopg.connect(dsn) as conn:  # the sandbox's schemas are there; not one seeded user
        assert conn.execute("SELECT count(*) FROM diku_mod_users.users").fetchone()[0] <= 1  # its admin


@SEEDS_FULL_CICO
@pytest.mark.long_run(60)
def test_while_resetting_the_dataset_is_left_as_it_was(run_dsn, tmp_path):
    for command in (("sandbox", "init"), ("seed", "cico")):  # seeded once for the group
        seeded = folioperf(*command, "--db", run_dsn, cwd=tmp_path, timeout=400)
        assert seeded.returncode == 0, seeded.stderr
    proc = start_run(["check-in-check-out", "--users", "2", "--duration", "30s", "--db", run_dsn, "--results", "out"],
                     tmp_path)
    wait_for(lambda: copying(run_dsn) or proc.poll() is not None, "the reset to begin", timeout=180)
    output = interrupted(proc)
    assert proc.returncode == EXIT_INTERRUPTED, output
    assert "folioperf: reset of cico interrupted: rolled back, nothing was changed" in output
    assert "Traceback" not in output and not results_in(tmp_path / "out")
    again = folioperf("reset", "cico", "--db", run_dsn, cwd=tmp_path, timeout=400)  # the dataset is whole
    assert again.returncode == 0, again.stderr


def test_while_locust_starts_nothing_runs_and_nothing_is_written(folio_sandbox, tmp_path):
    """A master waiting for its workers (none come): the test never started."""
    proc = start_run([BROWSE, "--users", "2", "--duration", "30s", "--master", "--expect-workers", "1",
                      "--master-port", str(free_port()), "--okapi-url", folio_sandbox.url, "--results", "out"], tmp_path)
    wait_for(lambda: locust_children(proc), "the Locust master")
    output = interrupted(proc)
    assert proc.returncode == EXIT_INTERRUPTED, output
    assert "interrupted before the test started: nothing ran, no results were written" in output
    assert "stopping: the results are being written" not in output and "Traceback" not in output
    assert not results_in(tmp_path / "out")


def test_a_signal_while_the_master_is_being_started_is_passed_to_it():
    """Ctrl-C in the moment between the Locust master's exec and folioperf holding its handle (a busy machine makes
    it long): the master gets it and says it ended before the test, rather than folioperf unwinding around it."""
    processes = Processes("key", [])
    previous = signal.signal(signal.SIGINT, processes.interrupt)
    try:
        processes.launching = True  # as inside start_master's Popen
        processes.interrupt()
        processes.start_master([sys.executable, "-c", "import time; time.sleep(60)"], "")
        assert processes.wait() == 128 + signal.SIGTERM
    finally:
        signal.signal(signal.SIGINT, previous)
        processes.kill()


def test_during_the_ramp_up_the_results_so_far_are_written_flagged_interrupted(folio_sandbox, tmp_path):
    proc = start_run([BROWSE, "--users", "4", "--spawn-rate", "0.2", "--duration", "60s",
                      "--okapi-url", folio_sandbox.url, "--results", "out"], tmp_path)
    base = served(folio_sandbox, "GET /groups")
    wait_for(lambda: served(folio_sandbox, "GET /groups") > base + 5, "the first user's load")
    output = interrupted(proc)
    assert proc.returncode == EXIT_INTERRUPTED, output
    assert "interrupted: stopping the test and writing its results" in output and "Traceback" not in output
    (path,) = results_in(tmp_path / "out")
    res = results.load(path)
    assert res.run.flags.interrupted and res.run.exit_code == EXIT_INTERRUPTED and res.run.users < 4
    assert not res.run.flags.ramp_incomplete  # the interruption says it, not a ramp that fell short
    assert output.rstrip().endswith("exit code 130")


@pytest.mark.long_run(25)
def test_during_the_final_reports_the_results_are_written_flagged_interrupted(folio_sandbox, tmp_path):
    """A worker freezes as the master collects the final reports (up to the stop timeout and 10 s): Ctrl-C then
    ends the wait, and the results are written with what came in."""
    fault = tmp_path / "fault"
    proc = start_run([BROWSE, "--users", "4", "--duration", "6s", "--workers", "2", "--okapi-url", folio_sandbox.url,
                      "--results", "out"], tmp_path, FOLIOPERF_TEST_AT_STOP=str(fault))
    victim = None
    try:
        workers = wait_for(lambda: (lambda w: w if len(w) == 2 else None)(
            [c for c in psutil.Process(proc.pid).children() if "--worker" in c.cmdline()]), "two workers")
        victim = workers[0]
        fault.write_text(f"{victim.pid} SIGSTOP")
        wait_for(lambda: victim.status() == psutil.STATUS_STOPPED, "the final reports", timeout=60)
        threading.Timer(3, lambda: victim.is_running() and victim.resume()).start()
        output = interrupted(proc)
    finally:
        proc.kill()
        if victim is not None and victim.is_running():
            victim.resume()
    assert proc.returncode == EXIT_INTERRUPTED, output
    assert "interrupted: stopping the test and writing its results" in output
    assert "Traceback" not in output and "unexpected state" not in output
    (path,) = results_in(tmp_path / "out")
    res = results.load(path)
    assert res.run.flags.interrupted and res.entry("Transaction", "Browse").count > 0
    assert json.loads((path / "run.json").read_text())["exit_code"] == EXIT_INTERRUPTED


def test_twice_stops_at_once_with_the_same_code(folio_sandbox, tmp_path):
    """The second Ctrl-C comes as the master lingers after its summary (it printed "exit code 130"): the run
    still ends with 130, not the 137 of the master it killed, and says where the results are."""
    proc = start_run([BROWSE, "--users", "2", "--duration", "60s", "--okapi-url", folio_sandbox.url,
                      "--results", "out"], tmp_path, FOLIOPERF_TEST_EXIT_YIELD="30")
    base = served(folio_sandbox, "GET /groups")
    wait_for(lambda: served(folio_sandbox, "GET /groups") > base + 5, "the load")
    proc.send_signal(signal.SIGINT)
    (path,) = wait_for(lambda: results_in(tmp_path / "out"), "the results")
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED, output
    assert output.splitlines()[-1] == ("folioperf: stopped at once (Ctrl-C twice): the results were written before, "
                                       f"to out/{path.name}")


def test_ctrl_c_typed_in_a_terminal_is_not_echoed_into_the_live_view(folio_sandbox, tmp_path):
    """Typed, Ctrl-C echoes `^C` at the cursor, the end of the live view's frame: the frame then sat a line lower
    than the view knew and its header was printed again. Its log line reads as folioperf's other lines."""
    command = folioperf_command("run", BROWSE, "--users", "1", "--duration", "60s", "--okapi-url", folio_sandbox.url,
                                "--results", str(tmp_path / "out"))
    pid, terminal = pty.fork()
    if pid == 0:  # the child: `folioperf run` in a terminal of its own
        os.chdir(tmp_path)
        os.execve(sys.executable, command, clean_env(FOLIOPERF_PASSWORD="admin"))
    output = bytearray()

    def read(until: bytes, timeout: float = 120) -> bool:
        """What the terminal shows, until `until` or the end; whether it came."""
        deadline = time.monotonic() + timeout
        while until not in output:
            assert time.monotonic() < deadline, output.decode(errors="replace")[-3000:]
            if not select.select([terminal], [], [], 0.2)[0]:
                continue
            try:
                chunk = os.read(terminal, 65536)
            except OSError:  # the child has ended
                return False
            if not chunk:
                return False
            output.extend(chunk)
        return True

    try:
        assert read(b"Browse "), "the live view with a transaction"
        os.write(terminal, b"x\x03")  # a stray key, then Ctrl-C, typed
        read(b"\0")  # to the end
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(terminal)
    text = output.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == EXIT_INTERRUPTED, text[-3000:]
    assert "^C" not in text, text[-3000:]
    assert "folioperf: warning: interrupted: stopping the test and writing its results" in text, text[-3000:]
    assert results_in(tmp_path / "out")
