"""Latency metrics that are right (design decision 4), recorded from Locust's `request` events.

Per (request type, name) folioperf keeps a count, failures, expected failures, the exact sum, min and max
and an HdrHistogram-layout histogram (folioperf.histogram). Percentiles are nearest-rank percentiles read
from it, within 0.1 % (and 1 µs) of the exact sample percentiles, also after merging workers.

Samples are tallied per wall-clock aligned 10-second window (by completion time), so windows of several
workers line up; an entry's totals are the sum of its windows. A window settles a minute after it closed
(workers' reports have come in by then): its figures go into the totals, and its row (count, failures,
average, 50th and 95th) to a `WindowSink` — the results directory, as it settles — and leaves memory, so a
day-long run holds what the live view and the totals need, whatever its length. A report that comes later
still for a settled window adds to the totals, and its own row (count, failures, average) goes to the sink. A
worker ships what it recorded since its last report (`take_report`), numbered; the master merges reports
(`merge_report`) and counts any that never arrived. Who sends a report when, and when the master has them all,
is folioperf.distributed's business.

Request types: API calls are recorded under their HTTP method; business transactions under "Transaction";
the open model's latencies from the scheduled start under "Scheduled"; a task's uncaught exception outside
any transaction under "Error". A transaction recorded inside another (flagged `nested` in its context) is
named in `Snapshot.nested`: counting transactions, it is not counted again.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from typing import Any, NamedTuple, Protocol, Self, overload

from folioperf.errors import FolioperfError
from folioperf.histogram import (
    Histogram,
    decode_histogram,
    encode_histogram,
    pack_buckets,
    percentiles_us,
    unpack_buckets,
)
from folioperf.okapi_trace import Traced, breakdown, lines_of

logger = logging.getLogger(__name__)

TRANSACTION = "Transaction"  # request type of business transactions
SCHEDULED = "Scheduled"  # request type of open-model latencies measured from the scheduled start
ERROR = "Error"  # request type of a task's exception raised outside any transaction
SCRIPT = "Script"  # request type of a PTF plan's JSR223 sampler: no request, a sample JMeter counts and paces
NESTED = "nested"  # request context flag: a transaction that ran inside another (renew's "Renew loans")
WINDOW_S = 10
PERCENTILES = (0.50, 0.75, 0.90, 0.95, 0.99)
ERROR_MESSAGE_LIMIT = 300

_NO_MIN = 1 << 62  # min_us of a tally without timed samples
# Windows older than this (on the master's clock) settle: their rows go to the sink (see the module docstring)
_SETTLE_AFTER_WINDOWS = 6
_JWT = re.compile(r"eyJ[\w-]{4,}\.[\w-]{4,}\.[\w-]*")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def locust_bucket(response_time: float) -> int:
    """Key of Locust's own response-time histogram (replaces `locust.stats.bucket_response_time`):
    3 significant digits, 1 ms below one second, where Locust's default keeps 2 (up to ±5 %). Locust's
    web UI and HTML report then agree with folioperf's percentiles within max(1 ms, 0.5 %)."""
    if response_time < 1000:
        return round(response_time)
    return int(round(response_time, 3 - len(str(int(response_time)))))


def failure_message(exception: BaseException | str) -> str:
    """One line naming what failed: no memory addresses, no JWT, at most ERROR_MESSAGE_LIMIT characters."""
    text = exception if isinstance(exception, str) else str(exception) or type(exception).__name__
    text = _ADDRESS.sub("", _JWT.sub("<token>", " ".join(text.split())))
    if len(text) > ERROR_MESSAGE_LIMIT:
        text = text[: ERROR_MESSAGE_LIMIT - 1] + "…"
    return text


# ---------------------------------------------------------------------------------------------------
# Tallies and what a snapshot shows


class Tally:
    """Mergeable figures of one (type, name) in one window: the unit of recording, shipping and merging."""

    __slots__ = ("count", "failures", "expected", "sum_us", "min_us", "max_us", "buckets")

    def __init__(self) -> None:
        self.count = 0
        self.failures = 0
        self.expected = 0
        self.sum_us = 0
        self.min_us = _NO_MIN
        self.max_us = 0
        self.buckets = Histogram()

    def time(self, us: int) -> None:
        """One timed sample (µs) into sum, min, max and histogram; the count is the caller's."""
        if us < 0:
            us = 0
        self.sum_us += us
        if us < self.min_us:
            self.min_us = us
        if us > self.max_us:
            self.max_us = us
        self.buckets.record(us)

    def add(self, other: Tally) -> None:
        self.count += other.count
        self.failures += other.failures
        self.expected += other.expected
        self.sum_us += other.sum_us
        self.min_us = min(self.min_us, other.min_us)
        self.max_us = max(self.max_us, other.max_us)
        self.buckets.add(other.buckets)

    def to_wire(self) -> list[Any]:
        return [self.count, self.failures, self.expected, self.sum_us, self.min_us, self.max_us,
                pack_buckets(self.buckets)]

    @classmethod
    def from_wire(cls, values: Sequence[Any]) -> Self:
        tally = cls()
        tally.count, tally.failures, tally.expected, tally.sum_us, tally.min_us, tally.max_us, packed = values
        tally.buckets = unpack_buckets(packed)
        return tally


class ModuleTally(Tally):
    """One module's time in the responses of one (type, name): `count` responses reached it in `hops` calls;
    each response's time in the module is one sample (`--trace`, folioperf.okapi_trace)."""

    __slots__ = ("hops",)

    def __init__(self) -> None:
        super().__init__()
        self.hops = 0

    def add(self, other: Tally) -> None:
        super().add(other)
        self.hops += getattr(other, "hops", 0)

    def to_wire(self) -> list[Any]:
        return [self.hops, *super().to_wire()]

    @classmethod
    def from_wire(cls, values: Sequence[Any]) -> Self:
        hops, *rest = values
        tally = super().from_wire(rest)
        tally.hops = hops
        return tally


@overload
def _ms(us: float) -> float: ...
@overload
def _ms(us: None) -> None: ...
def _ms(us: float | None) -> float | None:
    return None if us is None else round(us / 1000, 3)


_TYPE_ORDER = {TRANSACTION: 0, SCHEDULED: 1, ERROR: 3, SCRIPT: 4}  # API calls: 2


def entry_order(entry: Entry | Window | ModuleTime | _KeyOrder) -> tuple[int, str, str]:
    """Transactions first, then open-model latencies, then API calls; by name within each."""
    return _TYPE_ORDER.get(entry.type, 2), entry.name, entry.type


@dataclass(frozen=True)
class Entry:
    """One (type, name): counts and latencies in ms. The histogram is encoded or decoded on demand."""

    type: str
    name: str
    count: int
    failures: int
    expected: int
    avg: float | None
    min: float | None
    max: float | None
    p50: float | None
    p75: float | None
    p90: float | None
    p95: float | None
    p99: float | None
    rps: float
    _buckets: Mapping[int, int] | None = field(default=None, repr=False, compare=False)
    _encoded: str | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_tally(cls, type: str, name: str, tally: Tally, duration_s: float) -> Entry:
        timed = tally.min_us != _NO_MIN
        p50, p75, p90, p95, p99 = (
            _ms(v) for v in percentiles_us(tally.buckets, PERCENTILES, tally.min_us, tally.max_us)
        )
        timed_count = tally.buckets.total
        return cls(
            type=type, name=name, count=tally.count, failures=tally.failures, expected=tally.expected,
            avg=_ms(tally.sum_us / timed_count) if timed else None,
            min=_ms(tally.min_us) if timed else None, max=_ms(tally.max_us) if timed else None,
            p50=p50, p75=p75, p90=p90, p95=p95, p99=p99,
            rps=round(tally.count / duration_s, 3) if duration_s > 0 else 0.0,
            _buckets=tally.buckets,
        )

    @cached_property
    def buckets(self) -> Mapping[int, int]:
        """The latency histogram as {bucket's lowest value in µs: count}."""
        if self._buckets is not None:
            return self._buckets
        try:
            return decode_histogram(self._encoded) if self._encoded else {}
        except Exception as exc:  # hdrh raises several kinds for a damaged blob
            raise FolioperfError(f"the histogram of {self.type} {self.name} is damaged: {exc}") from None

    @cached_property
    def histogram(self) -> str:
        """HdrHistogram compressed base64 (µs, 3 significant digits), as stored in stats.json."""
        return self._encoded if self._encoded is not None else encode_histogram(self.buckets)

    def percentile(self, quantile: float) -> float | None:
        """Nearest-rank percentile in ms, e.g. `percentile(0.999)`; None when nothing was timed."""
        if self.min is None or self.max is None:
            return None
        low, high = round(self.min * 1000), round(self.max * 1000)
        return _ms(percentiles_us(self.buckets, (quantile,), low, high)[0])


@dataclass(frozen=True)
class Window:
    """One 10-second window of one (type, name); `start` is the window's wall-clock start (UTC)."""

    start: datetime
    type: str
    name: str
    count: int
    failures: int
    avg: float | None
    p50: float | None
    p95: float | None


@dataclass(frozen=True)
class Failure:
    type: str
    name: str
    error: str
    occurrences: int


@dataclass(frozen=True)
class ModuleTime:
    """One module's part of a transaction's or API call's time (`--trace`): `count` of the entry's responses
    reached the module, with `calls` calls in all; `avg` and `p95` are its time per such response (ms),
    `share` its part of the entry's summed time (0-1)."""

    type: str
    name: str
    module: str
    count: int
    calls: int
    total: float
    avg: float
    p95: float | None  # None for a tally with no timed responses
    share: float | None
    histogram: str = field(default="", repr=False, compare=False)

    @classmethod
    def from_tally(cls, type: str, name: str, module: str, tally: ModuleTally, entry: Tally | None) -> ModuleTime:
        (p95,) = percentiles_us(tally.buckets, (0.95,), tally.min_us, tally.max_us)
        share = round(tally.sum_us / entry.sum_us, 4) if entry is not None and entry.sum_us else None
        return cls(type, name, module, tally.count, tally.hops, _ms(tally.sum_us), _ms(tally.sum_us / tally.count),
                   _ms(p95), share, encode_histogram(tally.buckets))


class EntryLookup:
    """Finding entries by kind, shared by a live snapshot and results read back from disk."""

    entries: tuple[Entry, ...]
    modules: tuple[ModuleTime, ...]

    def entry(self, type: str, name: str) -> Entry | None:
        """The entry of one request type and name, e.g. `entry("Transaction", "Check-out")`."""
        for entry in self.entries:
            if entry.type == type and entry.name == name:
                return entry
        return None

    def transactions(self) -> list[Entry]:
        return [e for e in self.entries if e.type == TRANSACTION]

    def scheduled(self) -> list[Entry]:
        """Open-model latencies measured from each transaction's scheduled start."""
        return [e for e in self.entries if e.type == SCHEDULED]

    def apis(self) -> list[Entry]:
        """API calls (request type = HTTP method)."""
        return [e for e in self.entries if e.type not in _TYPE_ORDER]

    def errors(self) -> list[Entry]:
        """Tasks' exceptions raised outside any transaction, per task."""
        return [e for e in self.entries if e.type == ERROR]

    def scripts(self) -> list[Entry]:
        """The PTF plans' script steps (JSR223 samplers), which JMeter counts as samples."""
        return [e for e in self.entries if e.type == SCRIPT]

    def modules_of(self, type: str, name: str) -> list[ModuleTime]:
        """Where the entry's time went (`--trace`), the largest share first; empty without trace headers."""
        return sorted((m for m in self.modules if m.type == type and m.name == name), key=lambda m: -m.total)


@dataclass(frozen=True)
class Snapshot(EntryLookup):
    """What was measured so far; `duration_s` is the measured time the requests/s are over."""

    duration_s: float
    entries: tuple[Entry, ...]
    windows: tuple[Window, ...]
    failures: tuple[Failure, ...]
    modules: tuple[ModuleTime, ...] = ()
    traced: int = 0  # API responses that carried X-Okapi-Trace lines (--trace)
    untraced: int = 0  # ... and that carried none
    scheduled_from: Mapping[str, float] = field(default_factory=dict)  # Scheduled name -> its first slot, s after the start
    nested: frozenset[str] = frozenset()  # transactions that ran inside others

    def transaction_count(self) -> int:
        """Transactions completed, each once: one inside another is part of it, not one more."""
        return sum(e.count for e in self.transactions() if e.name not in self.nested)

    def schedule_s(self, prefix: str = "") -> float:
        return schedule_s(self.duration_s, self.scheduled_from, prefix)


def schedule_s(duration_s: float, scheduled_from: Mapping[str, float], prefix: str = "") -> float:
    """The seconds the open model's schedule ran (of the Scheduled names starting with `prefix`): from its
    first slot to the end. Users log in and workers hear of the test before any slot is due: that lead is no
    part of the rate, which would otherwise read low by it (workers half a second late: 3 % of 15 s)."""
    offsets = [at for name, at in scheduled_from.items() if name.startswith(prefix)]
    return max(duration_s - min(offsets), 0.0) if offsets else duration_s


# ---------------------------------------------------------------------------------------------------
# The recorder


class WindowSink(Protocol):
    """Where settled windows go (folioperf.results.TimeseriesSpool: the results directory)."""

    def add(self, rows: Sequence[Window]) -> None: ...

    def clear(self) -> None: ...

    def kept(self) -> Sequence[Window]:
        """The rows it holds in memory (none, for one that writes them away)."""
        ...


class KeptWindows:
    """A sink that keeps the rows in memory, a late row merged into its window's (tests, short tools)."""

    def __init__(self) -> None:
        self._rows: dict[tuple[datetime, str, str], Window] = {}

    def add(self, rows: Sequence[Window]) -> None:
        for row in rows:
            key = (row.start, row.type, row.name)
            self._rows[key] = merge_windows(self._rows[key], row) if key in self._rows else row

    def clear(self) -> None:
        self._rows = {}

    def kept(self) -> Sequence[Window]:
        return tuple(self._rows.values())


def merge_windows(first: Window, late: Window) -> Window:
    """One window's row and a later one of the same window (a report that came after it settled): counts and
    failures add up, the average is weighted by count, the percentiles stay the first row's."""
    timed = [(w.avg, w.count) for w in (first, late) if w.avg is not None and w.count]
    count = sum(n for _, n in timed)
    avg = round(sum(a * n for a, n in timed) / count, 3) if count else first.avg
    return Window(first.start, first.type, first.name, first.count + late.count, first.failures + late.failures,
                  avg, first.p50, first.p95)


def _row(index: int, key: Key, tally: Tally, percentiles: bool = True) -> Window:
    start = datetime.fromtimestamp(index * WINDOW_S, timezone.utc)
    timed = tally.buckets.total
    p50, p95 = percentiles_us(tally.buckets, (0.50, 0.95), tally.min_us, tally.max_us) if percentiles else (None, None)
    return Window(start, key[0], key[1], tally.count, tally.failures, _ms(tally.sum_us / timed) if timed else None,
                  _ms(p50), _ms(p95))


Key = tuple[str, str]


class _KeyOrder(NamedTuple):  # a Key as entry_order takes it
    type: str
    name: str


class Metrics:
    """One process's recorder. `record` is the `request` listener; everything else is bookkeeping."""

    def __init__(self, *, settle: bool = True, clock: Callable[[], float] = time.time,
                 sink: WindowSink | None = None) -> None:
        self._settle = settle  # workers ship their windows instead of settling them
        self._sink: WindowSink = sink if sink is not None else KeptWindows()
        self._clock = clock
        self._seq = 0
        self._received: dict[str, int] = {}  # master: the last report number of each worker
        self.lost_reports: dict[str, int] = {}  # master: reports of a worker that never arrived
        self.on_new_failure: Callable[[str, str, str], None] | None = None  # (type, name, error) seen first
        self._nested: set[str] = set()  # transactions recorded inside others (the names, for good: no reset)
        self.reset()

    def reset(self) -> None:
        """Forget everything measured; the measured duration starts now (test start, "reset stats")."""
        self._windows: dict[int, dict[Key, Tally]] = {}
        self._open_index = -1
        self._open: dict[Key, Tally] = {}
        self._settled_below = -1  # windows before this one have settled
        self._sink.clear()
        self._totals: dict[Key, Tally] = {}
        self._failures: dict[tuple[str, str, str], int] = {}
        self._modules: dict[Key, dict[str, ModuleTally]] = {}  # (type, name) -> module -> its time
        self.traced = 0  # API responses with X-Okapi-Trace lines (--trace)
        self.untraced = 0  # ... and without
        self._first_slots: dict[str, float] = {}  # Scheduled name -> its earliest slot (clock seconds)
        self.started = self._clock()
        self.stopped: float | None = None

    def start_test(self) -> None:
        """A new test: nothing measured yet, and the report numbering starts afresh (a worker: at its setup);
        its settled windows are kept in memory until `windows_to` says where they go."""
        self._sink = KeptWindows()
        self.reset()
        self._seq = 0
        self._received = {}
        self.lost_reports = {}

    def windows_to(self, sink: WindowSink) -> None:
        """Where settled windows go from now on: the test's results directory, once it is known."""
        kept = self._sink.kept()
        if kept:
            sink.add(kept)
        self._sink = sink

    def stop(self) -> None:
        """The test stopped: the measured duration ends now."""
        self.stopped = self._clock()

    def record(self, request_type: str, name: str, response_time: float | None, response_length: int = 0,
               exception: BaseException | str | None = None, context: Mapping[str, Any] | None = None,
               start_time: float | None = None, **_kwargs: Any) -> None:
        """Locust's `request` event. Cheap on purpose: it runs inline in every virtual user."""
        if context and context.get(NESTED):
            self._nested.add(name)
        if request_type == SCHEDULED and start_time is not None:  # start_time: the iteration's slot
            self._first_slot(name, start_time)
        index = int(self._clock()) // WINDOW_S
        if index != self._open_index:
            self._open_window(index)
        key = (request_type, name)
        tally = self._open.get(key)
        if tally is None:
            tally = self._open[key] = Tally()
        tally.count += 1
        if response_time is not None:
            tally.time(int(response_time * 1000.0 + 0.5))
        if exception:
            tally.failures += 1
            failure = (request_type, name, failure_message(exception))
            seen = self._failures.get(failure, 0)
            self._failures[failure] = seen + 1
            if not seen and self.on_new_failure is not None:
                self.on_new_failure(*failure)
        elif context and context.get("expected"):
            tally.expected += 1

    def _first_slot(self, name: str, slot: float) -> None:
        first = self._first_slots.get(name)
        if first is None or slot < first:
            self._first_slots[name] = slot

    def trace_call(self, call: Traced) -> None:
        """--trace: a call made outside any transaction (folioperf.okapi_trace.TraceSink): each module's part
        of it, one sample of its API's row. Inline like `record`: a few µs."""
        self._trace_api(call, breakdown(lines_of(call[3]), int(call[2] * 1000.0 + 0.5)))

    def trace_transactions(self, calls: list[Traced], transactions: str | list[tuple[str, int, int]],
                           started: float) -> None:
        """--trace: the calls made in a user's outermost transaction, and the transactions that ended in it
        (folioperf.okapi_trace.TraceSink): each call's parts as `trace_call`'s, and each transaction's, its
        calls' summed per module, one sample of its row. The calls of one that began before a reset (and ends
        after it) count for its transactions only."""
        parts = [breakdown(lines_of(field), int(ms * 1000.0 + 0.5)) for _, _, ms, field in calls]
        if started >= self.started:
            for call, its in zip(calls, parts):
                self._trace_api(call, its)
        for name, first, end in [(transactions, 0, len(calls))] if isinstance(transactions, str) else transactions:
            summed: dict[str, tuple[int, int]] = {}
            for its in parts[first:end]:
                for module, (us, hops) in its.items():
                    total, n = summed.get(module, (0, 0))
                    summed[module] = (total + us, n + hops)
            self._tally_parts((TRANSACTION, name), summed)

    def _trace_api(self, call: Traced, parts: dict[str, tuple[int, int]]) -> None:
        if parts:
            self.traced += 1
            self._tally_parts((call[0], call[1]), parts)
        else:
            self.untraced += 1

    def _tally_parts(self, key: Key, parts: dict[str, tuple[int, int]]) -> None:
        """One response's (or transaction's) parts, module -> (µs, hops): one sample each in its module's tally."""
        if not parts:
            return
        row = self._modules.get(key)
        if row is None:
            row = self._modules[key] = {}
        for module, (us, hops) in parts.items():
            tally = row.get(module)
            if tally is None:
                tally = row[module] = ModuleTally()
            tally.count += 1
            tally.hops += hops
            tally.time(us)

    def _open_window(self, index: int) -> None:
        self._open_index = index
        self._open = self._windows.setdefault(index, {})
        if self._settle:
            self._settle_before(index - _SETTLE_AFTER_WINDOWS)

    def _settle_before(self, index: int) -> None:
        if index <= self._settled_below:
            return
        self._settled_below = index
        rows: list[Window] = []
        for old in sorted(i for i in self._windows if i < index):
            for key, tally in sorted(self._windows.pop(old).items(), key=lambda kv: entry_order(_KeyOrder(*kv[0]))):
                self._totals.setdefault(key, Tally()).add(tally)
                rows.append(_row(old, key, tally))
        if rows:
            self._sink.add(rows)

    def _add_window(self, index: int, key: Key, tally: Tally) -> None:
        if index < self._settled_below:  # a late report for a window that settled: its own row
            self._totals.setdefault(key, Tally()).add(tally)
            self._sink.add([_row(index, key, tally, percentiles=False)])
            return
        window = self._windows.setdefault(index, {})
        current = window.get(key)
        if current is None:
            window[key] = tally
        else:
            current.add(tally)

    # -- distributed -------------------------------------------------------------------------------

    def take_report(self) -> dict[str, Any]:
        """A worker's delta since its last report (msgpack-serialisable); clears what it ships."""
        self._seq += 1
        report = {
            "seq": self._seq,
            "windows": [[index, key[0], key[1], *tally.to_wire()]
                        for index, window in self._windows.items() for key, tally in window.items()],
            "failures": [[*failure, n] for failure, n in self._failures.items()],
            "modules": [[*key, module, *tally.to_wire()] for key, row in self._modules.items()
                        for module, tally in row.items()],
            "traced": self.traced,
            "untraced": self.untraced,
            "first_slots": list(self._first_slots.items()),  # kept, not cleared: the master keeps the earliest
            "nested": sorted(self._nested),
        }
        self._windows = {}
        self._open_index = -1
        self._failures = {}
        self._modules = {}
        self.traced = self.untraced = 0
        return report

    def merge_report(self, client_id: str, report: Mapping[str, Any]) -> None:
        """The master's side of `take_report`; a gap in a worker's numbering is counted in `lost_reports`."""
        seq = report["seq"]
        last = self._received.get(client_id, 0)
        if seq <= last:
            return  # a report of an earlier test, or one seen already
        if seq != last + 1:
            self.lost_reports[client_id] = self.lost_reports.get(client_id, 0) + seq - last - 1
            logger.warning("metrics reports %d..%d from worker %s never arrived", last + 1, seq - 1, client_id)
        self._received[client_id] = seq
        for index, request_type, name, *values in report["windows"]:
            self._add_window(index, (request_type, name), Tally.from_wire(values))
        for request_type, name, error, n in report["failures"]:
            failure = (request_type, name, error)
            seen = self._failures.get(failure, 0)
            self._failures[failure] = seen + n
            if not seen and self.on_new_failure is not None:
                self.on_new_failure(*failure)
        for request_type, name, module, *values in report.get("modules", ()):
            row = self._modules.setdefault((request_type, name), {})
            tally = ModuleTally.from_wire(values)
            current = row.get(module)
            if current is None:
                row[module] = tally
            else:
                current.add(tally)
        self.traced += report.get("traced", 0)
        self.untraced += report.get("untraced", 0)
        for name, slot in report.get("first_slots", ()):
            self._first_slot(name, slot)
        self._nested.update(report.get("nested", ()))
        if self._settle:
            self._settle_before(int(self._clock()) // WINDOW_S - _SETTLE_AFTER_WINDOWS)

    # -- reading -----------------------------------------------------------------------------------

    def duration_s(self) -> float:
        """Seconds measured: from the test's start (or the last reset) to its stop, or to now."""
        end = self.stopped if self.stopped is not None else self._clock()
        return max(end - self.started, 0.0)

    def scheduled_from(self) -> dict[str, float]:
        """Each Scheduled name's first slot, in seconds after the start (see `schedule_s`)."""
        duration = self.duration_s()
        return {name: round(min(max(slot - self.started, 0.0), duration), 3) for name, slot in self._first_slots.items()}

    def totals(self) -> dict[Key, Tally]:
        """Every (type, name)'s figures so far, merged over its windows: fresh tallies the caller may keep."""
        totals: dict[Key, Tally] = {}
        for key, tally in self._totals.items():
            totals[key] = merged = Tally()
            merged.add(tally)
        for window in self._windows.values():
            for key, tally in window.items():
                totals.setdefault(key, Tally()).add(tally)
        return totals

    def snapshot(self, windows: bool = True) -> Snapshot:
        """What was measured so far; `windows=False` skips the time windows (cheaper, for a live view). Its
        windows are those not settled yet and those its sink keeps in memory (a TimeseriesSpool keeps none)."""
        duration = self.duration_s()
        scheduled_from = self.scheduled_from()
        totals = self.totals()
        rows: list[Window] = list(self._sink.kept()) if windows else []
        for index, window in self._windows.items() if windows else ():
            rows.extend(_row(index, key, tally) for key, tally in window.items())
        entries = sorted((Entry.from_tally(t, n, tally, duration - scheduled_from.get(n, 0.0) if t == SCHEDULED else duration)
                          for (t, n), tally in totals.items()), key=entry_order)
        rows.sort(key=lambda w: (w.start, entry_order(w)))
        failures = sorted((Failure(t, n, e, count) for (t, n, e), count in self._failures.items()),
                          key=lambda f: (-f.occurrences, f.type, f.name, f.error))
        modules = sorted((ModuleTime.from_tally(t, n, m, tally, totals.get((t, n)))
                          for (t, n), row in self._modules.items() for m, tally in row.items()),
                         key=lambda m: (entry_order(m), -m.total))
        return Snapshot(duration_s=round(duration, 3), entries=tuple(entries), windows=tuple(rows),
                        failures=tuple(failures), modules=tuple(modules), traced=self.traced,
                        untraced=self.untraced, scheduled_from=scheduled_from, nested=frozenset(self._nested))
