"""Reading the X-Okapi-Trace lines of many API calls (`--trace`), by folioperf.okapi_trace's rules.

A --trace run reads every response's lines, so the reading must cost next to nothing per call. A few calls
at a time (folioperf.metrics queues 32), `take` hands them to `Tallies.scan`, which reads each call's lines
into each module's part of its time and tallies the parts at once, per (row, module), in C
(folioperf/_tracescan.c; `TalliesInPython` where no C compiler was at hand): nothing of a response stays
alive once taken, and no Python runs per line or per part. `drain` hands the tallies over when the figures
are read or shipped. A line that is not Okapi's `<METHOD> <module id> <URL> : <status> <µs>us` counts for
nothing; a response with no readable line is untraced.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator

from folioperf.histogram import SUB_BUCKET_BITS
from folioperf.okapi_trace import GATEWAY, HEADER, Traced, module_name

MAX_HEADS = 50_000  # TalliesInPython: line heads remembered (ids in URLs make ever new ones)
MAX_US = 1 << 40  # a hop of 12 days or more is no time: nothing sums beyond int64
MODULE_BITS = 16  # tallies are keyed `row << MODULE_BITS | module`
_TIME_CHARS = "0123456789us"  # a line's head is the line without these at its end
Ended = str | list[tuple[str, int, int]] | None  # a group's transactions (Tallies.scan)
Figures = tuple[int, int, int, int, int, dict[int, int]]  # samples, hops, sum, min and max µs, {bucket: count}


class TraceReader:
    """Takes calls' lines as they come into each module's figures per row; numbers modules for good."""

    IN_PYTHON = ("reads the trace lines in Python, at several times the CPU of folioperf's C reader, which its "
                 "install could not build (no C compiler or Python headers): apt-get install gcc python3-dev, "
                 "then install folioperf again")

    def __init__(self) -> None:
        self.modules: list[str] = [GATEWAY]  # a module's number -> its name
        self._module_index: dict[str, int] = {GATEWAY: 0}
        self._module_ids: dict[str, int] = {}  # a module id (its version in it) -> its module's number
        self._tallies = Tallies(SUB_BUCKET_BITS)

    @property
    def in_python(self) -> bool:
        """Whether the lines are read by TalliesInPython (say so: IN_PYTHON)."""
        return isinstance(self._tallies, TalliesInPython)

    def take(self, groups: list[list[Traced]], ended: list[Ended], counted: bool, transaction: str,
             rows: dict[str, dict[str, int]], learn_row: Callable[[str, str], int]) -> tuple[int, int]:
        """The next calls, in groups, and the transactions that ended in each (`Tallies.scan`), tallied: each
        call's parts in its row (rows[type][name], or learn_row's number) if `counted`, each transaction's in
        rows[transaction][name]. Gives how many counted calls had readable lines, and how many had none."""
        return self._tallies.scan(groups, ended, counted, transaction, rows, self._module_ids, learn_row,
                                  self._learn_module)

    def drain(self) -> Iterator[tuple[int, str, Figures]]:
        """Each (row, module)'s figures taken since the last drain (buckets as folioperf.metrics.Tally's), which
        are forgotten here."""
        for key, *figures in self._tallies.drain():
            yield key >> MODULE_BITS, self.modules[key & ((1 << MODULE_BITS) - 1)], tuple(figures)

    def clear(self) -> None:
        """Forget the calls taken."""
        self._tallies.drain()

    def _learn_module(self, module_id: str) -> int:
        """The number of a module id's module (`mod-users-19.5.4`: mod-users), numbered now if the module has
        none yet (GATEWAY is 0), remembered for the id."""
        name = module_name(module_id)
        module = self._module_index.get(name)
        if module is None:
            if len(self.modules) >= 1 << MODULE_BITS:
                raise ValueError(f"--trace tells {len(self.modules)} modules apart at most")
            module = self._module_index[name] = len(self.modules)
            self.modules.append(name)
        self._module_ids[module_id] = module
        return module


def breakdown(lines: list[str], response_us: int) -> dict[str, tuple[int, int]] | None:
    """Each module's (µs, hops) in one response; None when no line can be read (Okapi without trace
    headers, Kong, a proxy that drops them)."""
    reader = TraceReader()
    traced, _ = reader.take([[("", "", response_us / 1000, [(HEADER, line) for line in lines])]], [None], True, "",
                            {}, lambda _type, _name: 0)
    return {module: (sum_us, hops) for _, module, (_, hops, sum_us, *_) in reader.drain()} if traced else None


class TalliesInPython:
    """`Tallies` in Python (folioperf/_tracescan.c has it in C, and says what it does): for an install that
    could not build the C, and the reference its tests hold the C to. Reading a line is slow in Python: a
    line's head (all before its time) is remembered with its module and path (`learn_head`). Each part is
    appended to three arrays, which numpy folds into each key's figures every FOLD_PARTS parts and at a
    drain: a part tallied in Python one by one would cost several times that."""

    FOLD_PARTS = 100_000

    def __init__(self, sub_bucket_bits: int) -> None:
        import numpy  # noqa: PLC0415  (here: the C reader needs none)

        self._np = numpy
        self._bits = sub_bucket_bits
        self._parts = array("q"), array("q"), array("q")  # key, µs, hops of each part not folded yet
        self._folded: dict[int, list] = {}  # key -> [samples, hops, sum, min, max, {bucket: count}]
        self._heads: dict[str, tuple[int, int]] = {}  # a line's head -> (module, path hash)

    def scan(self, groups: list[list[Traced]], ended: list[Ended], counted: bool, transaction: str,
             rows: dict[str, dict[str, int]], module_ids: dict[str, int], learn_row: Callable[[str, str], int],
             learn_module: Callable[[str], int]) -> tuple[int, int]:
        def row_of(request_type: str, name: str) -> int:
            of_type = rows.get(request_type)
            return of_type[name] if of_type is not None and name in of_type else learn_row(request_type, name)

        if len(self._heads) > MAX_HEADS:  # ids in paths: start afresh
            self._heads = {}
        heads = self._heads
        keys, times, hop_counts = (column.append for column in self._parts)
        traced = untraced = 0
        for calls, its in zip(groups, ended, strict=True):
            spans = [] if its is None else [(its, 0, len(calls))] if its.__class__ is str else its
            spans = [(row_of(transaction, name) << MODULE_BITS, first, end) for name, first, end in spans]
            parts = []
            for request_type, name, ms, field in calls:
                key = row_of(request_type, name) << MODULE_BITS if counted else 0
                lines = [] if field is None else [field] if field.__class__ is tuple else field
                parts.append(_parts([line for _, line in lines], int(ms * 1000.0 + 0.5), heads, module_ids,
                                    learn_module))
                if counted:
                    traced, untraced = traced + bool(parts[-1]), untraced + (not parts[-1])
                    for module, (us, hops) in parts[-1].items():
                        keys(key | module), times(us), hop_counts(hops)
            for key, first, end in spans:
                summed: dict[int, tuple[int, int]] = {}
                for call in parts[first:end]:
                    for module, (us, hops) in call.items():
                        total, n = summed.get(module, (0, 0))
                        summed[module] = (total + us, n + hops)
                for module, (us, hops) in summed.items():
                    keys(key | module), times(us), hop_counts(hops)
        if len(self._parts[0]) >= self.FOLD_PARTS:
            self._fold()
        return traced, untraced

    def drain(self) -> list[tuple[int, int, int, int, int, int, dict[int, int]]]:
        self._fold()
        drained = [(key, *figures) for key, figures in self._folded.items()]
        self._folded = {}
        return drained

    def _fold(self) -> None:
        """The parts appended, into each key's figures: its buckets the values cut to sub_bucket_bits
        significant bits (folioperf.histogram.bucket_of), as folioperf.metrics.Tally.time has them."""
        np = self._np
        keys, us, hops = (np.frombuffer(column, dtype=np.int64) for column in self._parts)
        if not len(keys):
            return
        us = np.maximum(us, 0)
        shift = np.maximum(np.frexp(us)[1] - self._bits, 0)  # frexp's exponent is the bit length, exact below 2**53
        bucket = us >> shift << shift
        unique, index = np.unique(keys, return_inverse=True)
        size = len(unique)
        figures = [np.bincount(index, minlength=size), np.zeros(size, np.int64), np.zeros(size, np.int64),
                   np.full(size, np.iinfo(np.int64).max), np.zeros(size, np.int64)]
        np.add.at(figures[1], index, hops)  # in int64: a float's bincount weights would round big sums
        np.add.at(figures[2], index, us)
        np.minimum.at(figures[3], index, us)
        np.maximum.at(figures[4], index, us)
        order = np.lexsort((bucket, index))  # each key's buckets, in a run
        index, bucket = index[order], bucket[order]
        first = np.flatnonzero(np.append(True, (index[1:] != index[:-1]) | (bucket[1:] != bucket[:-1])))
        counts = np.diff(np.append(first, len(index))).tolist()
        bounds = np.searchsorted(index[first], np.arange(size + 1)).tolist()
        buckets = bucket[first].tolist()
        self._parts = array("q"), array("q"), array("q")
        for k, (key, samples, hop_sum, sum_us, min_us, max_us) in enumerate(zip(unique.tolist(),
                                                                                 *(f.tolist() for f in figures))):
            new = dict(zip(buckets[bounds[k]:bounds[k + 1]], counts[bounds[k]:bounds[k + 1]]))
            kept = self._folded.get(key)
            if kept is None:
                self._folded[key] = [samples, hop_sum, sum_us, min_us, max_us, new]
                continue
            kept[0] += samples
            kept[1] += hop_sum
            kept[2] += sum_us
            kept[3], kept[4] = min(kept[3], min_us), max(kept[4], max_us)
            for value, count in new.items():
                kept[5][value] = kept[5].get(value, 0) + count


def _learn_head(head: str, heads: dict[str, tuple[int, int]], module_ids: dict[str, int],
               learn_module: Callable[[str], int]) -> tuple[int, int]:
    """A head not seen before: its module's number (-1 if it is not Okapi's `<METHOD> <module id> <URL> :
    <status> `) and its URL path's hash, remembered in heads. A path with an id in it makes every line's head
    new (`GET /inventory/instances/{id}`), so paths are told apart by their str hash (64 bits: two paths of one
    response taken for one another about once in 10**19), not numbered in a dict."""
    words = head[:-1].split(" ")
    if len(words) != 5 or words[3] != ":" or not head.endswith(" "):
        known = heads[head] = (-1, -1)
        return known
    module = module_ids.get(words[1])
    known = heads[head] = (learn_module(words[1]) if module is None else module, hash(_path(words[2])))
    return known


def _parts(lines: list[str], response_us: int, heads: dict[str, tuple[int, int]], module_ids: dict[str, int],
           learn_module: Callable[[str], int]) -> dict[int, tuple[int, int]]:
    """One response's parts: module -> (µs, hops), by folioperf.okapi_trace's rules; empty if no line is read."""
    hops = []
    for line in lines:
        head = line.rstrip(_TIME_CHARS)  # "<METHOD> <module id> <URL> : <status> "
        us = _token_us(line[len(head):])
        if us < 0:
            continue
        module, path = heads[head] if head in heads else _learn_head(head, heads, module_ids, learn_module)
        if module >= 0:
            hops.append((module, path, us))
    if not hops:
        return {}
    chain_path = hops[-1][1]  # the serving module's: its line comes last
    made = sum(us for _, path, us in hops if path != chain_path)
    parts: dict[int, tuple[int, int]] = {}
    for k, (module, _, us) in enumerate(hops):
        total, n = parts.get(module, (0, 0))
        parts[module] = (total + (max(us - made, 0) if k == len(hops) - 1 else us), n + 1)
    gateway = response_us - sum(us for _, path, us in hops if path == chain_path)
    if gateway > 0:  # module 0, the gateway's; no hop
        total, n = parts.get(0, (0, 0))
        parts[0] = (total + gateway, n)
    return parts


try:
    from folioperf._tracescan import Tallies
except ImportError:  # installed where no C compiler was at hand: the same, at several times the cost per call
    Tallies = TalliesInPython


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
