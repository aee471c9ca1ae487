"""FOLIO API calls the way FOLIO wants them: logged in, named like the PTF reports, honestly recorded.

    okapi = Okapi(self.client, credentials)               # in a Locust user (HttpSession or FastHttpSession)
    okapi = Okapi(requests.Session(), credentials, url=u)  # in a tool
    r = okapi.get("/users/{id}", id=user_id)             # recorded as "GET /users/{id}"
    okapi.post("/circulation/check-out-by-barcode", json=body, expect=(201, 422))
    with okapi.transaction("Check-out"): ...             # recorded as request type "Transaction"

Authentication (folio-api.md §2): `expiry` logs in with /authn/login-with-expiry and takes the access
token from the folioAccessToken cookie, refreshing it before it expires; `legacy` uses /authn/login and
takes the token from the x-okapi-token header or, as Eureka answers, from the body; `auto` tries expiry and
falls back to legacy where login-with-expiry does not exist. FOLIO's cookies are `Secure`, so cookie jars
would not send them over http:// and a stale jar cookie next to the header makes Okapi answer 400: the
session's cookie jar is switched off and every call carries X-Okapi-Token. Refresh tokens are single-use;
one `Login` refreshes at most once at a time and everyone waiting reuses the result.

Over a Locust session every call is a Locust request: type = the method, name = `METHOD /path/template`. A
refusal the caller said to expect (`expect=(201, 422)`) is a success carrying `context["expected"] = True`
(counted as an expected failure in folioperf's results); anything else unexpected is a failure and raises
`CallFailed`. Over a plain requests session
nothing is recorded; unexpected outcomes raise `CallFailed` just the same.
"""

from __future__ import annotations

import base64
import getpass
import json as jsonlib
import math
import os
import random
import string
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from http.cookiejar import DefaultCookiePolicy
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import quote, urlencode

from folioperf.config import PASSWORD_ENV
from folioperf.errors import FolioperfError

EXPIRY, LEGACY, AUTO = "expiry", "legacy", "auto"
AUTH_MODES = (EXPIRY, LEGACY, AUTO)
DEFAULT_REFRESH_MARGIN = 50.0  # PTF refreshes once fewer than 50 s remain (folio-api.md §2.3)

TRANSACTION = "Transaction"  # Locust request_type of business transactions
EXPECTED = "expected"  # request context flag: a refusal (status >= 400) the workflow expected, e.g. a 422 it provoked

ACCESS_COOKIE, REFRESH_COOKIE = "folioAccessToken", "folioRefreshToken"
PLAIN_SESSION_TIMEOUT = 60.0

Expect = tuple[int, ...] | Callable[[Any], bool] | None  # the statuses a call wants, or a predicate on its response


class CallFailed(FolioperfError):
    """An API call ended with an outcome the caller did not expect (already recorded as a failure)."""

    def __init__(self, name: str, message: str, status: int = 0) -> None:
        super().__init__(f"{name}: {message}")
        self.name, self.status = name, status


class LoginFailed(FolioperfError):
    """FOLIO refused the login itself (credentials, tenant, endpoint): no virtual user can go on."""

    stops_run = True


class TransactionFailed(Exception):
    """Reported to Locust as the failure of a business transaction."""


class Credentials:
    """Tenant, username and a password that never shows in repr(), logs or errors."""

    __slots__ = ("tenant", "username", "_password")

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


class Transaction:
    """A business transaction: the summed time of the API calls made inside it (think time excluded)."""

    __slots__ = ("name", "response_time", "response_length", "calls", "error", "start_time")

    def __init__(self, name: str) -> None:
        self.name = name
        self.response_time = 0.0  # ms
        self.response_length = 0
        self.calls = 0
        self.error: str | None = None  # the first failure: "<call name>: <message>" or the exception
        self.start_time = time.time()

    @property
    def failed(self) -> bool:
        return self.error is not None


@dataclass
class _Call:
    response: Any
    status: int
    ok: bool
    expected: bool
    message: str
    response_time: float  # ms
    length: int
    rejected: bool = False  # a 401 on an authenticated call: log in again and retry once


class _NoCookies(DefaultCookiePolicy):
    """Stores and sends no cookies: folioperf carries FOLIO's tokens in X-Okapi-Token itself."""

    def set_ok(self, cookie, request) -> bool:  # type: ignore[override]
        return False

    def return_ok(self, cookie, request) -> bool:  # type: ignore[override]
        return False


def _switch_off_cookies(session: Any) -> None:
    jar = getattr(session, "cookiejar", None)  # FastHttpSession
    if jar is None:
        jar = session.cookies  # requests.Session and Locust's HttpSession
    jar.set_policy(_NoCookies())
    jar.clear()


@lru_cache(maxsize=1024)
def _template_fields(path: str) -> tuple[str, ...]:
    return tuple(f for _, f, _, _ in string.Formatter().parse(path) if f)


def _expand(path: str, params: Mapping[str, Any]) -> str:
    fields = _template_fields(path)
    if set(fields) != set(params):
        missing, extra = set(fields) - set(params), set(params) - set(fields)
        raise TypeError(f"{path}: path parameters {sorted(missing)} missing, {sorted(extra)} not in the template"
                        if missing else f"{path}: unknown arguments {sorted(extra)}")
    if not fields:
        return path
    return path.format_map({k: quote(str(v), safe="") for k, v in params.items()})


def _claims(token: str) -> dict:
    """A JWT's claims, unverified (only to learn iat/exp); {} for anything else."""
    try:
        payload = token.split(".")[1]
        claims = jsonlib.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return claims if isinstance(claims, dict) else {}
    except (IndexError, ValueError):
        return {}


def _set_cookies(response: Any) -> dict[str, str]:
    raw = getattr(response, "raw", None)  # requests: the joined Response.headers would merge cookies
    headers = getattr(raw, "headers", None) if raw is not None else None
    if headers is None or not hasattr(headers, "getlist"):
        headers = response.headers
    if headers is None:
        return {}
    values = headers.getlist("Set-Cookie") if hasattr(headers, "getlist") else [headers.get("Set-Cookie")]
    cookies = {}
    for value in values:
        if value:
            name, _, rest = value.partition("=")
            cookies[name.strip()] = rest.split(";", 1)[0].strip()
    return cookies


def _header(response: Any, name: str) -> str | None:
    headers = getattr(response, "headers", None)
    return headers.get(name) if headers is not None else None


def _json(response: Any) -> dict:
    try:
        body = response.json()
    except (ValueError, TypeError, AttributeError):
        return {}
    return body if isinstance(body, dict) else {}


def _summary(response: Any) -> str:
    """FOLIO's first error message, or the start of the text body."""
    text = (getattr(response, "text", None) or "").strip()
    if text.startswith("{"):
        errors = _json(response).get("errors")
        if isinstance(errors, list) and errors and isinstance(errors[0], dict) and errors[0].get("message"):
            return str(errors[0]["message"])
    return " ".join(text.split())[:200]


class Login:
    """One FOLIO login session: the access token, its refresh and re-login. Shared between virtual users
    with `Login.shared(...)` (one per URL, tenant and user in this process) or owned by one user.

    Never redeems a refresh token twice: renewals happen under a lock, the refresh token is dropped before
    it is sent, and whoever waited for the lock reuses the new token instead of renewing again. Refreshes
    are also one at a time per URL, tenant and user across all logins of this process.
    """

    _shared: dict[tuple, Login] = {}
    _refresh_locks: dict[tuple, Any] = {}
    _shared_lock = threading.RLock()
    _detected: dict[tuple[str, str], str] = {}  # auto mode: what each (url, tenant) turned out to speak

    def __init__(self, url: str, credentials: Credentials, auth: str = EXPIRY,
                 refresh_margin: float = DEFAULT_REFRESH_MARGIN) -> None:
        if auth not in AUTH_MODES:
            raise ValueError(f"auth must be one of {', '.join(AUTH_MODES)}, not {auth!r}")
        if refresh_margin <= 0:
            raise ValueError("refresh_margin must be positive")
        self.url = url.rstrip("/")
        self.credentials = credentials
        self.auth = auth
        self.refresh_margin = refresh_margin
        self._lock = threading.Lock()
        with Login._shared_lock:
            self._refresh_lock = Login._refresh_locks.setdefault((self.url, credentials.tenant, credentials.username),
                                                                 threading.Lock())
        self._token: str | None = None
        self._refresh_token: str | None = None
        self._renew_at = math.inf  # time.monotonic() after which the token is renewed before use
        self.logins = 0
        self.refreshes = 0

    def __repr__(self) -> str:
        return f"Login(url={self.url!r}, tenant={self.credentials.tenant!r}, user={self.credentials.username!r}, mode={self.mode!r})"

    @classmethod
    def shared(cls, url: str, credentials: Credentials, auth: str = EXPIRY,
               refresh_margin: float = DEFAULT_REFRESH_MARGIN) -> Login:
        key = (url.rstrip("/"), credentials.tenant, credentials.username, auth, refresh_margin)
        with cls._shared_lock:
            login = cls._shared.get(key)
            if login is None:
                login = cls._shared[key] = cls(url, credentials, auth, refresh_margin)
            return login

    @property
    def mode(self) -> str | None:
        """`expiry` or `legacy`; None while `auto` has not found out yet."""
        if self.auth != AUTO:
            return self.auth
        return self._detected.get((self.url, self.credentials.tenant))

    def tokens(self) -> tuple[str, ...]:
        return tuple(t for t in (self._token, self._refresh_token) if t)

    # -- the token a call should carry ---------------------------------------------------------------
    def token(self, okapi: Okapi) -> str:
        token = self._token
        if token is not None and time.monotonic() < self._renew_at:
            return token
        with self._lock:
            if self._token is None or time.monotonic() >= self._renew_at:
                if not (self._token is not None and self._refresh_token and self._refresh(okapi)):
                    self._login(okapi)
            return self._token  # type: ignore[return-value]

    def rejected(self, okapi: Okapi, token: str) -> None:
        """A call with `token` got 401: log in again, unless someone already replaced that token."""
        with self._lock:
            if self._token == token:
                self._login(okapi)

    # -- talking to mod-login ----------------------------------------------------------------------
    def _login(self, okapi: Okapi) -> None:
        creds = self.credentials
        body = jsonlib.dumps({"username": creds.username, "password": creds.password}).encode()
        if self.mode in (None, EXPIRY):
            sent = time.monotonic()
            call = okapi._send("POST", "/authn/login-with-expiry", "POST /authn/login-with-expiry", None, body,
                               expect=(201, 404) if self.auth == AUTO else (201,))
            if call.status == 201:
                cookies = _set_cookies(call.response)
                if not cookies.get(ACCESS_COOKIE):
                    raise LoginFailed(f"{self.url}: /authn/login-with-expiry answered 201 without a {ACCESS_COOKIE} cookie")
                self._accept(cookies[ACCESS_COOKIE], cookies.get(REFRESH_COOKIE), sent)
                self.logins += 1
                return
            if call.status == 404 and self.auth == AUTO:
                self._detected[(self.url, creds.tenant)] = LEGACY
            else:
                self._refused(call, "/authn/login-with-expiry")
        sent = time.monotonic()
        call = okapi._send("POST", "/authn/login", "POST /authn/login", None, body, expect=(201,))
        if call.status != 201:
            self._refused(call, "/authn/login")
        payload = _json(call.response)
        token = _header(call.response, "x-okapi-token") or payload.get("okapiToken")
        if not token:
            raise LoginFailed(f"{self.url}: /authn/login answered 201 without a token (neither x-okapi-token nor okapiToken)")
        self._accept(token, payload.get("refreshToken"), sent)  # Eureka also hands out a refresh token
        self.logins += 1

    def _refresh(self, okapi: Okapi) -> bool:
        refresh_token, self._refresh_token = self._refresh_token, None  # single use, whatever happens next
        with self._refresh_lock:
            sent = time.monotonic()
            call = okapi._send("POST", "/authn/refresh", "POST /authn/refresh",
                               {"Cookie": f"{REFRESH_COOKIE}={refresh_token}"}, None, expect=(201,))
        cookies = _set_cookies(call.response) if call.status == 201 else {}
        if not cookies.get(ACCESS_COOKIE):
            return False  # expired, revoked or refused: the caller logs in afresh
        self._accept(cookies[ACCESS_COOKIE], cookies.get(REFRESH_COOKIE), sent)
        self.refreshes += 1
        return True

    def _accept(self, token: str, refresh_token: str | None, sent: float) -> None:
        self._token, self._refresh_token = token, refresh_token or None
        claims = _claims(token)
        exp, iat = claims.get("exp"), claims.get("iat")
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

    def _refused(self, call: _Call, path: str) -> None:
        creds = self.credentials
        if call.status == 0 or call.status >= 500:
            raise CallFailed(f"POST {path}", call.message, call.status)  # transient: the next call tries again
        hint = ""
        if call.status == 404:
            hint = (" (this FOLIO has no login-with-expiry, as before Poppy: use --auth legacy or auto)"
                    if path.endswith("expiry") else " (legacy tokens are disabled for the tenant: use --auth expiry)")
        reason = call.message.split(" (expected ", 1)[0]
        raise LoginFailed(f"login of FOLIO user {creds.username!r} to tenant {creds.tenant!r} at {self.url} "
                          f"failed: {reason}{hint}")


class Okapi:
    """Authenticated FOLIO API calls over one HTTP session (see the module docstring)."""

    def __init__(self, session: Any, credentials: Credentials, *, url: str | None = None, auth: str = EXPIRY,
                 shared_login: bool = False, refresh_margin: float = DEFAULT_REFRESH_MARGIN) -> None:
        base = url or getattr(session, "base_url", None)
        if not base:
            raise FolioperfError("no FOLIO URL: pass url= (in Locust, give --host)")
        self.url = base.rstrip("/")
        self.credentials = credentials
        self._session = session
        self._locust = hasattr(session, "request_event")  # Locust's HttpSession or FastHttpSession
        self.login = (Login.shared if shared_login else Login)(self.url, credentials, auth, refresh_margin)
        self._open: list[Transaction] = []
        _switch_off_cookies(session)

    def __repr__(self) -> str:
        return f"Okapi(url={self.url!r}, tenant={self.credentials.tenant!r}, user={self.credentials.username!r})"

    def authenticate(self) -> None:
        """Log in now (otherwise the first call does); raises LoginFailed when FOLIO refuses."""
        self.login.token(self)

    # -- calls ----------------------------------------------------------------------------------------
    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Any:
        return self.request("POST", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> Any:
        return self.request("PUT", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Any:
        return self.request("DELETE", path, **kwargs)

    def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, json: Any = None,
                data: str | bytes | None = None, headers: Mapping[str, str] | None = None,
                expect: Expect = None, name: str | None = None,
                **path_params: Any) -> Any:
        """One API call; returns the session's response object.

        `path` is a template (`/users/{id}`) filled from `path_params` (URL-quoted); the call is named
        `METHOD /template` unless `name` is given. `params` become the query string. `expect` lists the
        statuses that count as the outcome the workflow wants (default: any 2xx) or is a predicate on
        the response; an expected status of 400 or more is flagged `expected` in the request's context. A
        401 is recorded as a failure, then the user logs in again and the call is retried once.
        """
        method = method.upper()
        template = path.split("?", 1)[0]
        target = _expand(path, path_params)
        if params:
            target += ("&" if "?" in target else "?") + urlencode(params, doseq=True, quote_via=quote)
        name = name or f"{method} {template}"
        body = jsonlib.dumps(json).encode() if json is not None else data
        for attempt in (1, 2):
            token = self.login.token(self)
            call = self._send(method, target, name, headers, body, expect, token=token,
                              may_retry=attempt == 1 and not (expect is not None and not callable(expect) and 401 in expect))
            for t in self._open:
                t.response_time += call.response_time
                t.response_length += call.length
                if not call.rejected:
                    t.calls += 1
                    if not call.ok and t.error is None:
                        t.error = f"{name}: {call.message}"
            if not call.rejected:
                break
            self.login.rejected(self, token)
        if not call.ok:
            raise CallFailed(name, call.message, call.status)
        return call.response

    @contextmanager
    def transaction(self, name: str) -> Iterator[Transaction]:
        """Times the calls made inside the block as one business transaction; recorded (over a Locust
        session) as request type "Transaction", failed if a call failed or an exception escaped."""
        t = Transaction(name)
        self._open.append(t)
        finished = False
        try:
            yield t
            finished = True
        except Exception as exc:
            finished = not getattr(exc, "stops_run", False)  # a run being stopped is no transaction outcome
            if t.error is None:
                t.error = self._scrub(f"{type(exc).__name__}: {exc}")
            raise
        finally:  # not reached with finished=True when the user is killed (GreenletExit): nothing to record
            self._open.remove(t)
            if finished and self._locust:
                self._session.request_event.fire(
                    request_type=TRANSACTION, name=t.name, response_time=t.response_time,
                    response_length=t.response_length, exception=TransactionFailed(t.error) if t.error else None,
                    context=self._context(), response=None, start_time=t.start_time, url=None,
                )

    # -- the wire -------------------------------------------------------------------------------------
    def _headers(self, target: str, token: str | None, extra: Mapping[str, str] | None, has_body: bool) -> dict[str, str]:
        segment = target.lstrip("/").split("?", 1)[0].split("/", 1)[0]
        headers = {
            "X-Okapi-Tenant": self.credentials.tenant,
            "X-Okapi-Request-Id": f"{random.randrange(1_000_000):06d}/{segment}",  # Okapi's own format
            "Accept": "application/json, text/plain",
        }
        if has_body:
            headers["Content-Type"] = "application/json"
        if token:
            headers["X-Okapi-Token"] = token
        if extra:
            headers.update(extra)
        return headers

    def _send(self, method: str, target: str, name: str, headers: Mapping[str, str] | None, body: bytes | str | None,
              expect: Expect = None, token: str | None = None,
              may_retry: bool = False) -> _Call:
        all_headers = self._headers(target, token, headers, body is not None)
        if self._locust:
            response = self._session.request(method, self.url + target, name=name, catch_response=True, data=body,
                                             headers=all_headers)
            with response:
                call = self._judge(response, expect, token is not None and may_retry)
                if call.expected:  # a fresh dict: Locust may hand every request the same default one
                    response.request_meta["context"] = {**response.request_meta.get("context", {}), EXPECTED: True}
                if call.ok:
                    response.success()
                else:
                    response.failure(CallFailed(name, call.message, call.status))
            call.response_time = float(response.request_meta.get("response_time") or 0.0)
            call.length = int(response.request_meta.get("response_length") or 0)
            return call
        import requests  # only tools use a plain session

        started = time.perf_counter()
        try:
            response = self._session.request(method, self.url + target, data=body, headers=all_headers,
                                             timeout=PLAIN_SESSION_TIMEOUT)
        except requests.RequestException as exc:
            elapsed = (time.perf_counter() - started) * 1000
            return _Call(None, 0, False, False, f"cannot reach FOLIO at {self.url} ({type(exc).__name__})", elapsed, 0)
        call = self._judge(response, expect, token is not None and may_retry)
        call.response_time = (time.perf_counter() - started) * 1000
        call.length = len(response.content or b"")
        return call

    def _judge(self, response: Any, expect: Expect, retry_on_401: bool) -> _Call:
        status = response.status_code or 0
        if status == 0:
            error = getattr(response, "error", None)
            return _Call(response, 0, False, False, self._scrub(f"no response: {error!r}"), 0.0, 0)
        if status == 401 and retry_on_401:
            return _Call(response, 401, False, False,
                         f"HTTP 401 {self._scrub(_summary(response))} (token rejected; logging in again)", 0.0, 0, True)
        if expect is None:
            ok = 200 <= status < 300
        elif callable(expect):
            try:
                ok = bool(expect(response))
            except Exception as exc:  # a predicate that cannot read the body: the outcome was not the expected one
                return _Call(response, status, False, False, self._scrub(f"HTTP {status}: {type(exc).__name__}: {exc}"), 0.0, 0)
        else:
            ok = status in expect
        if ok:  # the message is for failures only: building it reads and scrubs the body
            return _Call(response, status, True, status >= 400, "", 0.0, 0)
        message = f"HTTP {status} {self._scrub(_summary(response))}".rstrip()
        if expect is not None and not callable(expect):
            message += f" (expected {'/'.join(map(str, expect))})"
        return _Call(response, status, False, False, message, 0.0, 0)

    def _scrub(self, text: str) -> str:
        """Tokens out of any text we report; the password too where it could be an echoed JSON value (FOLIO
        never echoes it, and a plain word like "admin" must not be starred out of "diku_admin")."""
        for token in self.login.tokens():
            text = text.replace(token, "***")
        return text.replace(jsonlib.dumps(self.credentials.password), '"***"')

    def _context(self) -> dict:
        user = getattr(self._session, "user", None)
        return user.context() if user is not None else {}
