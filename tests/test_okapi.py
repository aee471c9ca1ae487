"""folioperf.okapi against the sandbox: login modes, token refresh, 401 recovery, call outcomes; and two real
Locust runs (a 2 s token lifetime under 20 users, an access-token revocation mid-run)."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import threading
import time
import uuid
from collections import defaultdict

import jwt
import pytest
import requests

from folioperf.errors import FolioperfError
from folioperf.okapi import CallFailed, Credentials, LoginFailed, Logins, Okapi
from folioperf.timers import Timers
from tests.locust_process import LOCUSTFILE, WORKFLOWS, clean_env, free_port, locust_command, run_locust

MISSING_USER = "00000000-0000-4000-8000-000000000000"
JWT = re.compile(r"eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+")
TTL_SECRET = f"Ttl-{uuid.uuid4().hex}"  # the admin password of the short-token tenant: greppable in outputs


def okapi_for(sb, auth: str = "expiry", password: str | None = None, tenant: str | None = None, **kwargs) -> Okapi:
    creds = Credentials(tenant or sb.tenant, sb.username, password or sb.password)
    return Okapi(requests.Session(), creds, url=sb.url, auth=auth, **kwargs)


def claims(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


@pytest.fixture(scope="module")
def ttl_sandbox(folio_sandbox_factory):
    """Access tokens live 2 s; its own tenant and admin password."""
    return folio_sandbox_factory(tenants=("ttlrun",), token_ttl=2, admin_password=TTL_SECRET)


@pytest.fixture(scope="module")
def no_expiry_sandbox(folio_sandbox_factory):
    return folio_sandbox_factory(tenants=("noexpiry",), expiry_login=False)


# -- login modes ------------------------------------------------------------------------------------------

def test_expiry_login_takes_the_cookie_token_and_sends_it_as_a_header(folio_sandbox):
    okapi = okapi_for(folio_sandbox)
    r = okapi.get("/groups", params={"limit": 2})
    assert r.status_code == 200 and len(r.json()["usergroups"]) == 2
    assert okapi.login.mode == "expiry" and okapi.login.logins == 1
    token, refresh_token = okapi.login.tokens()
    assert claims(token)["type"] == "access" and claims(refresh_token)["type"] == "refresh"
    sent = r.request.headers
    assert sent["X-Okapi-Token"] == token and sent["X-Okapi-Tenant"] == folio_sandbox.tenant
    assert "Cookie" not in sent and len(okapi._session.cookies) == 0  # FOLIO's Secure cookies are not kept
    # no request id of its own, as FOLIO's UI sends none: Okapi gives the request one, not one appended to ours
    assert "X-Okapi-Request-Id" not in sent and re.fullmatch(r"\d{6}/groups", r.headers["X-Okapi-Request-Id"])


def test_legacy_login_takes_the_header_token(folio_sandbox):
    okapi = okapi_for(folio_sandbox, auth="legacy")
    okapi.authenticate()
    assert okapi.login.mode == "legacy"
    (token,) = okapi.login.tokens()
    assert claims(token)["type"] == "legacy-access"
    assert okapi.get("/groups").status_code == 200


def test_legacy_login_on_eureka_takes_the_body_token(folio_sandbox_factory):
    sb = folio_sandbox_factory(eureka=True)
    okapi = okapi_for(sb, auth="legacy")
    assert okapi.get("/groups").status_code == 200
    token, refresh_token = okapi.login.tokens()  # Eureka's body carries both
    assert claims(token)["typ"] == "Bearer" and claims(refresh_token)["typ"] == "Refresh"  # Keycloak's tokens


def test_auto_falls_back_to_legacy_once_per_process(no_expiry_sandbox):
    probes = lambda: no_expiry_sandbox.counters()["requests"].get("unmatched", {}).get("4xx", 0)  # noqa: E731
    before = probes()
    logins = Logins()  # what the users of one Locust process share
    first = okapi_for(no_expiry_sandbox, auth="auto", logins=logins)
    assert first.get("/groups").status_code == 200
    assert first.login.mode == "legacy"
    second = okapi_for(no_expiry_sandbox, auth="auto", logins=logins)  # another virtual user: no second probe
    assert second.get("/groups").status_code == 200
    assert probes() - before == 1


def test_expiry_mode_where_there_is_no_login_with_expiry(no_expiry_sandbox):
    with pytest.raises(LoginFailed) as failed:
        okapi_for(no_expiry_sandbox).authenticate()
    message = str(failed.value)
    assert "HTTP 404" in message and "use --auth legacy or auto" in message


def test_legacy_mode_where_legacy_tokens_are_off(folio_sandbox_factory):
    sb = folio_sandbox_factory(tenants=("nolegacy",), legacy_login=False)
    with pytest.raises(LoginFailed, match="legacy tokens are disabled for the tenant: use --auth expiry"):
        okapi_for(sb, auth="legacy").authenticate()


def test_wrong_password_is_one_clear_error_without_the_password(folio_sandbox):
    password = f"not-it-{uuid.uuid4().hex}"
    okapi = okapi_for(folio_sandbox, password=password)
    with pytest.raises(LoginFailed) as failed:
        okapi.get("/groups")
    message = str(failed.value)
    assert message == (f"login of FOLIO user 'diku_admin' to tenant 'diku' at {folio_sandbox.url} failed: "
                       "HTTP 422 Wrong username or wrong password or account blocked")
    for shown in (message, repr(okapi), repr(okapi.login), repr(okapi.credentials)):
        assert password not in shown
    assert repr(okapi.credentials) == "Credentials(tenant='diku', username='diku_admin', password='***')"


def test_unknown_tenant_is_one_clear_error(folio_sandbox):
    with pytest.raises(LoginFailed, match="to tenant 'nosuchtenant' .* failed: HTTP 400 No such Tenant nosuchtenant$"):
        okapi_for(folio_sandbox, tenant="nosuchtenant").authenticate()


def test_password_comes_from_the_environment_only(monkeypatch):
    monkeypatch.setenv("FOLIOPERF_PASSWORD", "from-env")
    assert Credentials.from_environment("diku", "someone").password == "from-env"
    monkeypatch.delenv("FOLIOPERF_PASSWORD")
    with pytest.raises(FolioperfError, match="set FOLIOPERF_PASSWORD"):
        Credentials.from_environment("diku", "someone", prompt=False)


# -- calls ------------------------------------------------------------------------------------------------

def test_call_outcomes(folio_sandbox):
    okapi = okapi_for(folio_sandbox, auth="legacy")
    found = okapi.get("/users", params={"query": 'username=="diku_admin"', "limit": 5}).json()
    assert [u["username"] for u in found["users"]] == ["diku_admin"]  # CQL with quotes and spaces arrives intact
    assert okapi.get("/users/{id}", id=found["users"][0]["id"]).json()["username"] == "diku_admin"
    with pytest.raises(CallFailed) as failed:
        okapi.get("/users/{id}", id=MISSING_USER)
    assert (str(failed.value), failed.value.status) == ("GET /users/{id}: HTTP 404 Not found", 404)
    assert okapi.get("/users/{id}", id=MISSING_USER, expect=(200, 404)).status_code == 404
    assert okapi.get("/users/{id}", id=MISSING_USER, expect=lambda r: r.text == "Not found").status_code == 404
    with pytest.raises(CallFailed, match=r"HTTP 200 .*\(expected 404\)"):
        okapi.get("/groups", expect=(404,))
    with pytest.raises(TypeError, match="missing"):
        okapi.get("/users/{id}")


def test_transaction_sums_its_calls_and_fails_with_them(folio_sandbox):
    okapi = okapi_for(folio_sandbox, auth="legacy")
    okapi.authenticate()
    with okapi.transaction("Look up") as t:
        okapi.get("/groups")
        okapi.get("/users", params={"limit": 1})
    assert t.calls == 2 and not t.failed and t.response_time > 0
    with pytest.raises(CallFailed):
        with okapi.transaction("Broken") as broken:
            okapi.get("/groups")
            okapi.get("/users/{id}", id=MISSING_USER)
    assert broken.calls == 2 and broken.error == "GET /users/{id}: HTTP 404 Not found"


# -- token lifetime -----------------------------------------------------------------------------------------

def test_shared_login_refreshes_in_time_and_never_reuses_a_refresh_token(ttl_sandbox):
    events = lambda: ttl_sandbox.counters()["events"]  # noqa: E731
    before = events()
    logins = Logins()  # what a Locust process's users share
    login = logins.login(ttl_sandbox.url, Credentials("ttlrun", ttl_sandbox.username, TTL_SECRET), shared=True)
    errors: list[BaseException] = []
    deadline = time.monotonic() + 30

    def user() -> None:  # a virtual user: its own session, the shared login
        okapi = Okapi(requests.Session(), login.credentials, url=ttl_sandbox.url, shared_login=True, logins=logins)
        assert okapi.login is login
        try:
            while login.refreshes < 5 and time.monotonic() < deadline:
                okapi.get("/groups", params={"limit": 1})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=user) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    after = events()
    assert errors == [] and login.refreshes >= 5
    assert after["auth.refresh"] - before["auth.refresh"] == login.refreshes
    assert after["auth.login"] - before["auth.login"] == 1
    for event in ("auth.refresh_reuse", "auth.refresh_failed", "auth.token_rejected"):
        assert after[event] == before[event], event


def test_a_paced_call_takes_its_token_after_the_wait(ttl_sandbox):
    """The throughput timer's wait comes before the token is chosen: a call paced past the token's life renews it
    first. (Taken before the wait, a master-plan poll paced one a minute sent its 10-minute token just expired.)"""
    events = lambda: ttl_sandbox.counters()["events"]  # noqa: E731
    before = events()
    okapi = okapi_for(ttl_sandbox, password=TTL_SECRET, tenant="ttlrun", timers=Timers(time.sleep, per_minute=20))
    for _ in range(2):  # 3 s apart; tokens live 2 s
        assert okapi.get("/groups", params={"limit": 1}).status_code == 200
    after = events()
    assert after["auth.token_rejected"] == before["auth.token_rejected"]
    assert (okapi.login.logins, okapi.login.refreshes) == (1, 1)


def test_a_rejected_token_costs_one_login_and_one_retry(folio_sandbox_factory):
    sb = folio_sandbox_factory(tenants=("revokeokapi",))
    okapi = okapi_for(sb, auth="legacy")
    okapi.get("/groups")
    user_id = claims(okapi.login.tokens()[0])["user_id"]
    rejected = sb.counters()["events"]["auth.token_rejected"]
    requests.post(sb.url + "/_/sandbox/revoke-access-tokens", json={"tenant": sb.tenant, "userId": user_id}).raise_for_status()
    assert okapi.get("/groups").status_code == 200
    assert okapi.login.logins == 2
    assert sb.counters()["events"]["auth.token_rejected"] == rejected + 1


# -- real Locust runs ----------------------------------------------------------------------------------------

@pytest.mark.long_run
def test_twenty_users_with_two_second_tokens(ttl_sandbox, tmp_path):
    """20 users in two worker processes, 20 s, tokens living 2 s, one shared login per process: no failures,
    no refresh token redeemed twice, refreshes all along; transactions are the sum of their calls; no
    password or token in any output."""
    # The refresh race needs users calling while one refreshes, not volume: at the test workflow's own pauses
    # times 3 (about 7,400 calls, where times 0.5 made 34,000 for the same checks), a login without its lock
    # still fails here (49 logins instead of 2).
    (tmp_path / "run.conf").write_text("login = shared\nthink-time = 3\nbrowse-extra = service-points\n")
    events_file = tmp_path / "events.jsonl"
    before = ttl_sandbox.counters()["events"]
    env = clean_env(FOLIOPERF_PASSWORD=TTL_SECRET, FOLIOPERF_TENANT="ttlrun", FOLIOPERF_TEST_EVENTS=str(events_file))
    master = str(free_port())  # of its own: other tests' Locust masters run at the same time
    run = run_locust(["-f", str(LOCUSTFILE), "--workflow", str(WORKFLOWS / "browse.py"), "--config", "run.conf",
                      "-u", "20", "-r", "20", "-t", "20", "--processes", "2", "--host", ttl_sandbox.url,
                      "--master-bind-port", master, "--master-port", master,
                      "--logfile", str(tmp_path / "locust.log")],
                     tmp_path, env)
    assert run.returncode == 0, run.output[-3000:]
    after = ttl_sandbox.counters()["events"]

    stats = run.stats()
    assert all(e["num_failures"] == 0 for e in stats.values()), stats
    assert stats[("Transaction", "Browse")]["num_requests"] > 100
    assert stats[("GET", "/service-points")]["num_requests"] > 0  # a workflow option set in the config file
    assert set(stats) == {("Transaction", "Browse"), ("GET", "/groups"), ("GET", "/groups/{id}"), ("GET", "/users"),
                          ("GET", "/users/{id}"), ("GET", "/service-points"), ("POST", "/authn/login-with-expiry"),
                          ("POST", "/authn/refresh")}
    assert stats[("GET", "/groups/{id}")]["num_requests"] > 0  # its pool came from the workflow's loader
    assert stats[("POST", "/authn/login-with-expiry")]["num_requests"] == 2  # one per worker process
    assert after["auth.refresh"] - before["auth.refresh"] >= 8
    assert after["auth.refresh_reuse"] == before["auth.refresh_reuse"]
    assert after["auth.token_rejected"] == before["auth.token_rejected"]

    by_user: dict[str, list[dict]] = defaultdict(list)
    for line in events_file.read_text().splitlines():
        event = json.loads(line)
        by_user[event["user"]].append(event)
    assert len(by_user) == 20
    transactions = 0
    for events in by_user.values():
        calls = 0.0
        for event in events:
            if event["type"] == "Transaction":
                assert event["rt"] == pytest.approx(calls, abs=1e-6)  # think time is not in it
                transactions, calls = transactions + 1, 0.0
            elif not event["name"].startswith("POST /authn/"):
                calls += event["rt"]
            if event["status"] == 404:
                assert event["expected"] and not event["failed"]
            assert event["imported"] == []  # neither --trace nor --prometheus: their libraries cost no start-up
    assert transactions > 100

    written = [run.stdout, run.stderr] + [p.read_text(errors="replace") for p in tmp_path.iterdir() if p.is_file()]
    for text in written:
        assert TTL_SECRET not in text
        assert not JWT.search(text)


@pytest.mark.long_run(12)
def test_revoked_tokens_mid_run_cost_one_login(folio_sandbox_factory, tmp_path):
    """Locust's HttpSession, one shared login: the sandbox revokes the user's access tokens mid-run; the 401s
    are recorded as failures, the run logs in once more and carries on, the transactions stay whole."""
    sb = folio_sandbox_factory(tenants=("revokerun",))
    admin = requests.post(sb.url + "/authn/login", json={"username": sb.username, "password": sb.password},
                          headers=sb.headers())
    user_id = claims(admin.headers["x-okapi-token"])["user_id"]
    logins_before = sb.counters()["events"]["auth.login"]
    polls = lambda: sb.counters()["requests"].get("GET /groups", {}).get("total", 0)  # noqa: E731
    env = clean_env(FOLIOPERF_PASSWORD=sb.password, FOLIOPERF_TENANT=sb.tenant, FOLIOPERF_USERNAME=sb.username)
    out = tmp_path
    proc = subprocess.Popen(
        locust_command("-f", str(WORKFLOWS / "httpsession_user.py"), "--headless", "--only-summary", "-u", "5", "-r", "5",
                       "-t", "10", "--host", sb.url, "--csv", str(out / "run"), "--json-file", str(out / "stats"),
                       "--exit-code-on-error", "0"),
        cwd=out, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120  # generous: under a loaded suite Locust may take long to start
        while polls() < 50 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert polls() >= 50, "the run did not get going"
        requests.post(sb.url + "/_/sandbox/revoke-access-tokens", json={"tenant": sb.tenant, "userId": user_id}).raise_for_status()
        revoked_at = polls()
        while polls() < revoked_at + 50 and time.monotonic() < deadline:
            time.sleep(0.1)
        output, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, output[-3000:]
    assert polls() >= revoked_at + 50
    events = sb.counters()["events"]
    assert events["auth.login"] - logins_before == 2  # the first login and the one after the revocation
    rejected = events["auth.token_rejected"]
    assert 1 <= rejected <= 5
    stats = {(e["method"], e["name"]): e for e in json.loads((out / "stats.json").read_text())}
    assert stats[("GET", "GET /groups")]["num_failures"] == rejected
    assert stats[("Transaction", "Poll")]["num_failures"] == 0
    with open(out / "run_failures.csv", newline="") as f:
        failures = list(csv.DictReader(f))
    assert [(f["Name"], f["Error"]) for f in failures] == [
        ("GET /groups", "HTTP 401 Invalid token (token rejected; logging in again)")]
    for text in [output] + [p.read_text() for p in out.iterdir() if p.is_file()]:
        assert not JWT.search(text)
