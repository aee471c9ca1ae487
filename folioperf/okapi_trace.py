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

and the parts add up to the response time the client measured.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

HEADER = "X-Okapi-Trace"
GATEWAY = "gateway and network"  # not a module name: FOLIO's start with mod-, edge-, okapi or folio-
NO_HEADERS = ("sent no X-Okapi-Trace headers, so there is no per-module time: start Okapi with trace_headers=true "
              "(java -Dtrace_headers=true ...; off by default since Okapi 4.10.0); Eureka's Kong sends none")
_VERSION = re.compile(r"-\d+\.\d+\.\d+\S*\Z")

# module -> (µs, hops) for one response or transaction
Times = dict[str, list[int]]


@lru_cache(maxsize=4096)
def module_name(module_id: str) -> str:
    """`mod-circulation-24.0.0-SNAPSHOT.1` -> `mod-circulation`: a release's module, whatever its version."""
    return _VERSION.sub("", module_id)


def header_lines(response: object) -> list[str]:
    """The response's X-Okapi-Trace lines, one per header (geventhttpclient's and urllib3's headers keep
    repeated headers apart; a merged `a, b` value is split as a last resort: a line holds no comma)."""
    headers = getattr(response, "headers", None)
    if headers is None:
        return []
    getlist = getattr(headers, "getlist", None)
    if getlist is None:  # requests' CaseInsensitiveDict: the repeated headers are in the raw response
        raw = getattr(getattr(response, "raw", None), "headers", None)
        getlist = getattr(raw, "getlist", None)
    if getlist is not None:
        return list(getlist(HEADER))
    value = headers.get(HEADER)
    return value.split(", ") if value else []


@lru_cache(maxsize=8192)
def _hop(head: str) -> tuple[str, str] | None:
    """(module name, URL path) of a line's "<METHOD> <module id> <URL> : <status>", or None when it is not
    Okapi's format. Cached: most lines repeat but for their time, as Okapi cuts query strings to ".."."""
    parts = head.split(" ")
    if len(parts) != 5 or parts[3] != ":":
        return None
    url = parts[2]
    scheme = url.find("//")
    start = url.find("/", scheme + 2) if scheme >= 0 else 0  # the path after scheme and host
    path = url[start:] if start >= 0 else "/"
    return module_name(parts[1]), path[:-2] if path.endswith("..") else path


def breakdown(lines: Iterable[str], path: str, response_us: int) -> Times | None:
    """Each module's time (µs) and hops in one response to a request for `path` (no query); None when no
    line can be read (Okapi without trace headers, Kong, a proxy that drops them)."""
    times: Times = {}
    chain_us = called = 0
    serving: str | None = None  # the chain's last hop so far, and its time
    serving_us = 0
    for line in lines:
        cut = line.rfind(" ")
        if cut < 0 or not line.endswith("us"):
            continue
        try:
            us = int(line[cut + 1:-2])
        except ValueError:
            continue
        hop = _hop(line[:cut])
        if hop is None:
            continue
        module, url_path = hop
        if url_path == path:  # a hop of the request's own chain: the one before it was a filter
            if serving is not None:
                _add(times, serving, serving_us)
            serving, serving_us = module, us
            chain_us += us
        else:  # a call the serving module made
            _add(times, module, us)
            called += us
    if serving is None and not times:
        return None
    if serving is not None:
        _add(times, serving, max(serving_us - called, 0))
    else:  # only calls: nothing says who made them
        chain_us = called
    gateway = response_us - chain_us
    if gateway > 0:
        times[GATEWAY] = [gateway, 0]
    return times


def _add(times: Times, module: str, us: int) -> None:
    slot = times.get(module)
    if slot is None:
        times[module] = [us, 1]
    else:
        slot[0] += us
        slot[1] += 1


def add_times(into: Times, times: Times) -> None:
    """A call's times into a transaction's."""
    for module, (us, hops) in times.items():
        slot = into.get(module)
        if slot is None:
            into[module] = [us, hops]
        else:
            slot[0] += us
            slot[1] += hops
