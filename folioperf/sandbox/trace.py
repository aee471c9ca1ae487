"""The sandbox's `X-Okapi-Trace` lines (`folioperf sandbox start --trace-headers`, Okapi's trace_headers=true,
off by default as in Okapi since 4.10.0): one line per module hop, as folioperf.okapi_trace reads them.

    POST mod-authtoken-2.17.0 http://127.0.0.1:9130/circulation/check-out-by-barcode : 202 310us
    GET mod-users-19.5.4 http://127.0.0.1:9130/users.. : 200 820us
    GET mod-inventory-storage-29.0.18 http://127.0.0.1:9130/item-storage/items.. : 200 1102us
    ...
    POST mod-circulation-24.4.18 http://127.0.0.1:9130/circulation/check-out-by-barcode : 201 9870us

The first line is mod-authtoken's filter, the last the module that served the request, its hop taken from
the end of the filter to the answer (any latency-profile delay included), so that it holds the calls it
made. Between them, one line per call the serving module makes to another module: the handler's functions
that stand for such a call carry `@calls(...)`. Where the sandbox answers several of FOLIO's calls with one
query (a user with their manual blocks), the line is named for the main one. A call's time leaves out the
calls made inside it, so the lines never count a microsecond twice.

Real Okapi returns only the chain (filter and serving module): a module's own calls to other modules go
through Okapi too, but their trace lines stay in the module's responses from Okapi, which mod-circulation
does not pass on. The sandbox adds them, so that a breakdown by module can be tested end to end here.
"""

from __future__ import annotations

import functools
import time
from contextvars import ContextVar
from typing import Callable, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

_STATUS = {"GET": 200, "POST": 201, "PUT": 204, "DELETE": 204}


class Trace:
    """One request's hops: the auth filter's µs (`denied`: the filter answered) and (method, module, path,
    status, µs) of each call the serving module made, in the order they ended."""

    __slots__ = ("filter_us", "denied", "hops", "_inner")

    def __init__(self, filter_us: int, denied: bool = False) -> None:
        self.filter_us = filter_us
        self.denied = denied
        self.hops: list[tuple[str, str, str, int, int]] = []
        self._inner: list[float] = []  # per open call: the time its own inner calls took

    def enter(self) -> float:
        self._inner.append(0.0)
        return time.perf_counter()

    def leave(self, started: float, method: str, module: str, path: str) -> None:
        spent = time.perf_counter() - started
        own = spent - self._inner.pop()
        if self._inner:
            self._inner[-1] += spent
        self.hops.append((method, module, path, _STATUS.get(method, 200), int(own * 1e6)))


_CURRENT: ContextVar[Trace | None] = ContextVar("folioperf_sandbox_trace", default=None)  # greenlet-local


def calls(method: str, module: str, path: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """The decorated function stands for `method path` of `module` (as the routes name modules): with trace
    headers on, each of its runs is a trace line; with them off it costs one context lookup."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def traced(*args: P.args, **kwargs: P.kwargs) -> R:
            trace = _CURRENT.get()
            if trace is None:
                return fn(*args, **kwargs)
            started = trace.enter()
            try:
                return fn(*args, **kwargs)
            finally:
                trace.leave(started, method, module, path)

        return traced

    return wrap


def begin(filter_us: int) -> tuple[Trace, object]:
    """Start recording the calls of the request being served, after an auth filter hop of `filter_us`;
    `end(token)` when its handler returns."""
    trace = Trace(filter_us)
    return trace, _CURRENT.set(trace)


def end(token: object) -> None:
    _CURRENT.reset(token)  # type: ignore[arg-type]
