"""Fixtures of the workflow tests: the four PTF datasets seeded small into a tenant of their own on the
session's sandbox database (the running `folio_sandbox` serves it), their workflows' pools as `folioperf pools`
writes them, and plain Locust runs of the built-in workflows with the call log of tests/fixtures/locust_call_log.py."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from folioperf import db
from folioperf.sandbox import reference
from folioperf.seed import dataset, seeding
from tests.locust_process import FIXTURES, REPO, LocustRun, clean_env, folioperf_command, locust_args, locust_command, raise_priority

TENANT = "wftest"
# Small, yet enough for ~10 s runs: two borrowers per renewal group (a user per borrower), holds instances
# that three variants at once do not use up.
SCALES = {"cico": 0.01, "renewals": 0.2, "holds": 0.15, "rih": 0.005}
BUILT_IN = ("check-in-check-out", "renew", "holds", "rih")  # the workflows of the datasets above
WORKFLOW_FILES = REPO / "workflows"
CALL_LOG = FIXTURES / "locust_call_log.py"
READY_SECONDS = 10.0
# The -t of a run that quits once it has the transactions a test needs (STOP_AFTER of CALL_LOG): only a ceiling,
# and its process gets two minutes more to start and end (many start at once)
CEILING_SECONDS = 60
FINISH_SECONDS = CEILING_SECONDS + 120


@dataclass
class Target:
    """The seeded tenant: where it is served, who logs in, and each workflow's pools."""

    url: str
    tenant: str
    username: str
    password: str
    dsn: str
    documents: dict[str, dict]  # workflow -> its pools file, as `folioperf pools` wrote it

    @property
    def pools(self) -> dict[str, dict[str, list[dict]]]:
        return {workflow: document["pools"] for workflow, document in self.documents.items()}

    def pools_file(self, directory: Path, workflow: str, **replace: list[dict]) -> Path:
        """The pools file of `workflow`, some pools replaced."""
        document = self.documents[workflow]
        path = directory / f"{workflow}-pools.json"
        path.write_text(json.dumps({**document, "pools": {**document["pools"], **replace}}))
        return path

    def part(self, workflow: str, k: int, parts: int = 2) -> dict[str, list[dict]]:
        """Every k-th of `parts` entries of each pool of `workflow`: test modules that take different parts
        never use the same item, instance or borrower."""
        return {name: entries[k::parts] for name, entries in self.pools[workflow].items()}

    def env(self, **extra: str) -> dict[str, str]:
        return clean_env(FOLIOPERF_PASSWORD=self.password, FOLIOPERF_TENANT=self.tenant, **extra)


def _serves(url: str, tenant: str, username: str, password: str) -> bool:
    r = requests.post(url + "/authn/login", json={"username": username, "password": password},
                      headers={"X-Okapi-Tenant": tenant}, timeout=10)
    return r.status_code == 201


@pytest.fixture(scope="session")
def seeded(folio_sandbox, tmp_path_factory) -> Target:
    """Tenant `wftest` on the session's sandbox database with cico, renewals, holds and rih seeded."""
    sb = folio_sandbox
    with db.connect(sb.dsn) as conn:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(7468930)")  # as `folioperf sandbox init` does
            reference.init_tenant(conn, TENANT, sb.username, sb.password)
    for name, scale in SCALES.items():
        seeding.seed(sb.dsn, TENANT, dataset.load(name), scale, False, None)
    documents = _pools(sb.dsn, tmp_path_factory.mktemp("pools"))
    deadline = time.monotonic() + READY_SECONDS  # the sandbox learns of a new tenant on its next request for it
    while not _serves(sb.url, TENANT, sb.username, sb.password):
        assert time.monotonic() < deadline, f"the sandbox does not serve tenant {TENANT}"
        time.sleep(0.05)
    return Target(sb.url, TENANT, sb.username, sb.password, sb.dsn, documents)


def _pools(dsn: str, directory: Path) -> dict[str, dict]:
    """Each built-in workflow's pools, as `folioperf pools --workflow W` writes them (at once: each is a process)."""
    running = {name: subprocess.Popen(folioperf_command("pools", "--workflow", name, "--db", dsn, "--tenant", TENANT,
                                                        "--limit", "1000", "-o", str(directory / f"{name}.json")),
                                      env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for name in BUILT_IN}
    for proc in running.values():
        _, stderr = proc.communicate(timeout=180)
        assert proc.returncode == 0, stderr
    return {name: json.loads((directory / f"{name}.json").read_text()) for name in BUILT_IN}


def locustfiles(workflow_file: str) -> str:
    """Locust's -f: workflows/<workflow_file> and the call log."""
    return f"{WORKFLOW_FILES / workflow_file},{CALL_LOG}"


def workflow_args(target: Target, out: Path, workflow_file: str, *args: str, host: str | None = None) -> list[str]:
    """`locust` arguments running workflows/<workflow_file> (and the call log) against the seeded tenant."""
    return [*locust_args(out), "-f", locustfiles(workflow_file), "--host", host or target.url, *args]


def start_locust(args: list[str], out: Path, env: dict[str, str], first_in_line: bool = False) -> subprocess.Popen:
    """`first_in_line`: as tests.locust_process.folioperf's, for a figure that waiting for a CPU spoils."""
    out.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(locust_command(*args), cwd=out, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=raise_priority if first_in_line else None)


def finish(proc: subprocess.Popen, out: Path, timeout: float = 90) -> LocustRun:
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
    return LocustRun(proc.returncode, stdout, stderr, out)


def calls_of(run: LocustRun) -> list[dict]:
    return json.loads((run.out / "calls.json").read_text())


def transactions_ran(run: LocustRun) -> list[tuple[str, list[dict]]]:
    """A run that ended cleanly, with no failure: its whole transactions, each with its calls, as recorded."""
    from tests.workflows import derived

    assert run.returncode == 0, run.output[-3000:]
    assert "Traceback" not in run.output
    assert run.failures() == [], run.failures()
    recorded = derived.transactions(calls_of(run))
    assert recorded, "no transaction recorded"
    return recorded
