"""Fixtures of the seeding tests: a sandbox tenant of their own, the CLI, scratch databases."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from typing import Iterator

import psycopg
import pytest
import requests

from folioperf import cli
from folioperf.pytest_plugin import drop_test_database
from folioperf.seed import dataset

TENANT = "seedtest"
SCALES = {"renewals": 0.1, "cico": 0.01, "holds": 0.01, "rih": 0.005}  # small, yet every pool non-empty


@dataclass
class Target:
    url: str
    dsn: str
    tenant: str
    token: str

    def headers(self) -> dict[str, str]:
        return {"X-Okapi-Tenant": self.tenant, "X-Okapi-Token": self.token, "Content-Type": "application/json"}

    def get(self, path: str, **params) -> dict:
        r = requests.get(self.url + path, params=params, headers=self.headers(), timeout=30)
        assert r.status_code == 200, f"GET {path}: {r.status_code} {r.text[:300]}"
        return r.json()

    def post(self, path: str, body: dict) -> requests.Response:
        return requests.post(self.url + path, json=body, headers=self.headers(), timeout=30)

    def sql(self, query: str, *params) -> list[tuple]:
        with psycopg.connect(self.dsn) as conn:
            return conn.execute(query, params).fetchall()


@pytest.fixture(scope="session")
def target(folio_sandbox_factory) -> Target:
    """A sandbox serving the tenant `seedtest`, which only these tests seed into."""
    sb = folio_sandbox_factory(tenants=(TENANT,))
    return Target(sb.url, sb.dsn, TENANT, sb.login(TENANT))


def run(*args: str) -> tuple[int, str, str]:
    """`folioperf ARGS` in this process: (exit code, stdout, stderr)."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    return code, out.getvalue(), err.getvalue()


def run_process(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`folioperf ARGS` as a user runs it: a separate process."""
    return subprocess.run([sys.executable, "-m", "folioperf", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


@pytest.fixture(scope="session")
def seeded(target: Target):
    """seeded(name) → the dataset, seeded into the tenant at its test scale (once per session)."""

    def ensure(name: str) -> dataset.Dataset:
        code, out, err = run("seed", name, "--db", target.dsn, "--tenant", target.tenant, "--scale", str(SCALES[name]))
        assert code == 0, err
        return dataset.load(name)

    return ensure


@pytest.fixture()
def scratch_db(folio_postgres) -> Iterator:
    """scratch_db() → the DSN of a new database holding a sandbox-initialised tenant `diku` (no server); dropped
    after the test."""
    from folioperf import db
    from folioperf.sandbox import reference

    created: list[str] = []

    def make() -> str:
        dsn = db.with_database(folio_postgres, f"folioperf_test_seed_{uuid.uuid4().hex[:10]}")
        db.ensure_database(dsn)
        created.append(dsn)
        reference.init_database(dsn, ["diku"], "diku_admin", "admin")
        return dsn

    yield make
    for dsn in created:
        drop_test_database(dsn)
