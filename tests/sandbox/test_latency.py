"""Latency profiles (`folioperf sandbox start --latency-profile`): the file format and its errors, the
shipped Lotus profile, and the delays a running sandbox adds."""

from __future__ import annotations

import math
import statistics
import subprocess
import sys
import threading
import time

import pytest
import requests

from folioperf.errors import FolioperfError
from folioperf.sandbox import latency
from folioperf.sandbox.app import Settings, build_router

ROUTES = {r.name for r in build_router(Settings(dsn="")).routes}


@pytest.mark.parametrize("text, message", [
    ('[endpoints]\n"GET /nope" = { p50 = 1, p95 = 2 }', 'endpoints."GET /nope": no such sandbox endpoint'),
    ('[endpoints]\n"/users" = { fixed = 1 }', 'endpoints."/users": no such sandbox endpoint (expected "METHOD /path/template")'),
    ('[endpoints]\n"GET /users" = { p50 = 10 }', 'endpoints."GET /users".p95: missing'),
    ('[endpoints]\n"GET /users" = { p50 = 10, p95 = 5 }', 'endpoints."GET /users".p95: must be >= p50 (5 < 10)'),
    ('[endpoints]\n"GET /users" = { fixed = -3 }', 'endpoints."GET /users".fixed: must be a number of milliseconds >= 0, not -3'),
    ('[endpoints]\n"GET /users" = { fixed = "10ms" }', "must be a number of milliseconds >= 0, not '10ms'"),
    ('[endpoints]\n"GET /users" = { mean = 10 }', 'endpoints."GET /users".mean: unknown setting'),
    ('[default]\nfixed = 1\np50 = 2\np95 = 3', "default: give either fixed or p50 and p95, not both"),
    ("delays = 3", "delays: unknown key"),
    ("[endpoints", "not valid TOML"),
])
def test_profile_errors_name_the_file_key_and_reason(text, message):
    with pytest.raises(FolioperfError) as info:
        latency.parse(text, "site.toml", "site", ROUTES)
    assert str(info.value).startswith("site.toml: ") and message in str(info.value)
    assert info.value.exit_code == 2 and "\n" not in str(info.value)


def test_lotus_profile_is_shaped_on_the_lotus_report():
    profile = latency.load("lotus", ROUTES)
    p75 = {name: profile.delay_for(name).percentile(75) * 1000 for name in profile.endpoints}
    assert p75["POST /circulation/check-out-by-barcode"] == pytest.approx(350, rel=0.03)
    assert p75["POST /circulation/check-in-by-barcode"] == pytest.approx(300, rel=0.03)
    assert p75["GET /circulation/loans"] == pytest.approx(200, rel=0.03)
    assert p75["GET /inventory/items"] == pytest.approx(75, rel=0.03)
    assert profile.delay_for("GET /users").percentile(95) * 1000 == pytest.approx(20)  # the default: small
    assert "lotus" in latency.builtin_names()


def test_draws_follow_the_distribution():
    delay = latency.parse("[default]\np50 = 200\np95 = 500", "t.toml", "t").default
    sampler = latency.Sampler([delay])
    draws = sorted(sampler.draw(0) for _ in range(200))
    assert statistics.median(draws) == pytest.approx(0.2, rel=0.03)
    # nearest rank (the 190th of 200): within 4.2 % whatever the sequence's random start, where the 191st
    # drifted past 5 % for 0.8 % of the starts
    assert draws[math.ceil(0.95 * len(draws)) - 1] == pytest.approx(0.5, rel=0.05)


def test_cli_refuses_a_bad_profile_with_one_line(tmp_path):
    bad = tmp_path / "site.toml"
    bad.write_text('[endpoints]\n"GET /users" = { p50 = 10, p95 = 5 }\n')
    for value, expected in ((str(bad), f'folioperf: error: {bad}: endpoints."GET /users".p95: must be >= p50 (5 < 10)'),
                            ("kiwi", "folioperf: error: unknown latency profile 'kiwi' (built-in: lotus; or give a .toml file)"),
                            (str(tmp_path / "none.toml"), f"folioperf: error: cannot read latency profile {tmp_path / 'none.toml'}")):
        r = subprocess.run([sys.executable, "-m", "folioperf", "sandbox", "start", "--port", "0", "--latency-profile", value,
                            "--db", "postgresql://nobody@127.0.0.1:1/none"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2
        assert r.stderr.strip().startswith(expected) and len(r.stderr.strip().splitlines()) == 1


def _times(url: str, path: str, headers: dict, n: int = 12) -> list[float]:
    """Each response's time in seconds, one after the other."""
    times: list[float] = []
    with requests.Session() as s:
        for _ in range(n):
            started = time.perf_counter()
            assert s.get(url + path, headers=headers, timeout=30).status_code == 200
            times.append(time.perf_counter() - started)
    return times


def test_profile_delays_the_endpoint_it_names_and_no_other(folio_sandbox_factory, tmp_path):
    """A fixed delay is a floor under every response of its endpoint (the sandbox waits at least that long);
    an endpoint the profile does not name answers without it."""
    profile = tmp_path / "groups.toml"
    profile.write_text('[endpoints]\n"GET /groups" = { fixed = 150 }\n')
    slow = folio_sandbox_factory(latency_profile=str(profile))
    headers = slow.headers(slow.login())
    # gevent's timers count from the loop's cached clock: a wait may end up to a few ms early
    assert min(_times(slow.url, "/groups", headers)) >= 0.145
    assert statistics.median(_times(slow.url, "/users?limit=1", headers)) < 0.145


def test_delays_hold_no_connection_and_block_nothing(folio_sandbox_factory, tmp_path):
    profile = tmp_path / "slow.toml"
    profile.write_text('[endpoints]\n"GET /groups" = { fixed = 400 }\n')
    slow = folio_sandbox_factory(latency_profile=str(profile), pool_size=2)
    headers = slow.headers(slow.login())
    done: list[int] = []

    def call() -> None:
        done.append(requests.get(slow.url + "/groups", headers=headers, timeout=30).status_code)

    threads = [threading.Thread(target=call) for _ in range(20)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    assert done == [200] * 20
    # 20 delays of 0.4 s: in series 8 s, two at a time (holding the pool's 2 connections) 4 s
    assert elapsed < 2.0
