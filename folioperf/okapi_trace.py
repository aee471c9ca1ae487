"""Where an API call's time went, from Okapi's `X-Okapi-Trace` response headers (`--trace`).

Okapi started with `trace_headers=true` (off by default since Okapi 4.10.0) adds one header line per module
that handled the request, in the order they answered (okapi-core ProxyService.makeTraceHeader):

    X-Okapi-Trace: POST mod-authtoken-2.14.1 http://10.0.0.5:9131/circulation/check-out-by-barcode : 202 1544us
    X-Okapi-Trace: POST mod-circulation-24.0.0 http://10.0.0.5:9134/circulation/check-out-by-barcode : 201 45213us

The module id carries its version; the URL is the module's, its query string cut to `..`; the time is that
module's own hop, timed by Okapi from sending the request to the module until its response. Okapi adds the
line of the module that served the request last; the lines of its URL's path are the request's chain:
auth filter first, the serving module last. Lines of other paths are calls the serving module made to
other modules (the built-in sandbox reports them; a module that forwarded its sub-requests' trace headers
would too). So, per response:

    serving module     its hop (the last line) minus the calls it made (never below 0)
    every other module its hops, summed (a filter's, or the calls made to it)
    GATEWAY            the response time minus the chain's hops: Okapi, the network, the client

and the parts add up to the response time the client measured. A line that is not Okapi's `<METHOD> <module id>
<URL> : <status> <µs>us` counts for nothing; a response with no readable line is untraced. This runs for every
response of a --trace run, so a virtual user only keeps what it needs of a call (`Traced`: its trace field as
the response's headers hold it), and `breakdown` reads its lines when the call's transaction has ended: a split
per line, a few µs a call (bench/generator.py measures what it costs).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Protocol

HEADER = "X-Okapi-Trace"
GATEWAY = "gateway and network"  # not a module name: FOLIO's start with mod-, edge-, okapi or folio-
NO_HEADERS = ("sent no X-Okapi-Trace headers, so there is no per-module time: start Okapi with trace_headers=true "
              "(java -Dtrace_headers=true ...; off by default since Okapi 4.10.0); Eureka's Kong sends none")
_VERSION = re.compile(r"-\d+\.\d+\.\d+\S*\Z")
MAX_US = 1 << 40  # a hop of 12 days or more is no time: a line that says so is not read

# A call as --trace keeps it: (request type, name, response ms, its trace field as the response's headers hold
# it: a list of (name, line) pairs, one such pair, or None (`raw_headers`, `trace_field`)): a tuple, the
# cheapest thing to build in the request's path.
Traced = tuple[str, str, float, list[tuple[str, str]] | tuple[str, str] | None]


class TraceSink(Protocol):
    """Where a virtual user's Okapi hands its traced calls (folioperf.metrics.Metrics)."""

    def trace_call(self, call: Traced) -> None:
        """A call made outside any transaction."""

    def trace_transactions(self, calls: list[Traced], transactions: str | list[tuple[str, int, int]],
                           started: float) -> None:
        """The calls made in an outermost transaction that started at `started` (s since the epoch), and the
        transactions that ended in it: the name of the one transaction of all of them, or (name, first call,
        end) each, its calls calls[first:end]. The sink keeps the lists."""


@lru_cache(maxsize=4096)
def module_name(module_id: str) -> str:
    """`mod-circulation-24.0.0-SNAPSHOT.1` -> `mod-circulation`: a release's module, whatever its version."""
    return _VERSION.sub("", module_id)


FIELD = HEADER.lower()


@lru_cache(maxsize=1)
def raw_headers() -> type | None:
    """geventhttpclient's Headers, when they keep a field as (field, value), or a list of them, under its
    lowercased name, as the versions folioperf knows do: a --trace call then keeps its trace field as it is,
    `dict.get(headers, FIELD)`, several times cheaper than `getlist`, and nothing else of the response alive.
    (Imported here: a process that traces no calls, a report's, never loads the HTTP client.)"""
    from geventhttpclient.header import Headers  # noqa: PLC0415

    headers = Headers()
    headers.add(HEADER, "a")
    one = dict.get(headers, FIELD)
    headers.add(HEADER, "b")
    return Headers if one == (HEADER, "a") and dict.get(headers, FIELD) == [(HEADER, "a"), (HEADER, "b")] else None


def trace_field(headers: Any) -> list[tuple[str, str]]:
    """The trace field of headers that are not `raw_headers()` (requests', or another geventhttpclient's)."""
    return [(HEADER, line) for line in header_lines(headers)]


def header_lines(headers: Any) -> list[str]:
    """The X-Okapi-Trace lines of a response's headers, one per header: geventhttpclient's and urllib3's
    headers keep repeated headers apart; requests' join them with ", ", split here: a line holds no comma."""
    getlist = getattr(headers, "getlist", None)
    if getlist is not None:
        return list(getlist(HEADER))
    value = headers.get(HEADER)
    return value.split(", ") if value else []


def lines_of(field: list[tuple[str, str]] | tuple[str, str] | None) -> list[str]:
    """The lines of a trace field as a `Traced` call keeps it."""
    if field is None:
        return []
    return [field[1]] if isinstance(field, tuple) else [line for _, line in field]


def breakdown(lines: list[str], response_us: int) -> dict[str, tuple[int, int]]:
    """Each module's (µs, hops) in one response, by the rules above; empty when no line can be read (Okapi
    without trace headers, Kong, a proxy that drops them)."""
    hops = []
    for line in lines:
        words = line.split(" ")  # <METHOD> <module id> <URL> : <status> <µs>us
        if len(words) == 6 and words[3] == ":" and words[5].endswith("us"):
            digits = words[5][:-2]
            if digits.isascii() and digits.isdigit() and int(digits) < MAX_US:
                hops.append((module_name(words[1]), _path(words[2]), int(digits)))
    if not hops:
        return {}
    module, chain, served = hops[-1]  # the serving module's line comes last
    chained = made = 0
    for _, path, us in hops:
        if path == chain:
            chained += us
        else:
            made += us
    parts: dict[str, tuple[int, int]] = {}
    for name, _, us in hops:
        total, n = parts.get(name, (0, 0))
        parts[name] = (total + us, n + 1)
    total, n = parts[module]
    parts[module] = (total - min(served, made), n)  # its own hop less the calls it made, never below 0
    if response_us > chained:  # no module's: no hop
        parts[GATEWAY] = (response_us - chained, 0)
    return parts


def _path(url: str) -> str:
    """A line's URL's path (after scheme and host; "/" if it has none), Okapi's ".." for a cut query string
    dropped."""
    scheme = url.find("//")
    if scheme >= 0:
        start = url.find("/", scheme + 2)
        url = url[start:] if start >= 0 else "/"
    return url.removesuffix("..")
