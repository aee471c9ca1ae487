"""Where an API call's time went, from Okapi's `X-Okapi-Trace` response headers (`--trace`).

Okapi started with `trace_headers=true` (off by default since Okapi 4.10.0) adds one header line per module
that handled the request, in the order they answered (okapi-core ProxyService.makeTraceHeader):

    X-Okapi-Trace: POST mod-authtoken-2.14.1 http://10.0.0.5:9131/circulation/check-out-by-barcode : 202 1544us
    X-Okapi-Trace: POST mod-circulation-24.0.0 http://10.0.0.5:9134/circulation/check-out-by-barcode : 201 45213us

The module id carries its version; the URL is the module's, its query string cut to `..`; the time is that
module's own hop, timed by Okapi from sending the request to the module until its response. The lines of
the request's own path are its chain: auth filter first, the module that serves it last. Lines of other
paths are calls the serving module made to other modules (the built-in sandbox reports them; a module
that forwarded its sub-requests' trace headers would too). So, per response:

    serving module     its hop minus the calls it made (never below 0)
    every other module its hops, summed (a filter's, or the calls made to it)
    GATEWAY            the response time minus the chain's hops: Okapi, the network, the client

and the parts add up to the response time the client measured. This runs for every response of a --trace
run, so it is lean: the request's path only keeps the response's lines (`observed`), which are read later, many
at once (folioperf.metrics); a module's part is one int (µs and hops packed, no list per module and response),
and a line's module and path are read once per distinct line head.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

HEADER = "X-Okapi-Trace"
GATEWAY = "gateway and network"  # not a module name: FOLIO's start with mod-, edge-, okapi or folio-
NO_HEADERS = ("sent no X-Okapi-Trace headers, so there is no per-module time: start Okapi with trace_headers=true "
              "(java -Dtrace_headers=true ...; off by default since Okapi 4.10.0); Eureka's Kong sends none")
_VERSION = re.compile(r"-\d+\.\d+\.\d+\S*\Z")

HOP_BITS = 20  # a module's part of one response or transaction: µs << HOP_BITS | hops (hops < 2**20)
HOPS = (1 << HOP_BITS) - 1

# module -> its part (µs << HOP_BITS | hops) of one response or transaction
Times = dict[str, int]


@lru_cache(maxsize=4096)
def module_name(module_id: str) -> str:
    """`mod-circulation-24.0.0-SNAPSHOT.1` -> `mod-circulation`: a release's module, whatever its version."""
    return _VERSION.sub("", module_id)


def header_lines(response: object) -> list[str]:
    """The response's X-Okapi-Trace lines, one per header (geventhttpclient's and urllib3's headers keep
    repeated headers apart; a merged `a, b` value is split as a last resort: a line holds no comma)."""
    try:  # Locust's FastResponse: geventhttpclient's headers
        return response.headers.getlist(HEADER)  # type: ignore[attr-defined]
    except AttributeError:
        pass
    headers = getattr(response, "headers", None)
    if headers is None:
        return []
    raw = getattr(getattr(response, "raw", None), "headers", None)  # requests: the repeated headers are there
    getlist = getattr(raw, "getlist", None)
    if getlist is not None:
        return list(getlist(HEADER))
    value = headers.get(HEADER)
    return value.split(", ") if value else []


def part(value: int) -> tuple[int, int]:
    """(µs, hops) of a module's packed part."""
    return value >> HOP_BITS, value & HOPS


@lru_cache(maxsize=8192)  # ids in paths make many distinct heads
def _hop(head: str) -> tuple[str, str] | tuple[()]:
    """(module name, URL path) of a line's "<METHOD> <module id> <URL> : <status>", or () when it is not
    Okapi's format. Cached: most lines repeat but for their time, as Okapi cuts query strings to ".."."""
    parts = head.split(" ")
    if len(parts) != 5 or parts[3] != ":":
        return ()
    url = parts[2]
    scheme = url.find("//")
    start = url.find("/", scheme + 2) if scheme >= 0 else 0  # the path after scheme and host
    path = url[start:] if start >= 0 else "/"
    return module_name(parts[1]), path[:-2] if path.endswith("..") else path


def breakdown(lines: Iterable[str], path: str, response_us: int) -> Times | None:
    """Each module's part of one response to a request for `path` (no query); None when no line can be read
    (Okapi without trace headers, Kong, a proxy that drops them)."""
    times: Times = {}
    chain_us = called = 0
    serving: str | None = None  # the chain's last hop so far, and its time
    serving_us = 0
    for line in lines:
        head, _, took = line.rpartition(" ")
        hop = _hop(head)
        if not hop or took[-2:] != "us":
            continue
        try:
            us = int(took[:-2])
        except ValueError:
            continue
        if us < 0:
            continue
        module, url_path = hop
        if url_path == path:  # a hop of the request's own chain: the one before it was a filter
            if serving is not None:
                times[serving] = times.get(serving, 0) + (serving_us << HOP_BITS | 1)
            serving, serving_us = module, us
            chain_us += us
        else:  # a call the serving module made
            times[module] = times.get(module, 0) + (us << HOP_BITS | 1)
            called += us
    if serving is not None:
        times[serving] = times.get(serving, 0) + (max(serving_us - called, 0) << HOP_BITS | 1)
    elif not times:
        return None
    else:  # only calls: nothing says who made them
        chain_us = called
    gateway = response_us - chain_us
    if gateway > 0:
        times[GATEWAY] = gateway << HOP_BITS
    return times


def observed(target: str, response_us: int, lines: list[str]) -> list:
    """A response's trace as it arrived, `[target, response µs, lines]`, read later (`times_of`), many at once:
    a list, the cheapest thing to build in the request's path."""
    return [target, response_us, lines]


def times_of(observed: list) -> Times | None:
    """Each module's part of an `observed` response, read on first use (its lines then make way for it)."""
    lines = observed[2]
    if lines.__class__ is not list:  # read already (a transaction's call, read as an API response first)
        return lines
    times = observed[2] = breakdown(lines, observed[0].split("?", 1)[0], observed[1])
    return times


def transaction_times(calls: Sequence[list]) -> Times:
    """A transaction's parts from its calls' `observed` responses."""
    return merged([times for times in map(times_of, calls) if times])


def merged(calls: Sequence[Times]) -> Times:
    """A transaction's parts: its calls' summed (packed parts add up field by field)."""
    if len(calls) == 1:
        return calls[0]
    into: Times = {}
    for times in calls:
        for module, value in times.items():
            into[module] = into.get(module, 0) + value
    return into
