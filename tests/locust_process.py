"""Real `locust` runs for tests: a subprocess in its own directory, its stats (--json-file) and failures
(--csv) read back. The pytest process never imports Locust (it would gevent-patch pytest itself)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from folioperf import results
from folioperf.launch import free_port  # noqa: F401  (tests take it from here)
from folioperf.seed.vocabulary import CACHE_DIR_ENV

REPO = Path(__file__).resolve().parents[1]
LOCUSTFILE = REPO / "folioperf" / "locustfile.py"
FIXTURES = REPO / "tests" / "fixtures"
WORKFLOWS = FIXTURES / "workflows"


TEST_WORKER_KEY = "the worker key of this test session"

# The runs that seed a built-in dataset at full scale into their xdist worker's run database (conftest's
# run_dsn): one group per dataset, so its runs share a worker and the later ones reset what the first seeded
# instead of seeding it again (cico: 177,001 rows, about 16 CPU-s, reset about 4; holds: 82,251 rows)
SEEDS_FULL_CICO = pytest.mark.xdist_group("seeds-full-cico")
SEEDS_FULL_HOLDS = pytest.mark.xdist_group("seeds-full-holds")


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without the caller's FOLIOPERF_*/LOCUST_* settings, plus `extra`; masters and workers a
    test starts apart share a worker key, as an operator would give them one. folioperf's cache stays the test
    run's own (tests/conftest.py)."""
    env = {k: v for k, v in os.environ.items()
           if k == CACHE_DIR_ENV or not k.startswith(("FOLIOPERF_", "LOCUST_"))}
    env["FOLIOPERF_WORKER_KEY"] = TEST_WORKER_KEY
    env.update(extra)
    return env


def locust_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "locust", *args]


def folioperf_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "folioperf", *args]


def folioperf(*args: str, cwd: Path | str | None = None, timeout: float = 400, first_in_line: bool = False,
              **env: str) -> subprocess.CompletedProcess:
    """A folioperf command run to its end in `cwd`, as a user types it: in the environment without the caller's
    settings (clean_env), the sandbox's admin password given, plus `env`.
    `first_in_line`: its processes get the CPU before the suite's other tests, where this user may raise a
    priority, as a load generator on a machine of its own would (for a figure that waiting for a CPU spoils)."""
    return subprocess.run(folioperf_command(*args), cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=clean_env(**{"FOLIOPERF_PASSWORD": "admin", **env}),
                          preexec_fn=raise_priority if first_in_line else None)


def raise_priority() -> None:
    """A child's preexec_fn: the CPU before the suite's other tests (see folioperf's `first_in_line`)."""
    try:
        os.nice(-10)
    except PermissionError:
        pass  # not allowed here: the command runs at the suite's priority


def start_run(args: list[str], cwd: Path, password: str = "admin", **env: str) -> subprocess.Popen:
    """`folioperf run ...` started in its own session, as a terminal runs it (signals, Ctrl-C, reach it alone);
    its output merged on stdout."""
    return subprocess.Popen(folioperf_command("run", *args), cwd=cwd, env=clean_env(FOLIOPERF_PASSWORD=password, **env),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def wait_for(condition, what: str, timeout: float = 90.0):
    """Polls `condition` until it returns something true, which is returned; fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def answered(counters: dict, name: str) -> int:
    """The requests of `name` (`GET /groups`) in a snapshot of the sandbox's counters."""
    return counters["requests"].get(name, {}).get("total", 0)


def served(sandbox, name: str) -> int:
    """The requests of `name` the sandbox has answered so far."""
    return answered(sandbox.counters(), name)


def results_in(root: Path) -> list[Path]:
    """The results directories a run wrote under `root`."""
    return sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.exists() else []


def only_results(root: Path) -> results.Results:
    """The one results directory a run wrote under `root`."""
    found = results_in(root)
    assert len(found) == 1, f"expected one results directory in {root}, found {found}"
    return results.load(found[0])


@dataclass
class LocustRun:
    returncode: int
    stdout: str
    stderr: str
    out: Path

    @property
    def output(self) -> str:
        log = self.out / "locust.log"
        return self.stdout + self.stderr + (log.read_text() if log.exists() else "")

    def stats(self) -> dict[tuple[str, str], dict]:
        """(type, name) -> Locust's final stats entry (num_requests, num_failures, total_response_time...)."""
        return {(e["method"], e["name"]): e for e in json.loads((self.out / "stats.json").read_text())}

    def count(self, type_: str, name: str) -> int:
        entry = self.stats().get((type_, name))
        return entry["num_requests"] if entry else 0

    def failures(self) -> list[dict[str, str]]:
        with open(self.out / "run_failures.csv", newline="") as f:
            return list(csv.DictReader(f))


def locust_args(out: Path) -> list[str]:
    """Outputs every run writes: CSV, final stats as JSON, the HTML report."""
    return ["--headless", "--only-summary", "--csv", str(out / "run"), "--json-file", str(out / "stats"),
            "--html", str(out / "report.html")]


def run_locust(args: list[str], out: Path, env: dict[str, str], timeout: float = 90) -> LocustRun:
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(locust_command(*locust_args(out), *args), cwd=out, env=env, capture_output=True,
                          text=True, timeout=timeout)
    return LocustRun(proc.returncode, proc.stdout, proc.stderr, out)
