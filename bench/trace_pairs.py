"""Shared by bench/locust_bare.py and bench/locust_folio.py (Locust puts a locustfile's directory on the
path): with GENERATOR_BENCH_TRACE=1, keep per GET the client's response time next to the time the
sandbox (started with --trace-headers) reports in its X-Okapi-Trace lines: its auth filter's hop plus
mod-users' hop, read by folioperf's reader (folioperf.okapi_trace, which loads nothing else of folioperf: the
bare side stays bare)."""

from __future__ import annotations

import os
from typing import Any

from folioperf.okapi_trace import breakdown, header_lines

GROUP = "bdc2b6d4-5ceb-4a12-ab46-249b9a68473e"  # the sandbox's "undergrad" patron group
GET_NAME = "GET /groups/{id}"


def trace_pairs(environment: Any) -> list[tuple[float, int]]:
    """(response time in ms, sandbox's trace time in µs) of each successful GET, filled while the test runs;
    stays empty (and costs nothing) unless GENERATOR_BENCH_TRACE=1."""
    pairs: list[tuple[float, int]] = []
    if os.environ.get("GENERATOR_BENCH_TRACE") == "1":
        @environment.events.request.add_listener
        def _trace(request_type, name, response_time, response=None, exception=None, **_kw) -> None:
            if name == GET_NAME and response is not None and exception is None:
                took = _sandbox_us(response)
                if took is not None:
                    pairs.append((response_time, took))
    return pairs


def _sandbox_us(response: Any) -> int | None:
    """The time of the response's modules by its X-Okapi-Trace lines (for this GET, its chain's hops)."""
    parts = breakdown(header_lines(response.headers), 0)  # a response time of 0: no gateway part
    return sum(us for us, _ in parts.values()) if parts else None
