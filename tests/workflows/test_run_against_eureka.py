"""`folioperf run check-in-check-out` against a Eureka FOLIO (the sandbox with `--eureka`): logins through
mod-login-keycloak, every call through Kong and the sidecars, and run.json's module versions read from the
tenant's entitlements, since Eureka has no Okapi module list."""

from __future__ import annotations

import subprocess
import sys

import pytest

from folioperf.report.runs import load_runs
from folioperf.seed import dataset, seeding
from tests.locust_process import clean_env

TENANT = "eurekarun"


@pytest.fixture(scope="module")
def eureka(folio_sandbox_factory):
    """A Eureka sandbox with a tenant of its own, the cico dataset (5 %) seeded into it."""
    sandbox = folio_sandbox_factory(eureka=True, tenants=(TENANT,))
    seeding.seed(sandbox.dsn, TENANT, dataset.load("cico"), 0.05, False, None)
    return sandbox


@pytest.mark.long_run(10)
def test_check_in_check_out_runs_against_eureka(eureka, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "folioperf", "run", "check-in-check-out", "--users", "4", "--duration", "10s",
         "--think-time", "0.1", "--okapi-url", eureka.url, "--tenant", TENANT, "--db", eureka.dsn],
        cwd=tmp_path, env=clean_env(FOLIOPERF_PASSWORD="admin"), capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run,) = load_runs([tmp_path / "results"])
    for name in ("Check-out", "Check-in"):
        done = run.entry("Transaction", name)
        assert done.count > 0 and done.failures == 0, name
    assert run.entry("POST", "POST /authn/login-with-expiry").failures == 0
    modules = run.run.target.modules  # from GET /entitlements/{tenant}/applications
    assert "mod-login-keycloak-3.0.4" in modules and "mod-circulation-24.4.20" in modules
    assert not any(m.startswith(("okapi-", "mod-authtoken-", "mod-login-7")) for m in modules)
    counters = eureka.counters()
    assert counters["events"]["auth.login_failed"] == 0 and counters["events"]["auth.token_rejected"] == 0
