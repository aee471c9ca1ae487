"""Reading the X-Okapi-Trace lines of many API calls at once (`--trace`), by folioperf.okapi_trace's rules.

A --trace run reads every response's lines, so the reading must cost next to nothing per call. It comes in
two steps. A few calls at a time (folioperf.metrics queues 32), `take` turns their lines into numbers, each
line's head (all but its time) looked up in a cache, and one string of their times: little of a response
stays alive, as a thousand calls' lines held for a batch slow the whole generator (its memory goes cold)
by more than reading them costs. Then `read` parses all those times at once and works out, with numpy over
all the calls taken, what follows from the lines: the serving module, the calls it made, the gateway's
rest. A line that is not Okapi's `<METHOD> <module id> <URL> : <status> <µs>us` counts for nothing; a
response with no readable line is untraced.
"""

from __future__ import annotations

import re
import warnings
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate, chain, repeat
from operator import itemgetter

import numpy as np

from folioperf.metrics import TRANSACTION
from folioperf.okapi_trace import GATEWAY, HEADER, Traced, module_name

MAX_HEADS = 50_000  # line heads remembered: ids in URLs make ever new ones
MAX_US = 1 << 40  # a hop of 12 days or more is no time: nothing sums beyond int64
MODULE_BITS = 16  # parts are keyed `number << MODULE_BITS | module`
_VALUE = itemgetter(1)
_TIME_CHARS = "0123456789us"  # a line's head is the line without these at its end
Scanned = tuple[bytes, ...]  # `scan`'s: rows, ms, counts, codes, us; transaction rows, firsts, ends


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
        self._counts: list[bytes] = []  # each take's calls: their numbers of lines (packed int64, as `scan` gives)
        self._codes: list[bytes] = []  # ... their lines' heads' numbers
        self._us: list[bytes] = []  # ... and their lines' µs (-1: not "<µs>us")
        self._forget()

    def _forget(self) -> None:
        """Start the heads afresh (the modules stay)."""
        self._heads: dict[str, int] = {}  # a line's head (all before its time) -> its number
        self._head_module = array("q")  # head number -> module index (-1: not Okapi's format)
        self._head_path = array("q")  # head number -> its URL path's hash

    def take(self, groups: list[list[Traced]], names: list[str | None], base: int,
             rows: dict[str, dict[str, int]], learn_row: Callable[[str, str], int]) -> Scanned:
        """The next calls, in groups (a transaction's, when it has a name): keeps their lines, as numbers, until
        read; gives the rest of `scan`'s arrays: each call's row and response ms, and each transaction's row,
        first call and end, the calls numbered from `base` on (rows[type][name], or learn_row's numbers)."""
        call_rows, call_ms, counts, codes, us, *transactions = scan(groups, names, base, TRANSACTION, rows,
                                                                     self._heads, learn_row, self._learn)
        self._counts.append(counts)
        self._codes.append(codes)
        self._us.append(us)
        return call_rows, call_ms, *transactions

    def clear(self) -> None:
        """Forget the calls taken and not read."""
        self._counts, self._codes, self._us = [], [], []

    def read(self, response_us: np.ndarray) -> Parts:
        """The parts of the calls taken since the last read (or clear), in their order; they took `response_us`."""
        counts, codes, us = (np.frombuffer(b"".join(chunks), dtype=np.int64) for chunks in (self._counts, self._codes,
                                                                                         self._us))
        n = len(counts)
        self.clear()
        module, path = _looked_up(self._head_module, codes), _looked_up(self._head_path, codes)
        if len(self._heads) > MAX_HEADS:  # the numbers were read: start afresh
            self._forget()
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

    def read_lines(self, lines: list[str], counts: list[int], response_us: np.ndarray) -> Parts:
        """The parts of calls whose lines are `lines`, `counts[i]` of them the i-th call's, which took
        `response_us[i]` (with no call taken before)."""
        bounds = [0, *accumulate(counts)]
        self.take([[("", "", 0.0, [(HEADER, line) for line in lines[a:b]]) for a, b in zip(bounds, bounds[1:])]],
                  [None], 0, {}, lambda _type, _name: 0)
        return self.read(response_us)

    def _learn(self, head: str) -> int:
        """Number a head not seen before (and remember it); one that is not Okapi's
        `<METHOD> <module id> <URL> : <status> ` gets module -1. A path with an id in it makes every line's head new
        (`GET /inventory/instances/{id}`), so this is lean: paths are told apart by their str hash (64 bits:
        two paths of one response taken for one another about once in 10**19), not numbered in a dict."""
        code = self._heads.get(head)
        if code is not None:
            return code
        code = self._heads[head] = len(self._head_path)
        words = head[:-1].split(" ")
        if len(words) != 5 or words[3] != ":" or not head.endswith(" "):
            self._head_module.append(-1)
            self._head_path.append(-1)
            return code
        module = self._module_ids.get(words[1])
        if module is None:
            module = self._module_ids[words[1]] = self._module(module_name(words[1]))
        self._head_module.append(module)
        self._head_path.append(hash(_path(words[2])))
        return code

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
                   rows: dict[str, dict[str, int]], heads: dict[str, int], learn_row: Callable[[str, str], int],
                   learn_head: Callable[[str], int]) -> Scanned:
    """`scan` in Python (folioperf/_tracescan.c has it in C, and says what it gives): for an install that could
    not build the C, and the reference its tests hold the C to. learn_row and learn_head number what `rows`
    and `heads` do not (and may be asked twice for one)."""
    calls = list(chain.from_iterable(groups))
    bounds = list(accumulate(map(len, groups), initial=base))
    transactions = [(name, first, end) for name, first, end in zip(names, bounds, bounds[1:]) if name is not None]
    if transactions:
        of_transaction = rows.get(transaction, {})
        t_names, t_first, t_end = zip(*transactions)
        t_rows = [of_transaction.get(name) if name in of_transaction else learn_row(transaction, name)
                  for name in t_names]
    else:
        t_rows, t_first, t_end = [], (), ()
    if not calls:
        return b"", b"", b"", b"", b"", *(array("q", column).tobytes() for column in (t_rows, t_first, t_end))
    types, call_names, times_ms, fields = zip(*calls)
    call_rows = list(map(dict.get, map(rows.get, types, repeat({})), call_names))
    if None in call_rows:
        call_rows = [learn_row(t, name) if row is None else row for row, t, name in zip(call_rows, types, call_names)]
    lines = list(map(_VALUE, chain.from_iterable(fields)))
    line_heads = list(map(str.rstrip, lines, repeat(_TIME_CHARS)))  # "<METHOD> <module id> <URL> : <status> "
    codes = list(map(heads.get, line_heads))
    if None in codes:
        codes = [learn_head(head) if code is None else code for code, head in zip(codes, line_heads)]
    us = _micros(" ".join(map(str.removeprefix, lines, line_heads)), len(lines))  # "<µs>us" each
    return (array("q", call_rows).tobytes(), array("d", times_ms).tobytes(), array("q", map(len, fields)).tobytes(),
            array("q", codes).tobytes(), us.tobytes(), *(array("q", column).tobytes() for column in (t_rows, t_first,
                                                                                                   t_end)))


try:
    from folioperf._tracescan import scan
except ImportError:  # installed where no C compiler was at hand: the same, 2 to 3 times the cost per call
    scan = scan_in_python


def column(values: array) -> np.ndarray:
    """A copy of an array('q') as int64 (the array stays free to grow, or to be cleared)."""
    return np.frombuffer(values, dtype=np.int64).copy() if len(values) else np.zeros(0, dtype=np.int64)


def _looked_up(table: array, codes: np.ndarray) -> np.ndarray:
    """table[codes] for an array('q') of the heads: read in place, not copied whole first (it holds up to
    MAX_HEADS entries, and a read needs the few its codes name); the table stays free to grow."""
    return np.frombuffer(table, dtype=np.int64)[codes] if len(table) else np.zeros(0, dtype=np.int64)


_DIGITS = re.compile(r"[0-9]+")


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
    return np.array([_token_us(t) for t in times.split(" ")] if n else [], dtype=np.int64)


def _token_us(token: str) -> int:
    """A `<digits>us` token's µs, below MAX_US; -1 for anything else."""
    if not (token.endswith("us") and _DIGITS.fullmatch(token, 0, len(token) - 2)):
        return -1
    us = int(token[:-2])
    return us if us < MAX_US else -1


def _path(url: str) -> str:
    """A line's URL's path (after scheme and host), Okapi's ".." for a cut query string dropped."""
    scheme = url.find("//")
    start = url.find("/", scheme + 2) if scheme >= 0 else 0
    path = url[start:] if start >= 0 else "/"
    return path[:-2] if path.endswith("..") else path
