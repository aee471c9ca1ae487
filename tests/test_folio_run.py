"""What a run records, as plain `locust -f` and `folioperf run` both see it: a task's exceptions counted and
logged once per distinct error, a refused refresh as the expected outcome it is, the users a run really
reached."""

from __future__ import annotations

import subprocess

import pytest

from tests.locust_process import LOCUSTFILE, WORKFLOWS, clean_env, folioperf, locust_command, only_results


def test_a_workflow_that_raises_every_iteration_backs_off_stops_itself_and_reports_each_error_once(folio_sandbox,
                                                                                                  tmp_path):
    """Before, its users looped at once (47 GETs a second each here, 2 users for 20 s; 1,843/s on a faster machine)
    for the whole duration, and the KeyError was reported twice: an Errors row and a failed transaction."""
    users = 2
    proc = folioperf("run", str(WORKFLOWS / "raising.py"), "--users", str(users), "--duration", "60s", "--okapi-url",
                     folio_sandbox.url, "--results", "out", cwd=tmp_path, timeout=120,
                     FOLIOPERF_PASSWORD=folio_sandbox.password)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "Traceback" not in output
    logged = [line for line in output.splitlines() if "error in " in line]
    assert len(logged) == 2, logged  # the KeyError and the ValueError, each once
    assert any("error in transaction Look up: KeyError: 'barcode' (raising.py:" in line for line in logged)
    assert any("error in raising look_up: ValueError: no patron found (raising.py:" in line for line in logged)
    (stop,) = [line for line in output.splitlines() if "the workflow cannot run: every iteration raised" in line]
    assert "none completed (5); stopping the run. The last: " in stop
    res = only_results(tmp_path / "out")
    ran_s = (res.run.end - res.run.start).total_seconds()
    assert ran_s < 20  # it stopped itself instead of failing for 60 s
    groups = res.entry("GET", "GET /groups")
    assert groups.failures == 0 and groups.count <= users * (ran_s + 1)  # at most one a second per user
    # each error once: the KeyError as the failure of the transaction it escaped, the ValueError as an Error
    (errors,) = res.errors()
    assert errors.name == "raising look_up" and errors.count == errors.failures > 0
    looked_up = res.entry("Transaction", "Look up")
    assert looked_up.failures and looked_up.failures + errors.count == looked_up.count
    by_kind = {(f.type, f.error.split(" (")[0]): f.occurrences for f in res.failures if f.type != "GET"}
    assert by_kind == {("Error", "ValueError: no patron found"): errors.count,
                       ("Transaction", "KeyError: 'barcode'"): looked_up.failures}
    assert "× Error raising look_up: ValueError: no patron found" in proc.stdout


def test_an_undeclared_transaction_is_refused_at_its_first_use_naming_the_declared_ones(folio_sandbox, tmp_path):
    workflow = tmp_path / "typo.py"
    workflow.write_text((WORKFLOWS / "raising.py").read_text().replace('name="raising"', 'name="typo"').replace(
        'with self.transaction("Look up")', 'with self.transaction("Lookup")'))
    proc = folioperf("run", str(workflow), "--users", "1", "--duration", "60s", "--okapi-url", folio_sandbox.url,
                     "--results", "out", cwd=tmp_path, timeout=120, FOLIOPERF_PASSWORD=folio_sandbox.password)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    (logged,) = [line for line in output.splitlines() if "error in " in line]
    assert ("error in typo look_up: UndeclaredTransaction: transaction 'Lookup' is not declared by workflow typo "
            "(declared: 'Look up') (typo.py:") in logged
    res = only_results(tmp_path / "out")
    assert res.entry("GET", "GET /groups") is None  # refused before the block ran its call
    assert res.entry("Transaction", "Lookup") is None


@pytest.mark.long_run
def test_a_refused_refresh_is_the_expected_outcome_not_a_failure(folio_sandbox_factory, tmp_path):
    """Access tokens of 3 s, refresh tokens of 5 s, users that pause 4-8 s: their refresh tokens expire, the
    refresh is refused (422) and they log in again, as FOLIO means them to; the run is clean."""
    sb = folio_sandbox_factory(tenants=("shortrefresh",), token_ttl=3, refresh_ttl=5)
    out = tmp_path / "out"
    proc = subprocess.run(
        locust_command("-f", str(LOCUSTFILE), "--workflow", str(WORKFLOWS / "browse.py"), "--headless", "-u", "3",
                       "-r", "3", "-t", "20", "--host", sb.url, "--tenant", "shortrefresh", "--think-time", "80",
                       "--results-dir", str(out)),
        cwd=tmp_path, env=clean_env(FOLIOPERF_PASSWORD=sb.password), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    res = only_results(out)
    refresh = res.entry("POST", "POST /authn/refresh")
    assert refresh is not None and refresh.expected > 0 and refresh.failures == 0
    assert res.entry("POST", "POST /authn/login-with-expiry").count > 3  # the logins after the refusals


@pytest.mark.long_run(10)
def test_a_ramp_up_that_never_reached_full_load_is_recorded_as_it_ran(folio_sandbox, tmp_path):
    """Plain Locust: 4 users at 0.2/s in 8 s (at 0 s and 5 s; the third would start at 10 s): only 2 ever ran.
    The record says 2, of 4 asked for, and the run is flagged and fails (exit 7)."""
    out = tmp_path / "out"
    proc = subprocess.run(
        locust_command("-f", str(LOCUSTFILE), "--workflow", str(WORKFLOWS / "browse.py"), "--headless", "-u", "4",
                       "-r", "0.2", "-t", "8", "--host", folio_sandbox.url, "--results-dir", str(out)),
        cwd=tmp_path, env=clean_env(FOLIOPERF_PASSWORD=folio_sandbox.password), capture_output=True, text=True,
        timeout=120)
    assert proc.returncode == 7, (proc.stdout + proc.stderr)[-3000:]
    assert "ramp-up incomplete: 2 of 4 users were running at most" in proc.stderr
    res = only_results(out)
    assert (res.run.users, res.run.users_target) == (2, 4)
    assert res.run.flags.ramp_incomplete and res.run.full_load_at is None and res.run.exit_code == 7
    assert out.iterdir() and next(out.iterdir()).name.endswith("-browse-2u")
