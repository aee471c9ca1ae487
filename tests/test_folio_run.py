"""What a run records, as plain `locust -f` and `folioperf run` both see it: a task's exceptions counted and
logged once per distinct error, a refused refresh as the expected outcome it is, the users a run really
reached."""

from __future__ import annotations

import subprocess

import pytest

from tests.locust_process import LOCUSTFILE, WORKFLOWS, clean_env, folioperf, locust_command, only_results


def test_a_task_that_raises_fails_the_run_with_one_line_per_distinct_error(folio_sandbox, tmp_path):
    proc = folioperf("run", str(WORKFLOWS / "raising.py"), "--users", "2", "--duration", "4s", "--okapi-url",
                     folio_sandbox.url, "--results", "out", cwd=tmp_path, timeout=120,
                     FOLIOPERF_PASSWORD=folio_sandbox.password)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "Traceback" not in output
    logged = [line for line in output.splitlines() if "error in raising look_up" in line]
    assert len(logged) == 2, logged  # the KeyError and the ValueError, each once
    assert any("KeyError: 'barcode' (raising.py:" in line for line in logged)
    assert any("ValueError: no patron found (raising.py:" in line for line in logged)
    res = only_results(tmp_path / "out")
    (errors,) = res.errors()
    assert errors.name == "raising look_up" and errors.count == errors.failures > 10
    looked_up = res.entry("Transaction", "Look up")
    assert abs(looked_up.failures - looked_up.count / 2) <= 1  # every other iteration, per user
    assert res.entry("GET", "GET /groups").failures == 0  # the calls did not fail; the workflow did
    by_kind = {f.error.split(" (")[0]: f.occurrences for f in res.failures if f.type == "Error"}
    assert set(by_kind) == {"KeyError: 'barcode'", "ValueError: no patron found"}
    assert sum(by_kind.values()) == errors.count
    assert "Failures" in proc.stdout and "× Error raising look_up: KeyError: 'barcode'" in proc.stdout


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
