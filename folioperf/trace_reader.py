"""Reading the X-Okapi-Trace lines of many API calls at once (`--trace`), by folioperf.okapi_trace's rules.

A --trace run reads every response's lines, so the reading must cost next to nothing per call. The calls
are read in batches, a batch column by column: each line's head (all but its time) is looked up in a
cache, all times are parsed at once by numpy, and what follows from the lines (the serving module, the
calls it made, the gateway's rest) is worked out with numpy over the whole batch. A line that is not
Okapi's `<METHOD> <module id> <URL> : <status> <µs>us` counts for nothing; a response with no readable
line is untraced.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from operator import itemgetter

import numpy as np

from folioperf.okapi_trace import GATEWAY, module_name

MAX_HEADS = 50_000  # line heads remembered: ids in URLs make ever new ones
MAX_US = 1 << 40  # a hop of 12 days or more is no time: nothing sums beyond int64
MODULE_BITS = 16  # parts are keyed `number << MODULE_BITS | module`
_VALUE = itemgetter(1)
_TIME_CHARS = "0123456789us"  # a line's head is the line without these at its end


@dataclass(frozen=True)
class Parts:
    """Each module's part of each call (or transaction) of a batch: one entry per (call, module) that has
    one, sorted by call, then module. `traced` says per call whether any line could be read."""

    call: np.ndarray  # int64: the call's index in the batch
    module: np.ndarray  # int64: TraceReader.modules index
    us: np.ndarray  # int64: the module's time in the call
    hops: np.ndarray  # int64: the hops it took (0 for the gateway)
    traced: np.ndarray  # bool, per call


class TraceReader:
    """Reads batches of calls' lines into Parts; remembers line heads, paths and modules across batches."""

    def __init__(self) -> None:
        self.modules: list[str] = [GATEWAY]  # Parts.module -> name
        self._module_index: dict[str, int] = {GATEWAY: 0}
        self._forget()

    def _forget(self) -> None:
        """Start the heads and paths afresh (their numbers go together; the modules' stay)."""
        self._paths: dict[str, int] = {}  # a URL path -> its number
        self._heads: dict[str, int] = {}  # a line's head (all before its time) -> its number
        self._head_module: list[int] = []  # head number -> module index (-1: not Okapi's format)
        self._head_path: list[int] = []  # head number -> path number
        self._head_arrays = (np.zeros(0, dtype=np.int64),) * 2  # both as arrays, for the heads known then

    def read(self, times_ms: Sequence[float], fields: Sequence) -> Parts:
        """The parts of calls that took `times_ms` and were answered with trace `fields`
        (okapi_trace.Traced), in their order."""
        if set(map(type, fields)) != {list}:  # a field of one line, or none: as a list too
            fields = [[] if field is None else [field] if field.__class__ is tuple else field for field in fields]
        lines = list(map(_VALUE, chain.from_iterable(fields)))
        response_us = (np.array(times_ms, dtype=np.float64) * 1000.0 + 0.5).astype(np.int64)
        return self.read_lines(lines, list(map(len, fields)), response_us)

    def read_lines(self, lines: list[str], counts: list[int], response_us: np.ndarray) -> Parts:
        """The parts of calls whose lines are `lines`, `counts[i]` of them the i-th call's, which took
        `response_us[i]`."""
        n = len(counts)
        if len(self._heads) > MAX_HEADS:  # paths come from heads: never more of them
            self._forget()
        heads = list(map(str.rstrip, lines, repeat(_TIME_CHARS)))  # "<METHOD> <module id> <URL> : <status> "
        us = _micros(" ".join(map(str.removeprefix, lines, heads)), len(lines))
        codes = list(map(self._heads.get, heads))
        if None in codes:
            self._learn(codes, heads)
        head_module, head_path = self._arrays()
        at = np.array(codes, dtype=np.int64)
        module, path = head_module[at], head_path[at]
        call = np.repeat(np.arange(n), counts)
        readable = (us >= 0) & (module >= 0)
        if not readable.all():
            call, module, path, us = call[readable], module[readable], path[readable], us[readable]
        serving = np.flatnonzero(np.append(call[1:] != call[:-1], True)) if len(call) else call  # each call's last line
        traced = np.zeros(n, dtype=bool)
        traced[call[serving]] = True
        chain_path = np.full(n, -1, dtype=np.int64)
        chain_path[call[serving]] = path[serving]
        own = path == chain_path[call]  # a hop of the request's own chain
        made = ~own  # calls the serving module made
        called = np.bincount(call[made], weights=us[made], minlength=n).astype(np.int64)
        part = us.copy()
        part[serving] = np.maximum(us[serving] - called[call[serving]], 0)
        gateway = response_us - np.bincount(call[own], weights=us[own], minlength=n).astype(np.int64)
        rest = np.flatnonzero(traced & (gateway > 0))
        none = np.zeros(len(rest), dtype=np.int64)  # the gateway is module 0, and takes no hop
        return _added(np.concatenate((call, rest)), np.concatenate((module, none)),
                      np.concatenate((part, gateway[rest])), np.concatenate((np.ones(len(part), dtype=np.int64), none)),
                      traced)

    def _learn(self, codes: list[int | None], heads: list[str]) -> None:
        """Number the heads not seen before in `codes` (and remember them); a head that is not Okapi's
        `<METHOD> <module id> <URL> : <status> ` gets module -1."""
        for i in [i for i, code in enumerate(codes) if code is None]:
            head = heads[i]
            code = self._heads.get(head)
            if code is None:
                code = self._heads[head] = len(self._head_path)
                words = head[:-1].split(" ")
                okapis = head.endswith(" ") and len(words) == 5 and words[3] == ":"
                self._head_module.append(self._module(module_name(words[1])) if okapis else -1)
                self._head_path.append(self._path_number(_path(words[2])) if okapis else -1)
            codes[i] = code

    def _path_number(self, path: str) -> int:
        number = self._paths.get(path)
        if number is None:
            number = self._paths[path] = len(self._paths)
        return number

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The heads' modules and paths as arrays (made again when heads were learnt since)."""
        if len(self._head_arrays[0]) != len(self._head_module):
            self._head_arrays = (np.array(self._head_module, dtype=np.int64), np.array(self._head_path, dtype=np.int64))
        return self._head_arrays

    def _module(self, name: str) -> int:
        index = self._module_index.get(name)
        if index is None:
            index = self._module_index[name] = len(self.modules)
            self.modules.append(name)
        return index


def summed(parts: Parts, first: np.ndarray, end: np.ndarray) -> Parts:
    """The parts of groups of consecutive calls (a transaction's: calls first[i] up to end[i]), each module's
    summed over the group's calls; Parts.call is then the group's index."""
    if ((end - first) == 1).all() and (first[1:] > first[:-1]).all():  # one call each, none twice: its parts
        group = np.full(len(parts.traced), -1, dtype=np.int64)
        group[first] = np.arange(len(first))
        of = group[parts.call]
        kept = of >= 0
        return Parts(of[kept], parts.module[kept], parts.us[kept], parts.hops[kept], parts.traced[first])
    bounds = np.searchsorted(parts.call, np.stack((first, end)))  # parts are sorted by call
    lengths = bounds[1] - bounds[0]
    group = np.repeat(np.arange(len(first)), lengths)
    index = np.arange(len(group)) - np.repeat(np.cumsum(lengths) - lengths, lengths) + np.repeat(bounds[0], lengths)
    return _added(group, parts.module[index], parts.us[index], parts.hops[index],
                  np.bincount(group, minlength=len(first)) > 0)


def _added(number: np.ndarray, module: np.ndarray, us: np.ndarray, hops: np.ndarray, traced: np.ndarray) -> Parts:
    """Parts of the (call or group number, module) pairs given, each pair's µs and hops added up."""
    unique, where = np.unique(number << MODULE_BITS | module, return_inverse=True)
    size = len(unique)
    return Parts(unique >> MODULE_BITS, unique & ((1 << MODULE_BITS) - 1),
                 np.bincount(where, weights=us, minlength=size).astype(np.int64),
                 np.bincount(where, weights=hops, minlength=size).astype(np.int64), traced)


def breakdown(lines: list[str], response_us: int) -> dict[str, tuple[int, int]] | None:
    """Each module's (µs, hops) in one response; None when no line can be read (Okapi without trace
    headers, Kong, a proxy that drops them)."""
    reader = TraceReader()
    parts = reader.read_lines(lines, [len(lines)], np.array([response_us], dtype=np.int64))
    if not parts.traced[0]:
        return None
    return {reader.modules[m]: (us, hops) for m, us, hops in zip(parts.module.tolist(), parts.us.tolist(), parts.hops.tolist())}


_DIGITS = re.compile(r"[0-9]{1,12}")  # below MAX_US


def _micros(times: str, n: int) -> np.ndarray:
    """Each of the `n` space-separated `<n>us` of `times` as n; -1 for anything else (its line then counts for
    nothing)."""
    digits = times.replace("us", "")
    bare = digits.replace(" ", "")
    if times.count("us") == n and times.count("us ") == n - 1 and times.endswith("us") and bare.isascii() \
            and bare.isdigit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # a stray token: the count tells
            us = np.fromstring(digits, dtype=np.int64, sep=" ")
        if len(us) == n and us.max() < MAX_US:
            return us
    return np.array([int(t[:-2]) if t.endswith("us") and _DIGITS.fullmatch(t, 0, len(t) - 2) else -1
                     for t in times.split(" ")] if n else [], dtype=np.int64)


def _path(url: str) -> str:
    """A line's URL's path (after scheme and host), Okapi's ".." for a cut query string dropped."""
    scheme = url.find("//")
    start = url.find("/", scheme + 2) if scheme >= 0 else 0
    path = url[start:] if start >= 0 else "/"
    return path[:-2] if path.endswith("..") else path
