"""FOLIO API calls the way FOLIO wants them: logged in, named like the PTF reports, honestly recorded.

    okapi = Okapi(self.client, credentials)               # in a Locust user (HttpSession or FastHttpSession)
    okapi = Okapi(requests.Session(), credentials, url=u)  # in a tool
    r = okapi.get("/users/{id}", id=user_id)             # recorded as "GET /users/{id}"
    okapi.post("/circulation/check-out-by-barcode", json=body, expect=(201, 422))
    with okapi.transaction("Check-out"): ...             # recorded as request type "Transaction"

The client drives folioperf.auth's login flow: it sends what the flow yields (a login, a refresh, the call
with its token, the call again after a 401) and hands each outcome back. FOLIO's cookies are `Secure`, so
cookie jars would not send them over http:// and a stale jar cookie next to the header makes Okapi answer
400: the session's cookie jar is switched off and every call carries X-Okapi-Token.

Over a Locust session every call is a Locust request: type = the method, name = `METHOD /path/template`.
A refusal the caller said to expect (`expect=(201, 422)`) is a success carrying `context["expected"] =
True` (counted as an expected outcome in folioperf's results); anything else unexpected is a failure and
raises `CallFailed`. Over a plain requests session nothing is recorded; unexpected outcomes raise
`CallFailed` just the same. Logins and refreshes are recorded too, but are no part of any transaction.
"""

from __future__ import annotations

import json as jsonlib
import re
import string
import time
from collections.abc import Callable, Generator, Mapping
from functools import lru_cache
from http.cookiejar import DefaultCookiePolicy
from typing import Any
from urllib.parse import quote, urlencode

from folioperf.auth import (
    AUTH_MODES,
    AUTO,
    DEFAULT_REFRESH_MARGIN,
    EXPIRY,
    LEGACY,
    Call,
    Credentials,
    Expect,
    Login,
    LoginFailed,
    Logins,
    Outcome,
    response_json,
)
from folioperf.errors import CallFailed, FolioperfError, Unfinished, raised
from folioperf.metrics import NESTED, TRANSACTION
from folioperf.okapi_trace import FIELD, Traced, TraceSink, raw_headers, trace_field
from folioperf.timers import Timers

__all__ = ["AUTH_MODES", "AUTO", "DEFAULT_REFRESH_MARGIN", "EXPECTED", "EXPIRY", "LEGACY", "CallFailed",
           "Credentials", "Login", "LoginFailed", "Logins", "Okapi", "Transaction"]

EXPECTED = "expected"  # request context flag: a refusal (status >= 400) the workflow expected, e.g. a 422 it provoked
PLAIN_SESSION_TIMEOUT = 60.0
# What FOLIO's UI in a browser sends besides the calls' own headers (the PTF's CICO plans send the same:
# a Chrome User-Agent, the UI's origin), and what its CORS preflights ask for.
BROWSER_HEADERS = {
    "Origin": "http://localhost",
    "User-Agent": ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
                   "Chrome/78.0.3904.97 Safari/537.36"),
}
PREFLIGHT_HEADERS = "content-type,x-okapi-tenant,x-okapi-token"


class Failure(Exception):
    """A failure as Locust records it: the outcome alone, as its row (method and name) already says what
    failed, and shown as written: Locust shows an exception by its repr(), `CallFailed('...')` in its
    Failures tab and CSV."""

    def __repr__(self) -> str:
        return str(self)


class TransactionFailed(Failure):
    """Reported to Locust as the failure of a business transaction: the call that failed, and how."""


class Transaction:
    """A business transaction: the summed time of the API calls made inside it (think time excluded); a
    context manager (`with okapi.transaction("Check-out") as t:`), cheaper than a generator-based one."""

    __slots__ = ("_okapi", "calls", "error", "first", "name", "response_length", "response_time", "start_time")

    def __init__(self, name: str, okapi: Okapi) -> None:
        self.name = name
        self.response_time = 0.0  # ms
        self.response_length = 0
        self.calls = 0
        self.error: str | None = None  # the first failure: "<call name>: <message>" or the exception
        self.start_time = time.time()
        self.first = 0  # --trace: its first call in Okapi._traced
        self._okapi = okapi

    def __enter__(self) -> Transaction:
        okapi = self._okapi
        okapi._open.append(self)
        self.first = len(okapi._traced)
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self._okapi._finish(self, exc)

    @property
    def failed(self) -> bool:
        return self.error is not None


class _NoCookies(DefaultCookiePolicy):
    """Stores and sends no cookies: folioperf carries FOLIO's tokens in X-Okapi-Token itself."""

    def set_ok(self, cookie, request) -> bool:
        return False

    def return_ok(self, cookie, request) -> bool:
        return False


def _switch_off_cookies(session: Any) -> None:
    client = getattr(session, "client", None)
    if client is not None and hasattr(client, "cookiejar"):  # FastHttpSession: its user agent then skips cookies altogether
        client.cookiejar = None
        return
    jar = session.cookies  # requests.Session and Locust's HttpSession
    jar.set_policy(_NoCookies())
    jar.clear()


_dict_get: Callable[[Any, str], Any] = dict.get  # --trace: a trace field as the headers store it (okapi_trace.raw_headers)
_UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]+").fullmatch  # what quote() leaves as it is


@lru_cache(maxsize=1024)
def _template_fields(path: str) -> frozenset[str]:
    return frozenset(f for _, f, _, _ in string.Formatter().parse(path) if f)


def _expand(path: str, params: Mapping[str, Any]) -> str:
    fields = _template_fields(path)
    if params.keys() != fields:
        missing, extra = fields - params.keys(), params.keys() - fields
        raise TypeError(f"{path}: path parameters {sorted(missing)} missing, {sorted(extra)} not in the template"
                        if missing else f"{path}: unknown arguments {sorted(extra)}")
    if not fields:
        return path
    values = {}
    for k, v in params.items():
        text = str(v)
        values[k] = text if _UNRESERVED(text) else quote(text, safe="")  # ids and barcodes need no quoting
    return path.format_map(values)


def _summary(response: Any) -> str:
    """FOLIO's first error message, or the start of the text body."""
    text = (getattr(response, "text", None) or "").strip()
    if text.startswith("{"):
        errors = response_json(response).get("errors")
        if isinstance(errors, list) and errors and isinstance(errors[0], dict) and errors[0].get("message"):
            return str(errors[0]["message"])
    return " ".join(text.split())[:200]


class Okapi:
    """Authenticated FOLIO API calls over one HTTP session (see the module docstring)."""

    def __init__(self, session: Any, credentials: Credentials, *, url: str | None = None, auth: str = EXPIRY,
                 shared_login: bool = False, refresh_margin: float = DEFAULT_REFRESH_MARGIN,
                 logins: Logins | None = None, browser: bool = False, preflights: bool = True,
                 timers: Timers | None = None, label: Callable[[str], str] = str,
                 headers: Mapping[str, str] | None = None, trace: TraceSink | None = None) -> None:
        base = url or getattr(session, "base_url", None)
        if not base:
            raise FolioperfError("no FOLIO URL: pass url= (in Locust, give --host)")
        self.url = base.rstrip("/")
        self.credentials = credentials
        self._session = session
        self._locust = hasattr(session, "request_event")  # Locust's HttpSession or FastHttpSession
        self.login: Login = (logins or Logins()).login(self.url, credentials, auth, refresh_margin, shared_login)
        self.browser = browser  # calls carry a browser's Origin and User-Agent, and preflight() sends OPTIONS
        self.preflights = preflights  # False: --no-preflight
        self._timers = timers  # a virtual user's (folioperf.timers.Timers): before each call, not its retry after a 401
        self._label = label  # a scenario group's records go by `<group> · <name>`
        self._trace = trace  # --trace: takes the calls (okapi_trace.Traced)
        self._raw_headers = raw_headers() if trace is not None else None  # ... whose fields are kept as stored
        self._traced: list[Traced] = []  # --trace: the calls made in the open transactions
        self._traced_transactions: list[tuple[str, int, int]] = []  # ... and the transactions that ended in them
        self._open: list[Transaction] = []
        self._names: dict[tuple[str, str], str] = {}  # (method, path template) -> the record's name
        # a workflow's own headers (a PTF plan's header managers) or folioperf's: JSON, and a browser's where it is one
        plain = headers if headers is not None else {"Accept": "application/json, text/plain",
                                                     **(BROWSER_HEADERS if browser else {})}
        self._base_headers = {"X-Okapi-Tenant": credentials.tenant, **plain}
        self._preflight_headers = {**{k: v for k, v in plain.items() if k.lower() != "content-type"},
                                   **({} if headers is not None else BROWSER_HEADERS), "Accept": "*/*",
                                   "Access-Control-Request-Headers": PREFLIGHT_HEADERS}
        _switch_off_cookies(session)

    def __repr__(self) -> str:
        return f"Okapi(url={self.url!r}, tenant={self.credentials.tenant!r}, user={self.credentials.username!r})"

    def authenticate(self) -> None:
        """Log in now (otherwise the first call does); raises LoginFailed when FOLIO refuses."""
        self._drive(self.login.authenticate())

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
        401 is recorded as a failure, then the login is renewed and the call sent once more.
        """
        method = method.upper()
        target = _expand(path, path_params) if path_params or "{" in path else path
        if params:
            target += ("&" if "?" in target else "?") + urlencode(params, doseq=True, quote_via=quote)
        body = jsonlib.dumps(json).encode() if json is not None else data
        if name is None:
            name = self._names.get((method, path))
            if name is None:
                name = self._names[(method, path)] = self._label(f"{method} {path.split('?', 1)[0]}")
        else:
            name = self._label(name)
        call = Call(method, target, name, self._headers(headers, body),
                    body if body is None or isinstance(body, bytes) else body.encode(), expect)
        if self._timers is not None:  # before the login flow picks the token: a minute's pacing can outlive it
            self._timers.before_sample()
        outcome = self._drive(self.login.flow(call))
        if not outcome.ok:
            raise CallFailed(call.name, outcome.message, outcome.status)
        return outcome.response

    def preflight(self, path: str, *, params: Mapping[str, Any] | None = None, method: str = "GET",
                  name: str | None = None, **path_params: Any) -> None:
        """The CORS preflight a browser sends before a cross-origin call (FOLIO's UI and its gateway are
        different origins): OPTIONS with the browser's Origin and the method and headers it will send, and no
        token. Recorded as `OPTIONS /path/template`, part of any open transaction; nothing with
        --no-preflight (or outside browser pages)."""
        if not (self.browser and self.preflights):
            return
        target = _expand(path, path_params) if path_params or "{" in path else path
        if params:
            target += "?" + urlencode(params, doseq=True, quote_via=quote)
        headers = {**self._preflight_headers, "Access-Control-Request-Method": method}
        call = Call("OPTIONS", target, self._label(name or f"OPTIONS {path.split('?', 1)[0]}"), headers, None, (200, 204))
        if self._timers is not None:
            self._timers.before_sample()
        outcome = self._send(call)
        self._account(call, outcome)
        if not outcome.ok:
            raise CallFailed(call.name, outcome.message, outcome.status)

    def transaction(self, name: str) -> Transaction:
        """Times the calls made inside the `with` block as one business transaction; recorded (over a Locust
        session) as request type "Transaction", failed if a call failed or an exception escaped. A run being
        stopped or a user ended in a pause (Unfinished) is no outcome of the transaction: nothing is recorded then."""
        return Transaction(self._label(name), self)

    def _finish(self, t: Transaction, exc: BaseException | None) -> None:
        """The end of a transaction's block (Transaction.__exit__); `exc` escaped it."""
        self._open.remove(t)
        # a stop, or the user ended (Unfinished, GreenletExit): no outcome, nothing to record
        unfinished = exc is not None and (isinstance(exc, Unfinished) or not isinstance(exc, Exception))
        if self._trace is not None:  # --trace: the calls wait for the outermost transaction, then go with the
            # transactions that ended in it (a transaction's parts are its calls' added up)
            if self._open or self._traced_transactions or unfinished:
                self._trace_nested(t, unfinished)
            elif self._traced:  # the usual: an outermost transaction with none in it
                self._trace.trace_transactions(self._traced, t.name, t.start_time)
                self._traced = []
        if exc is not None:
            if unfinished:
                return
            if t.error is None and isinstance(exc, CallFailed):
                t.error = self._scrub(f"{type(exc).__name__}: {exc}")
            elif t.error is None:  # the workflow's bug, at the line of the code around this block that raised it
                t.error = self._scrub(raised(exc, exc.__traceback__.tb_frame.f_globals.get("__name__")
                                             if exc.__traceback__ else None))
                exc.folioperf_transaction = t.name  # type: ignore[attr-defined]  # reported here: no "Error" row
        if self._locust:
            self._session.request_event.fire(
                request_type=TRANSACTION, name=t.name, response_time=t.response_time,
                response_length=t.response_length, exception=TransactionFailed(t.error) if t.error else None,
                # a transaction inside another: its time is already part of the outer one's (folioperf.metrics)
                context={**self._context(), NESTED: True} if self._open else self._context(), response=None,
                start_time=t.start_time, url=None,
            )

    def _trace_nested(self, t: Transaction, unfinished: bool) -> None:
        """--trace: a transaction with others open, or that ended others in it, or unfinished, has ended."""
        if not unfinished:
            self._traced_transactions.append((t.name, t.first, len(self._traced)))
        if not self._open:
            if self._traced:
                assert self._trace is not None  # calls are kept only with --trace
                self._trace.trace_transactions(self._traced, self._traced_transactions, t.start_time)
                self._traced = []
            self._traced_transactions = []

    # -- the wire -------------------------------------------------------------------------------------
    def _drive(self, flow: Generator[Call, Outcome, Any]) -> Any:
        """Send what the login flow yields until it returns; the user's own calls count in open transactions."""
        try:
            call = next(flow)
            while True:
                outcome = self._send(call)
                if self._open and not call.auth:
                    self._account(call, outcome)
                call = flow.send(outcome)
        except StopIteration as done:
            return done.value
        finally:
            flow.close()

    def _account(self, call: Call, outcome: Outcome) -> None:
        """A call's time in every open transaction (nested ones too)."""
        for t in self._open:
            t.response_time += outcome.response_time
            t.response_length += outcome.length
            if not outcome.rejected:
                t.calls += 1
                if not outcome.ok and t.error is None:
                    t.error = f"{call.name}: {outcome.message}"

    def _headers(self, extra: Mapping[str, str] | None, body: Any) -> dict[str, str]:
        headers = self._base_headers.copy()  # no X-Okapi-Request-Id: Okapi gives each request its own, as for the UI
        if body is not None:
            headers["Content-Type"] = "application/json"
        if extra:
            headers.update(extra)
        return headers

    def _send(self, call: Call) -> Outcome:
        if self._locust:
            response = self._session.request(call.method, self.url + call.target, name=call.name, catch_response=True,
                                             data=call.body, headers=call.headers)
            with response:
                outcome = self._judge(response, call)
                if outcome.expected:  # a fresh dict: Locust may hand every request the same default one
                    response.request_meta["context"] = {**response.request_meta.get("context", {}), EXPECTED: True}
                if outcome.ok:
                    response.success()
                else:
                    response.failure(Failure(outcome.message))
            meta = response.request_meta
            outcome.response_time = float(meta.get("response_time") or 0.0)
            outcome.length = int(meta.get("response_length") or 0)
            # Okapi answers CORS preflights itself: no module, so no trace lines to miss
            if self._trace is not None and outcome.status and call.method != "OPTIONS":
                headers = response.headers
                traced = (call.method, call.name, outcome.response_time,
                          _dict_get(headers, FIELD) if headers.__class__ is self._raw_headers else trace_field(headers))
                if self._open and not call.auth:
                    self._traced.append(traced)
                else:
                    self._trace.trace_call(traced)
            return outcome
        import requests  # noqa: PLC0415  (only tools use a plain session; virtual users never pay for it)

        started = time.perf_counter()
        try:
            response = self._session.request(call.method, self.url + call.target, data=call.body, headers=call.headers,
                                             timeout=PLAIN_SESSION_TIMEOUT)
        except requests.RequestException as exc:
            elapsed = (time.perf_counter() - started) * 1000
            return Outcome(None, 0, False, message=f"cannot reach FOLIO at {self.url} ({type(exc).__name__})",
                           response_time=elapsed)
        outcome = self._judge(response, call)
        outcome.response_time = (time.perf_counter() - started) * 1000
        outcome.length = len(response.content or b"")
        return outcome

    def _judge(self, response: Any, call: Call) -> Outcome:
        status = response.status_code or 0
        if status == 0:
            error = getattr(response, "error", None)
            return Outcome(response, 0, False, message=self._scrub(f"no response: {error!r}"))
        if status == 401 and call.retry_on_401:
            return Outcome(response, 401, False, rejected=True,
                           message=f"HTTP 401 {self._scrub(_summary(response))} (token rejected; logging in again)")
        expect = call.expect
        if expect is None:
            ok = 200 <= status < 300
        elif callable(expect):
            try:
                ok = bool(expect(response))
            except Exception as exc:  # a predicate that cannot read the body: not the outcome wanted
                return Outcome(response, status, False, message=self._scrub(f"HTTP {status}: {type(exc).__name__}: {exc}"))
        else:
            ok = status in expect
        if ok:  # the message is for failures only: building it reads and scrubs the body
            return Outcome(response, status, True, expected=status >= 400)
        message = f"HTTP {status} {self._scrub(_summary(response))}".rstrip()
        if expect is not None and not callable(expect):
            message += f" (expected {'/'.join(map(str, expect))})"
        return Outcome(response, status, False, message=message)

    def _scrub(self, text: str) -> str:
        """Tokens out of any text we report; the password too where it could be an echoed JSON value (FOLIO
        never echoes it, and a plain word like "admin" must not be starred out of "diku_admin")."""
        for token in self.login.tokens():
            text = text.replace(token, "***")
        return text.replace(jsonlib.dumps(self.credentials.password), '"***"')

    def _context(self) -> dict:
        user = getattr(self._session, "user", None)
        return user.context() if user is not None else {}
