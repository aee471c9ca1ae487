"""A target that dies mid-run: the run names it in one line, is flagged `target_down` with its own exit code, and
its users back off instead of flooding a FOLIO that may be restarting."""

from __future__ import annotations

import signal
import threading
import time

import psutil
import pytest
import requests

from folioperf.outcome import EXIT_TARGET_DOWN
from tests.locust_process import WORKFLOWS, only_results, served, start_run, wait_for

BROWSE = str(WORKFLOWS / "browse.py")
USERS = 4


class Output:
    """A running command's output, read line by line as it comes."""

    def __init__(self, proc) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=lambda: self.lines.extend(iter(proc.stdout.readline, "")), daemon=True)
        self._thread.start()

    def text(self) -> str:
        self._thread.join(timeout=60)
        return "".join(self.lines)


def calls_without_answer(res) -> int:
    """API calls that got no answer at all (refused, reset, timed out), from failures.csv."""
    return sum(f.occurrences for f in res.failures
               if f.type not in ("Transaction", "Scheduled") and f.error.startswith("no response"))


@pytest.mark.long_run(35)
def test_a_target_that_stops_answering_is_named_flagged_and_not_flooded(folio_sandbox_factory, tmp_path):
    target = folio_sandbox_factory()
    proc = start_run([BROWSE, "--users", str(USERS), "--spawn-rate", str(USERS), "--duration", "25s",
                      "--okapi-url", target.url, "--results", "out"], tmp_path)
    output = Output(proc)
    try:
        base = served(target, "GET /groups")
        wait_for(lambda: served(target, "GET /groups") > base + 20, "the load to start")
        target.process.send_signal(signal.SIGKILL)
        killed = time.time()
        proc.wait(timeout=120)
    finally:
        proc.kill()
    text = output.text()
    assert proc.returncode == EXIT_TARGET_DOWN, text
    res = only_results(tmp_path / "out")
    assert res.run.flags.target_down and res.run.exit_code == EXIT_TARGET_DOWN
    lines = [line for line in text.splitlines() if f"target down: {target.url}" in line]
    assert lines and "did not answer for" in lines[-1], text
    assert res.run.target_silent_s >= 10
    down_s = res.run.end.timestamp() - killed
    rate = calls_without_answer(res) / USERS / down_s
    assert 0 < rate < 1.5, (calls_without_answer(res), down_s)  # back-off: 1 s, 2 s, 4 s ... between a user's tries
    assert not res.run.flags.cpu_saturated


@pytest.mark.long_run(30)
def test_the_built_in_sandbox_exiting_ends_the_run_and_says_so(run_dsn, tmp_path):
    proc = start_run([BROWSE, "--users", str(USERS), "--spawn-rate", str(USERS), "--duration", "60s", "--db", run_dsn,
                      "--results", "out"], tmp_path)
    output = Output(proc)
    try:
        sandbox = wait_for(lambda: next((c for c in psutil.Process(proc.pid).children()
                                         if "sandbox" in c.cmdline()), None), "the sandbox")
        url = wait_for(lambda: next((line.split("sandbox ready at ", 1)[1].split()[0] for line in output.lines
                                     if "sandbox ready at " in line), None), "the sandbox's address", timeout=120)
        answered = lambda: requests.get(url + "/_/sandbox/counters", timeout=10).json()["requests"]  # noqa: E731
        wait_for(lambda: answered().get("GET /groups", {}).get("total", 0) > 20, "the load to start", timeout=120)
        sandbox.kill()
        killed = time.monotonic()
        proc.wait(timeout=120)
        ended = time.monotonic()
    finally:
        proc.kill()
    text = output.text()
    assert proc.returncode == EXIT_TARGET_DOWN, text
    assert "target down: the built-in sandbox at http://127.0.0.1:" in text and f"(pid {sandbox.pid}) exited" in text
    assert ended - killed < 20, "the run ends when its sandbox is gone, not at its duration"
    res = only_results(tmp_path / "out")
    assert res.run.flags.target_down and res.run.exit_code == EXIT_TARGET_DOWN
    assert "Traceback" not in text
