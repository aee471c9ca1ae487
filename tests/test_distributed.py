"""Distributed runs that always end with their results: the README's and the issues' commands verbatim, with
the real workflows at their PTF think times; a master killed, a worker lost or frozen while the final
reports travel; workers that cannot prove the master's key get neither the password nor the test data."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

import msgpack
import psutil
import pytest
import zmq

from folioperf import results
from tests.locust_process import (
    FIXTURES,
    REPO,
    SEEDS_FULL_CICO,
    SEEDS_FULL_HOLDS,
    WORKFLOWS,
    clean_env,
    folioperf_command,
    free_port,
    results_in,
    served,
    start_run,
    wait_for,
)

BROWSE = str(WORKFLOWS / "browse.py")
SPAWN_MESSAGES = FIXTURES / "workers" / "spawn_messages.py"
NO_TASKS = "had no tasks left after filtering"


def locust_processes(proc: subprocess.Popen) -> tuple[psutil.Process | None, list[psutil.Process]]:
    """The Locust master and workers `folioperf run` started."""
    try:
        children = psutil.Process(proc.pid).children()
    except psutil.NoSuchProcess:
        return None, []
    masters = [c for c in children if "--master" in c.cmdline()]
    workers = [c for c in children if "--worker" in c.cmdline()]
    return (masters[0] if masters else None), workers


# -- the headline commands, verbatim ---------------------------------------------------------------------------

@pytest.mark.long_run(35)
@pytest.mark.parametrize("command", [
    pytest.param("folioperf run holds --users 8 --workers 2 --duration 20s --spawn-rate 8", marks=SEEDS_FULL_HOLDS),
    pytest.param("folioperf run check-in-check-out --users 4 --workers 2 --duration 20s", marks=SEEDS_FULL_CICO),
])
def test_headline_distributed_runs_end_with_complete_results(command, run_dsn, tmp_path):
    args = command.split()[2:]
    proc = subprocess.run(folioperf_command("run", *args), cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=clean_env(FOLIOPERF_PASSWORD="admin", FOLIOPERF_DB=run_dsn))
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert NO_TASKS not in output and "Traceback" not in output
    (path,) = results_in(tmp_path / "results")
    res = results.load(path)
    assert {p.name for p in path.iterdir()} >= {"run.json", "stats.json", "timeseries.csv", "failures.csv"}
    users = int(args[args.index("--users") + 1])
    assert res.run.users == res.run.users_target == users and res.run.workers == 2
    assert sum(res.run.users_per_worker.values()) == users and res.run.full_load_at is not None
    assert not res.run.flags.raised()
    # what folioperf counted is what the sandbox answered, API by API
    served_counts = res.run.target.served
    assert served_counts, "the sandbox's own counts are in run.json"
    for entry in res.apis():
        assert entry.failures == 0, entry
        assert served_counts.get(entry.name, 0) == entry.count, (entry.name, served_counts.get(entry.name), entry.count)
    assert sum(served_counts.values()) == sum(e.count for e in res.apis())
    # a check-out or check-in with the PTF's pauses takes 15-25 s: a 20 s run may end before any is complete
    assert all(e.failures == 0 for e in res.transactions())
    assert f"{users} users · " in proc.stdout and " API calls · " in proc.stdout
    # it ends at its duration: users in one of the PTF's think times are ended there, not waited for
    assert res.run.elapsed_s < res.run.duration_s + 8, res.run.elapsed_s


# -- a master that dies, a worker lost or frozen at the end ----------------------------------------------------------

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_master_killed_mid_run_never_ends_in_exit_0_without_results(sig, folio_sandbox, tmp_path):
    proc = start_run([BROWSE, "--users", "4", "--duration", "2m", "--workers", "2", "--okapi-url", folio_sandbox.url,
                  "--results", "out"], tmp_path)
    try:
        master = wait_for(lambda: locust_processes(proc)[0], "the Locust master")
        base = served(folio_sandbox, "GET /groups")
        wait_for(lambda: served(folio_sandbox, "GET /groups") > base + 20, "the load to start")
        master.send_signal(sig)
        output, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    written = results_in(tmp_path / "out")
    assert proc.returncode != 0, output
    if sig == signal.SIGTERM:  # stopped as by Ctrl-C: the test ends and its record is written
        (path,) = written
        res = results.load(path)
        assert res.run.flags.interrupted and res.entry("Transaction", "Browse").count > 0
    else:
        assert proc.returncode == 128 + signal.SIGKILL
        assert "the Locust master was killed (SIGKILL) before it wrote the results" in output
        assert "nothing of this test was kept" in output and not written
    _, workers = locust_processes(proc)
    assert not workers, "no worker outlives its run"


@pytest.mark.long_run(20)
@pytest.mark.parametrize("fate", ["killed", "frozen 8 s"])
def test_a_worker_lost_or_frozen_during_the_final_reports(fate, folio_sandbox, tmp_path):
    fault = tmp_path / "fault"  # the victim signals itself as it is asked to stop, before its final report
    proc = start_run([BROWSE, "--users", "4", "--duration", "8s", "--workers", "2", "--okapi-url", folio_sandbox.url,
                      "--results", "out"], tmp_path, FOLIOPERF_TEST_AT_STOP=str(fault))
    try:
        _, workers = wait_for(lambda: (lambda m, w: (m, w) if len(w) == 2 else None)(*locust_processes(proc)),
                              "two workers")
        victim = workers[0]
        fault.write_text(f"{victim.pid} {'SIGKILL' if fate == 'killed' else 'SIGSTOP'}")
        if fate != "killed":
            wait_for(lambda: victim.status() == psutil.STATUS_STOPPED, "the worker to freeze at the test's end")
            threading.Timer(8, lambda: victim.is_running() and victim.resume()).start()
        output, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    (path,) = results_in(tmp_path / "out")  # whatever happened, the record is there
    res = results.load(path)
    assert res.entry("Transaction", "Browse").count > 0
    # dead, or silent past Locust's heartbeat (3 s), as its final report was due: its missing share is said,
    # never passed off as the whole test
    assert proc.returncode == 5 and res.run.flags.worker_lost, output
    assert "a worker was lost during the test" in output
    # the frozen worker wakes to folioperf's stop, Locust's quit and a SIGTERM at once: it stops its users once
    assert "Traceback" not in output and "unexpected state" not in output, output


# -- trust -----------------------------------------------------------------------------------------------------

class RogueWorker:
    """Speaks Locust's worker protocol without folioperf's key: says it is ready, answers heartbeats, and
    keeps every byte the master sends it."""

    def __init__(self, port: int) -> None:
        self.received: list[bytes] = []
        self.connected = time.monotonic()
        self._context = zmq.Context()
        self._socket = self._context.socket(zmq.DEALER)
        self._id = f"{socket.gethostname()}_{uuid.uuid4().hex}"
        self._socket.setsockopt(zmq.IDENTITY, self._id.encode())
        self._socket.connect(f"tcp://127.0.0.1:{port}")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _send(self, kind: str, data: object) -> None:
        self._socket.send(msgpack.packb((kind, data, self._id), use_bin_type=True))

    def _run(self) -> None:
        from importlib.metadata import version

        self._send("client_ready", version("locust"))
        last = 0.0
        while not self._stop.is_set():
            if self._socket.poll(100):
                self.received.append(self._socket.recv())
            if time.monotonic() - last > 1:
                self._send("heartbeat", {"state": "ready", "current_cpu_usage": 1.0, "current_memory_usage": 1})
                last = time.monotonic()

    def kinds(self) -> list[str]:
        """The types of the messages it received (Locust's and folioperf's), in order."""
        return [msgpack.unpackb(raw, raw=False, strict_map_key=False)[0] for raw in self.received]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._socket.close(linger=0)
        self._context.term()


@pytest.mark.long_run(12)
def test_workers_without_the_key_get_neither_the_password_nor_the_test_data(folio_sandbox, tmp_path):
    """A folioperf worker with another key is refused at once; a rogue that speaks Locust's protocol but not
    folioperf's is refused when the test starts, and has heard nothing that matters by then."""
    port = free_port()
    master = start_run([BROWSE, "--users", "2", "--duration", "6s", "--master", "--expect-workers", "1",
                    "--master-port", str(port), "--okapi-url", folio_sandbox.url, "--results", "out"], tmp_path,
                   FOLIOPERF_WORKER_KEY="the master's key")
    wait_for(lambda: _listening(port), "the master to listen")
    stranger = subprocess.run(folioperf_command("worker", "--master-port", str(port)), cwd=tmp_path, capture_output=True,
                              text=True, timeout=60, env=clean_env(FOLIOPERF_WORKER_KEY="another key"))
    worker = subprocess.Popen(folioperf_command("worker", "--master-port", str(port)), cwd=tmp_path,
                              env=clean_env(FOLIOPERF_WORKER_KEY="the master's key"), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    rogue = None
    try:
        wait_for(lambda: _connects_to(worker.pid, port), "the worker to connect")
        rogue = RogueWorker(port)
        output, _ = master.communicate(timeout=120)
        worker.communicate(timeout=60)
    finally:
        if rogue is not None:
            rogue.close()
        for p in (master, worker):
            p.kill()
    assert stranger.returncode == 2 and "the master refused this worker" in stranger.stdout + stranger.stderr
    assert master.returncode == 0, output
    assert output.count("refused worker") == 2, output
    res = results.load(results_in(tmp_path / "out")[0])
    assert res.run.workers == 1 and res.entry("Transaction", "Browse").count > 0
    seen = b"".join(rogue.received)
    assert rogue.received, "the rogue did hear from the master"
    assert folio_sandbox.password.encode() not in seen
    assert b"folioperf_setup" not in seen
    for group_id in _group_ids(folio_sandbox):  # the browse workflow's test data
        assert group_id.encode() not in seen


def _connects_to(pid: int, port: int) -> bool:
    return any(c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
               for c in psutil.Process(pid).net_connections("tcp"))


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _group_ids(sandbox) -> list[str]:
    import requests

    token = sandbox.login()
    groups = requests.get(sandbox.url + "/groups", headers=sandbox.headers(token), timeout=30).json()["usergroups"]
    return [g["id"] for g in groups]


def test_a_ramp_up_does_not_rebuild_locusts_parser_on_the_worker():
    """A worker checks each option of each spawn message against Locust's defaults (runners.WorkerRunner), and
    Locust rebuilds its whole parser for every check: 0.1 s of CPU a message, the users frozen meanwhile and
    the responses then arriving timed late; a ramp-up sends one a second. With folioperf loaded, never."""
    proc = subprocess.run([sys.executable, str(SPAWN_MESSAGES)], capture_output=True, text=True, timeout=60,
                          cwd=REPO, env=clean_env(PYTHONPATH=str(REPO)))
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["users"] == 4 and seen["option_checks"] > 80  # 2 messages of Locust's and folioperf's options
    assert seen["parser_builds"] <= 2  # the worker's own options at the first message, and the defaults once


# -- workers that come late, or have no key ------------------------------------------------------------------------

HEARS_ONLY = ["ack", "folioperf_refused", "quit"]  # Locust's acknowledgement of its hello, then the refusal


def _start_master(sandbox, tmp_path, port: int, duration: str = "20s") -> subprocess.Popen:
    return start_run([BROWSE, "--users", "4", "--spawn-rate", "4", "--duration", duration, "--master",
                      "--expect-workers", "1", "--master-port", str(port), "--okapi-url", sandbox.url,
                      "--results", "out"], tmp_path)


def _start_worker(tmp_path, port: int) -> subprocess.Popen:
    return subprocess.Popen(folioperf_command("worker", "--master-port", str(port)), cwd=tmp_path, env=clean_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _transactions_started(sandbox, base: int, at_least: int = 1) -> bool:
    return served(sandbox, "GET /groups") >= base + at_least


def _assert_all_users_ran_on(res, worker_count: int, output: str) -> None:
    assert res.run.users == res.run.users_target == 4, output
    assert res.run.workers == worker_count and sum(res.run.users_per_worker.values()) == 4, res.run.users_per_worker
    assert res.run.full_load_at is not None and not res.run.flags.raised() and res.run.users_missing_s == 0
    assert res.entry("Transaction", "Browse").count > 0 and res.entry("Transaction", "Browse").failures == 0


@pytest.mark.long_run(20)
def test_a_keyless_client_first_counts_for_nothing_and_hears_only_its_refusal(folio_sandbox, tmp_path):
    """Plain Locust without folioperf's key connects first: the test waits for the real worker, which gets every
    user; the client never counted toward --expect-workers, and heard nothing but its refusal."""
    port = free_port()
    master = _start_master(folio_sandbox, tmp_path, port, duration="8s")
    rogue = worker = None
    try:
        wait_for(lambda: _listening(port), "the master to listen")
        rogue = RogueWorker(port)
        wait_for(lambda: "folioperf_refused" in rogue.kinds(), "the refusal", timeout=30)
        time.sleep(1)  # the real worker comes after the refusal, as in the report: 6 s after the client
        worker = _start_worker(tmp_path, port)
        output, _ = master.communicate(timeout=120)
        worker.communicate(timeout=60)
    finally:
        for p in (master, worker):
            if p is not None:
                p.kill()
        if rogue is not None:
            rogue.close()
    assert master.returncode == 0, output
    assert rogue.kinds() == HEARS_ONLY, rogue.kinds()
    assert output.count("refused worker") == 1
    _assert_all_users_ran_on(results.load(results_in(tmp_path / "out")[0]), 1, output)
    assert worker.returncode == 0


@pytest.mark.long_run(30)
def test_a_worker_joining_a_running_test_takes_no_users_from_it(folio_sandbox, tmp_path):
    """A second worker proves the key 7 s into a test: Locust would move users to it, which have neither the
    password nor test data; it waits for the next test instead, and every user runs on the first worker for
    the whole test."""
    port = free_port()
    master = _start_master(folio_sandbox, tmp_path, port)
    first = _start_worker(tmp_path, port)
    second = None
    try:
        base = served(folio_sandbox, "GET /groups")
        wait_for(lambda: _transactions_started(folio_sandbox, base), "the test to start")
        time.sleep(7)  # the test runs; the second worker arrives 7 s into it
        second = _start_worker(tmp_path, port)
        output, _ = master.communicate(timeout=120)
        first.communicate(timeout=60)
        later, _ = second.communicate(timeout=60)
    finally:
        for p in (master, first, second):
            if p is not None:
                p.kill()
    assert master.returncode == 0, output
    assert "joined during the test: it runs no users in this one" in output
    assert "no FOLIO password" not in output + later and "Traceback" not in output + later
    _assert_all_users_ran_on(results.load(results_in(tmp_path / "out")[0]), 1, output)
    assert second.returncode == 0, later  # told to quit with the others at the end


@pytest.mark.long_run(25)
def test_a_keyless_client_joining_mid_test_hears_only_its_refusal(folio_sandbox, tmp_path):
    port = free_port()
    master = _start_master(folio_sandbox, tmp_path, port, duration="12s")
    worker = _start_worker(tmp_path, port)
    rogue = None
    try:
        base = served(folio_sandbox, "GET /groups")
        wait_for(lambda: _transactions_started(folio_sandbox, base), "the test to start")
        rogue = RogueWorker(port)
        output, _ = master.communicate(timeout=120)
        worker.communicate(timeout=60)
    finally:
        for p in (master, worker):
            p.kill()
        if rogue is not None:
            rogue.close()
    assert master.returncode == 0, output
    assert rogue.kinds() == HEARS_ONLY, rogue.kinds()  # no spawn: neither users nor the master's options
    seen = b"".join(rogue.received)
    assert folio_sandbox.url.encode() not in seen and b"spawn" not in seen
    _assert_all_users_ran_on(results.load(results_in(tmp_path / "out")[0]), 1, output)
