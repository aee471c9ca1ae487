"""FOLIO login as a flow, the way httpx's `Auth.auth_flow` works: `Login.flow(call)` is a generator that
yields the requests to send (a login, a refresh, the call itself with its token, the call again after a
401) and receives their outcomes; the client that drives it sends them. Auth never calls the client.

Modes (docs/folio.md §2): `expiry` logs in with /authn/login-with-expiry and takes the access token from
the folioAccessToken cookie, refreshing it with the folioRefreshToken cookie before it expires; `legacy`
uses /authn/login and takes the token from the x-okapi-token header or, as Eureka answers, from the body;
`auto` tries expiry and falls back to legacy where login-with-expiry does not exist (404).

Refresh tokens are single-use: a login renews under its lock, drops the refresh token before sending it,
and whoever waited for the lock reuses the new token instead of renewing again. A refused refresh (422:
expired or revoked) is what FOLIO intends a client to answer with a new login, so it is an expected
outcome, not a failure. A call answered 401 is a failure; the login is replaced and the call sent once
more.

`Logins` holds what the logins of one process share: one login per URL, tenant and user for `--login
shared`, and what `auto` found out about each FOLIO. A Locust process's FolioRun owns one; a tool makes
its own.
"""

from __future__ import annotations

import base64
import getpass
import json as jsonlib
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from folioperf.config import PASSWORD_ENV
from folioperf.errors import CallFailed, FolioperfError, RunStopped

EXPIRY, LEGACY, AUTO = "expiry", "legacy", "auto"
AUTH_MODES = (EXPIRY, LEGACY, AUTO)
DEFAULT_REFRESH_MARGIN = 50.0  # PTF refreshes once fewer than 50 s remain (docs/folio.md §2.3)
ACCESS_COOKIE, REFRESH_COOKIE = "folioAccessToken", "folioRefreshToken"
TOKEN_HEADER = "X-Okapi-Token"

Expect = tuple[int, ...] | Callable[[Any], bool] | None  # the statuses a call wants, or a predicate on its response


class LoginFailed(RunStopped):
    """FOLIO refused the login itself (credentials, tenant, endpoint): no virtual user can go on."""


class Credentials:
    """Tenant, username and a password that never shows in repr(), logs or errors."""

    __slots__ = ("_password", "tenant", "username")

    def __init__(self, tenant: str, username: str, password: str) -> None:
        self.tenant, self.username, self._password = tenant, username, password

    @property
    def password(self) -> str:
        return self._password

    def __repr__(self) -> str:
        return f"Credentials(tenant={self.tenant!r}, username={self.username!r}, password='***')"

    @classmethod
    def from_environment(cls, tenant: str, username: str, prompt: bool | None = None) -> Credentials:
        """The password from FOLIOPERF_PASSWORD, else (on a terminal) a prompt; never from argv."""
        password = os.environ.get(PASSWORD_ENV)
        if not password:
            if prompt is None:
                prompt = sys.stdin is not None and sys.stdin.isatty()
            if not prompt:
                raise FolioperfError(f"no password for FOLIO user {username!r}: set {PASSWORD_ENV} "
                                     "(passwords are never read from the command line)")
            password = getpass.getpass(f"Password of FOLIO user {username} (tenant {tenant}): ")
            if not password:
                raise FolioperfError("no password given")
        return cls(tenant, username, password)


@dataclass(slots=True)
class Call:
    """One HTTP request as the flow and the client see it. `target` is the path and query under the FOLIO URL."""

    method: str
    target: str
    name: str
    headers: dict[str, str]
    body: bytes | None = None
    expect: Expect = None
    auth: bool = False  # a login or refresh: not part of any transaction
    retry_on_401: bool = False  # a 401 means the token was rejected: log in again and send once more


@dataclass(slots=True)
class Outcome:
    """How a call ended, judged against what it expected."""

    response: Any
    status: int
    ok: bool
    expected: bool = False  # ok, with a status >= 400 the caller said to expect
    message: str = ""  # why it failed (empty when ok)
    response_time: float = 0.0  # ms
    length: int = 0
    rejected: bool = False  # a 401 of a call that will be sent again with a new token


def claims(token: str) -> dict:
    """A JWT's claims, unverified (only to learn iat/exp); {} for anything else."""
    try:
        payload = token.split(".")[1]
        decoded = jsonlib.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return decoded if isinstance(decoded, dict) else {}
    except (IndexError, ValueError):
        return {}


def set_cookies(response: Any) -> dict[str, str]:
    """The cookies a response sets, by name (each Set-Cookie header on its own)."""
    raw = getattr(response, "raw", None)  # requests: the joined Response.headers would merge cookies
    headers = getattr(raw, "headers", None) if raw is not None else None
    if headers is None or not hasattr(headers, "getlist"):
        headers = getattr(response, "headers", None)
    if headers is None:
        return {}
    values = headers.getlist("Set-Cookie") if hasattr(headers, "getlist") else [headers.get("Set-Cookie")]
    cookies = {}
    for value in values:
        if value:
            name, _, rest = value.partition("=")
            cookies[name.strip()] = rest.split(";", 1)[0].strip()
    return cookies


def response_json(response: Any) -> dict:
    try:
        body = response.json()
    except (ValueError, TypeError, AttributeError):
        return {}
    return body if isinstance(body, dict) else {}


@dataclass
class Logins:
    """What the logins of one process share."""

    detected: dict[tuple[str, str], str] = field(default_factory=dict)  # (url, tenant) -> what `auto` found
    _shared: dict[tuple, Login] = field(default_factory=dict)
    _lock: Any = field(default_factory=threading.Lock)

    def login(self, url: str, credentials: Credentials, auth: str = EXPIRY,
              refresh_margin: float = DEFAULT_REFRESH_MARGIN, shared: bool = False) -> Login:
        """A login of its own, or (shared) the one login of this URL, tenant, user and mode in this process."""
        if not shared:
            return Login(url, credentials, auth, refresh_margin, self)
        key = (url.rstrip("/"), credentials.tenant, credentials.username, auth, refresh_margin)
        with self._lock:
            login = self._shared.get(key)
            if login is None:
                login = self._shared[key] = Login(url, credentials, auth, refresh_margin, self)
            return login


class Login:
    """One FOLIO login session: the access token, its refresh and re-login."""

    def __init__(self, url: str, credentials: Credentials, auth: str = EXPIRY,
                 refresh_margin: float = DEFAULT_REFRESH_MARGIN, logins: Logins | None = None) -> None:
        if auth not in AUTH_MODES:
            raise ValueError(f"auth must be one of {', '.join(AUTH_MODES)}, not {auth!r}")
        if refresh_margin <= 0:
            raise ValueError("refresh_margin must be positive")
        self.url = url.rstrip("/")
        self.credentials = credentials
        self.auth = auth
        self.refresh_margin = refresh_margin
        self._logins = logins or Logins()
        self._lock = threading.Lock()
        self._token: str | None = None
        self._refresh_token: str | None = None
        self._renew_at = math.inf  # time.monotonic() after which the token is renewed before use
        self.logins = 0
        self.refreshes = 0

    def __repr__(self) -> str:
        return (f"Login(url={self.url!r}, tenant={self.credentials.tenant!r}, user={self.credentials.username!r}, "
                f"mode={self.mode!r})")

    @property
    def mode(self) -> str | None:
        """`expiry` or `legacy`; None while `auto` has not found out yet."""
        if self.auth != AUTO:
            return self.auth
        return self._logins.detected.get((self.url, self.credentials.tenant))

    def tokens(self) -> tuple[str, ...]:
        """The secrets this login holds (to scrub them from anything reported)."""
        return tuple(t for t in (self._token, self._refresh_token) if t)

    # -- the flows ----------------------------------------------------------------------------------
    def flow(self, call: Call) -> Generator[Call, Outcome, Outcome]:
        """Send `call` with a valid token: renew it first when due, and once more after a 401."""
        token = self._token
        if token is None or time.monotonic() >= self._renew_at:
            token = yield from self._renewed(None)
        call.headers[TOKEN_HEADER] = token
        call.retry_on_401 = True
        outcome = yield call
        if outcome.rejected:
            call.headers[TOKEN_HEADER] = yield from self._renewed(token)
            call.retry_on_401 = False
            outcome = yield call
        return outcome

    def authenticate(self) -> Generator[Call, Outcome, None]:
        """Log in now (otherwise the first call does); raises LoginFailed when FOLIO refuses."""
        yield from self._renewed(None)

    def _renewed(self, rejected: str | None) -> Generator[Call, Outcome, str]:
        """A token to use: renewed when due (or, after a 401, when it is still the `rejected` one). The lock is
        held across the login calls, so the users sharing this login wait for its result."""
        with self._lock:
            token = self._token
            if rejected is not None:
                if token != rejected:
                    return token  # type: ignore[return-value]  # someone logged in again already
            elif token is not None and time.monotonic() < self._renew_at:
                return token
            if rejected is None and token is not None and self._refresh_token:
                if (yield from self._refresh()):
                    return self._token  # type: ignore[return-value]
            yield from self._login()
            return self._token  # type: ignore[return-value]

    def _login(self) -> Generator[Call, Outcome, None]:
        creds = self.credentials
        body = jsonlib.dumps({"username": creds.username, "password": creds.password}).encode()
        if self.mode in (None, EXPIRY):
            sent = time.monotonic()
            outcome = yield self._auth_call("/authn/login-with-expiry", body,
                                            (201, 404) if self.auth == AUTO else (201,))
            if outcome.status == 201:
                cookies = set_cookies(outcome.response)
                if not cookies.get(ACCESS_COOKIE):
                    raise LoginFailed(f"{self.url}: /authn/login-with-expiry answered 201 without a {ACCESS_COOKIE} cookie")
                self._accept(cookies[ACCESS_COOKIE], cookies.get(REFRESH_COOKIE), sent)
                self.logins += 1
                return
            if outcome.status == 404 and self.auth == AUTO:
                self._logins.detected[(self.url, creds.tenant)] = LEGACY
            else:
                self._refused(outcome, "/authn/login-with-expiry")
        sent = time.monotonic()
        outcome = yield self._auth_call("/authn/login", body, (201,))
        if outcome.status != 201:
            self._refused(outcome, "/authn/login")
        payload = response_json(outcome.response)
        headers = getattr(outcome.response, "headers", None)
        token = (headers.get("x-okapi-token") if headers is not None else None) or payload.get("okapiToken")
        if not token:
            raise LoginFailed(f"{self.url}: /authn/login answered 201 without a token (neither x-okapi-token nor okapiToken)")
        self._accept(token, payload.get("refreshToken"), sent)  # Eureka also hands out a refresh token
        self.logins += 1

    def _refresh(self) -> Generator[Call, Outcome, bool]:
        refresh_token, self._refresh_token = self._refresh_token, None  # single use, whatever happens next
        sent = time.monotonic()
        call = self._auth_call("/authn/refresh", None, (201, 422))  # 422: expired or revoked; log in again
        call.headers["Cookie"] = f"{REFRESH_COOKIE}={refresh_token}"
        outcome = yield call
        cookies = set_cookies(outcome.response) if outcome.status == 201 else {}
        if not cookies.get(ACCESS_COOKIE):
            return False
        self._accept(cookies[ACCESS_COOKIE], cookies.get(REFRESH_COOKIE), sent)
        self.refreshes += 1
        return True

    def _auth_call(self, path: str, body: bytes | None, expect: tuple[int, ...]) -> Call:
        headers = {"X-Okapi-Tenant": self.credentials.tenant, "Accept": "application/json, text/plain"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        return Call("POST", path, f"POST {path}", headers, body, expect, auth=True)

    def _accept(self, token: str, refresh_token: str | None, sent: float) -> None:
        self._token, self._refresh_token = token, refresh_token or None
        found = claims(token)
        exp, iat = found.get("exp"), found.get("iat")
        if not isinstance(exp, (int, float)):
            self._renew_at = math.inf  # legacy tokens do not expire
            return
        received = time.monotonic()
        by_clock = received + (exp - time.time())  # exact when the clocks agree
        if isinstance(iat, (int, float)) and exp > iat:
            lifetime = exp - iat
            # iat/exp are whole seconds: the token lives at least lifetime - 1 s from when we asked, and
            # at most lifetime from when it arrived; that bounds a client clock that is off.
            expires = min(max(by_clock, sent + lifetime - 1), received + lifetime)
        else:
            lifetime = max(by_clock - received, 0.0)
            expires = by_clock
        # PTF's 50 s margin, shrunk for short-lived tokens so a 2 s token is still renewed in time
        self._renew_at = expires - min(self.refresh_margin, lifetime / 2)

    def _refused(self, outcome: Outcome, path: str) -> None:
        creds = self.credentials
        if outcome.status == 0 or outcome.status >= 500:
            raise CallFailed(f"POST {path}", outcome.message, outcome.status)  # transient: the next call tries again
        hint = ""
        if outcome.status == 404:
            hint = (" (this FOLIO has no login-with-expiry, as before Poppy: use --auth legacy or auto)"
                    if path.endswith("expiry") else " (legacy tokens are disabled for the tenant: use --auth expiry)")
        reason = outcome.message.split(" (expected ", 1)[0]
        raise LoginFailed(f"login of FOLIO user {creds.username!r} to tenant {creds.tenant!r} at {self.url} "
                          f"failed: {reason}{hint}")
