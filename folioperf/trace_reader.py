"""Reading the X-Okapi-Trace lines of many API calls (`--trace`), by folioperf.okapi_trace's rules.

A --trace run reads every response's lines, so the reading must cost next to nothing per call. A few calls
at a time (folioperf.metrics queues 32), `take` hands them to `scan`, which reads each call's lines into
each module's part of its time at once, in C (folioperf/_tracescan.c; `scan_in_python` where no C compiler
was at hand): little of a response stays alive, as a thousand calls' lines held for a batch slow the whole
generator (its memory goes cold) by more than reading them costs. A line's head (all but its time) is looked
up in a cache that gives its module and path. Then `read` gives the parts of all the calls taken at once,
for numpy to add up and tally. A line that is not Okapi's `<METHOD> <module id> <URL> : <status> <µs>us`
counts for nothing; a response with no readable line is untraced.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate, chain

import numpy as np

from folioperf.okapi_trace import GATEWAY, HEADER, Traced, module_name

MAX_HEADS = 50_000  # line heads remembered: ids in URLs make ever new ones
MAX_US = 1 << 40  # a hop of 12 days or more is no time: nothing sums beyond int64
MODULE_BITS = 16  # parts are keyed `number << MODULE_BITS | module`
_TIME_CHARS = "0123456789us"  # a line's head is the line without these at its end
Scanned = tuple[bytes, ...]  # `scan`'s: rows; part calls, modules, µs, hops; traced; transaction rows, firsts, ends


@dataclass(frozen=True)
class Parts:
    """Each module's part of each call (or transaction) read: one entry per (call, module) that has one,
    sorted by call, then module. `traced` says per call whether any line could be read."""

    call: np.ndarray  # int64: the call's index among those read
    module: np.ndarray  # int64: TraceReader.modules index
    us: np.ndarray  # int64: the module's time in the call
    hops: np.ndarray  # int64: the hops it took (0 for the gateway)
    traced: np.ndarray  # bool, per call


class TraceReader:
    """Takes calls' lines as they come, reads them into Parts many calls at a time; remembers line heads and
    modules across reads."""

    def __init__(self) -> None:
        self.modules: list[str] = [GATEWAY]  # Parts.module -> name
        self._module_index: dict[str, int] = {GATEWAY: 0}
        self._module_ids: dict[str, int] = {}  # a module id (its version in it) -> its module's index
        self._heads: dict[str, tuple[int, int]] = {}  # a line's head (all before its time) -> (module, path hash)
        self._parts: list[tuple[bytes, ...]] = []  # each take's parts (call, module, µs, hops), packed as `scan` gives
        self._traced: list[bytes] = []  # ... and its calls' traced bytes

    def take(self, groups: list[list[Traced]], names: list[str | None], base: int, transaction: str,
             rows: dict[str, dict[str, int]], learn_row: Callable[[str, str], int]) -> tuple[bytes, ...]:
        """The next calls, in groups (a transaction's, when it has a name), numbered from `base` on: keeps their
        parts until read; gives each call's row (rows[type][name], or learn_row's number), and each
        transaction's row (rows[transaction][name]), first call and end, packed int64."""
        call_rows, *parts, traced, transaction_rows, first, end = scan(groups, names, base, transaction, rows,
                                                                         self._heads, learn_row, self._learn)
        self._parts.append(parts)
        self._traced.append(traced)
        return call_rows, transaction_rows, first, end

    def clear(self) -> None:
        """Forget the calls taken and not read."""
        self._parts, self._traced = [], []

    def read(self) -> Parts:
        """The parts of the calls taken since the last read (or clear), numbered from the `base` of the first."""
        call, module, us, hops = (np.frombuffer(b"".join(column), dtype=np.int64) for column in zip(*self._parts)) \
            if self._parts else (np.zeros(0, dtype=np.int64),) * 4
        traced = np.frombuffer(b"".join(self._traced), dtype=bool)
        self.clear()
        if len(self._heads) > MAX_HEADS:  # ids in paths: start afresh (the modules stay)
            self._heads = {}
        return Parts(call, module, us, hops, traced)

    def read_lines(self, lines: list[str], counts: list[int], response_us: np.ndarray) -> Parts:
        """The parts of calls whose lines are `lines`, `counts[i]` of them the i-th call's, which took
        `response_us[i]` (with no call taken before)."""
        bounds = [0, *accumulate(counts)]
        self.take([[("", "", us / 1000, [(HEADER, line) for line in lines[a:b]])
                    for a, b, us in zip(bounds, bounds[1:], response_us.tolist())]], [None], 0, "", {},
                  lambda _type, _name: 0)
        return self.read()

    def _learn(self, head: str) -> tuple[int, int]:
        """A head not seen before: its module's number (-1 if it is not Okapi's
        `<METHOD> <module id> <URL> : <status> `) and its URL path's hash, remembered. A path with an id in it
        makes every line's head new (`GET /inventory/instances/{id}`), so this is lean: paths are told apart by
        their str hash (64 bits: two paths of one response taken for one another about once in 10**19), not
        numbered in a dict."""
        known = self._heads.get(head)
        if known is not None:
            return known
        words = head[:-1].split(" ")
        if len(words) != 5 or words[3] != ":" or not head.endswith(" "):
            self._heads[head] = (-1, -1)
            return -1, -1
        module = self._module_ids.get(words[1])
        if module is None:
            module = self._module_ids[words[1]] = self._module(module_name(words[1]))
        known = self._heads[head] = (module, hash(_path(words[2])))
        return known

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


def scan_in_python(groups: list[list[Traced]], names: list[str | None], base: int, transaction: str,
                   rows: dict[str, dict[str, int]], heads: dict[str, tuple[int, int]],
                   learn_row: Callable[[str, str], int], learn_head: Callable[[str], tuple[int, int]]) -> Scanned:
    """`scan` in Python (folioperf/_tracescan.c has it in C, and says what it gives): for an install that could
    not build the C, and the reference its tests hold the C to. learn_row and learn_head number what `rows`
    and `heads` do not (and may be asked twice for one)."""
    calls = list(chain.from_iterable(groups))
    bounds = list(accumulate(map(len, groups), initial=base))
    transactions = [(name, first, end) for name, first, end in zip(names, bounds, bounds[1:]) if name is not None]
    t_names, t_first, t_end = zip(*transactions) if transactions else ((), (), ())
    of_transaction = rows.get(transaction, {})
    t_rows = [of_transaction[name] if name in of_transaction else learn_row(transaction, name) for name in t_names]
    call_rows, part_call, part_module, part_us, part_hops, traced = [], [], [], [], [], []
    for index, (request_type, name, ms, field) in enumerate(calls, base):
        of_type = rows.get(request_type, {})
        call_rows.append(of_type[name] if name in of_type else learn_row(request_type, name))
        hops = []
        for _, line in field:
            head = line.rstrip(_TIME_CHARS)  # "<METHOD> <module id> <URL> : <status> "
            module, path = heads[head] if head in heads else learn_head(head)
            us = _token_us(line[len(head):])
            if us >= 0 and module >= 0:
                hops.append((module, path, us))
        traced.append(bool(hops))
        if not hops:
            continue
        chain_path = hops[-1][1]  # the serving module's: its line comes last
        made = sum(us for _, path, us in hops if path != chain_path)
        parts: dict[int, tuple[int, int]] = {}
        for module, _, us in hops[:-1]:
            total, n = parts.get(module, (0, 0))
            parts[module] = (total + us, n + 1)
        total, n = parts.get(hops[-1][0], (0, 0))
        parts[hops[-1][0]] = (total + max(hops[-1][2] - made, 0), n + 1)
        gateway = int(ms * 1000.0 + 0.5) - sum(us for _, path, us in hops if path == chain_path)
        if gateway > 0:  # module 0, the gateway's; no hop
            total, n = parts.get(0, (0, 0))
            parts[0] = (total + gateway, n)
        for module in sorted(parts):
            part_call.append(index)
            part_module.append(module)
            part_us.append(parts[module][0])
            part_hops.append(parts[module][1])
    return (*(array("q", column).tobytes() for column in (call_rows, part_call, part_module, part_us, part_hops)),
            bytes(traced), *(array("q", column).tobytes() for column in (t_rows, t_first, t_end)))


try:
    from folioperf._tracescan import scan
except ImportError:  # installed where no C compiler was at hand: the same, at about 6 times the cost per call
    scan = scan_in_python


def column(values: array) -> np.ndarray:
    """An array('q') as int64, in place, not copied: for one no longer grown (a view keeps it from resizing)."""
    return np.frombuffer(values, dtype=np.int64)


def _token_us(token: str) -> int:
    """A `<digits>us` token's µs, below MAX_US; -1 for anything else."""
    digits = token[:-2]
    if not (token.endswith("us") and digits.isascii() and digits.isdigit()):
        return -1
    us = int(digits)
    return us if us < MAX_US else -1


def _path(url: str) -> str:
    """A line's URL's path (after scheme and host), Okapi's ".." for a cut query string dropped."""
    scheme = url.find("//")
    start = url.find("/", scheme + 2) if scheme >= 0 else 0
    path = url[start:] if start >= 0 else "/"
    return path[:-2] if path.endswith("..") else path
