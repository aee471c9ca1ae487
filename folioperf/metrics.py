"""Latency metrics that are right (design decision 4), recorded from Locust's `request` events.

Per (request type, name) folioperf keeps a count, failures, expected failures, the exact sum, min and max
and a histogram with HdrHistogram's bucket layout for 1 µs .. 1 hour at 3 significant digits: values
below 2048 µs are kept exactly, larger ones in buckets 1/1024 of their size. Percentiles are
*nearest-rank* percentiles (the p-th percentile of n samples is the ceil(p·n)-th smallest sample) read
from that histogram: the bucket's roundest value, clamped to the exact min and max, so each is within
0.1 % (and 1 µs) of the exact sample percentile, also after merging workers — buckets merge by adding
counts.

Samples are tallied per wall-clock aligned 10-second window (by completion time); an entry's totals
are the sum of its windows. In memory and between processes a histogram is a sparse dict
{bucket's lowest value in µs: count}; `encode_histogram` turns it into HdrHistogram's compressed
base64 form for results files.

Distributed runs: each worker ships the windows and failures recorded since its last report in
`report_to_master` (every 3 s, and at once when its users have stopped), tagged with a sequence number
and its runner state; the master merges them in `worker_report`. A report taken while the worker's runner is
"stopped" or "ready" is final — it holds everything the worker recorded for the test — which is how
`wait_for_final_reports` knows the master has every worker's data after a stop.
"""

from __future__ import annotations

import logging
import math
import re
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from typing import Any

from folioperf.errors import FolioperfError

logger = logging.getLogger(__name__)

WINDOW_S = 10
HISTOGRAM_LOWEST_US = 1
HISTOGRAM_HIGHEST_US = 3_600_000_000
HISTOGRAM_DIGITS = 3
PERCENTILES = (0.50, 0.75, 0.90, 0.95, 0.99)
ERROR_MESSAGE_LIMIT = 300
REPORT_KEY = "folioperf"  # the key of folioperf's part of a worker report

# HdrHistogram(1 µs, 1 h, 3 digits) has 2048 sub-buckets: values that fit in 11 bits are exact.
_SUB_BUCKET_BITS = 11
_HALF_SUB_BUCKETS = 1 << (_SUB_BUCKET_BITS - 1)
_NO_MIN = 1 << 62  # min_us of a tally without timed samples
# Windows older than this (on the master's clock) are reduced to their figures; a worker report that
# arrives later still adds to the window's count, failures and average and to the totals.
_SETTLE_AFTER_WINDOWS = 6
# Runner states of a worker whose users are all stopped: its report then holds all it recorded.
_IDLE_STATES = ("ready", "stopped")
_BUSY_STATES = ("spawning", "running", "cleanup", "stopping")
_JWT = re.compile(r"eyJ[\w-]{4,}\.[\w-]{4,}\.[\w-]*")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


# ---------------------------------------------------------------------------------------------------
# Histogram arithmetic


def bucket_of(us: int) -> int:
    """The lowest value (µs) of the HdrHistogram bucket that holds `us`."""
    shift = us.bit_length() - _SUB_BUCKET_BITS
    return us >> shift << shift if shift > 0 else us


def _bucket_width(key: int) -> int:
    shift = key.bit_length() - _SUB_BUCKET_BITS
    return 1 << shift if shift > 0 else 1


def _index_of(key: int) -> int:
    """HdrHistogram's counts index of a bucket (its position in the histogram's counts array)."""
    shift = key.bit_length() - _SUB_BUCKET_BITS
    return key if shift <= 0 else shift * _HALF_SUB_BUCKETS + (key >> shift)


def _key_of(index: int) -> int:
    if index < 2 * _HALF_SUB_BUCKETS:
        return index
    shift = index // _HALF_SUB_BUCKETS - 1
    return (index - shift * _HALF_SUB_BUCKETS) << shift


def _roundest(key: int) -> int:
    """The value of a bucket with the fewest significant digits (closest to the middle on a tie): a bucket
    is precise to 3-4 digits, so 95 ms reads 95.0, not a midpoint such as 95.007."""
    high = key + _bucket_width(key) - 1
    step = 10 ** (len(str(high)) - 1)
    while step > 1:
        first = -(-key // step) * step
        if first <= high:
            middle = key + high
            return min(range(first, high + 1, step), key=lambda v: abs(2 * v - middle))
        step //= 10
    return key


def percentiles_us(buckets: Mapping[int, int], quantiles: Sequence[float], min_us: int,
                   max_us: int) -> list[float | None]:
    """Nearest-rank percentiles (µs) of a bucketed sample: for quantile q of n samples, the bucket
    holding the ceil(q·n)-th smallest sample, represented by its roundest value clamped to [min_us, max_us]
    (at most 1/1024 of the value from any sample in the bucket)."""
    total = sum(buckets.values())
    if not total:
        return [None] * len(quantiles)
    # round() first: 0.95 * 100 is 95.00000000000001 in floating point, and its ceil must be 95
    ranks = [min(total, max(1, math.ceil(round(q * total, 9)))) for q in quantiles]
    wanted = sorted(range(len(ranks)), key=ranks.__getitem__)
    result: list[float | None] = [None] * len(ranks)
    seen = 0
    pending = iter(wanted)
    position = next(pending)
    for key in sorted(buckets):
        seen += buckets[key]
        while seen >= ranks[position]:
            result[position] = float(min(max(_roundest(key), min_us), max_us))
            position = next(pending, None)
            if position is None:
                return result
    return result


def encode_histogram(buckets: Mapping[int, int]) -> str:
    """HdrHistogram's compressed base64 form (V2, µs, 1 µs .. 1 h, 3 digits) of a bucketed sample."""
    from hdrh.histogram import HdrHistogram

    histogram = HdrHistogram(HISTOGRAM_LOWEST_US, HISTOGRAM_HIGHEST_US, HISTOGRAM_DIGITS)
    for key, count in buckets.items():
        histogram.record_value(min(key, HISTOGRAM_HIGHEST_US), count)
    return histogram.encode().decode("ascii")


def decode_histogram(encoded: str) -> dict[int, int]:
    """The sparse {bucket µs: count} form of an encoded HdrHistogram."""
    from hdrh.histogram import HdrHistogram

    histogram = HdrHistogram.decode(encoded)
    counts = histogram.counts
    size = min(len(counts), histogram.encoder.payload.counts_len)
    return {histogram.get_value_from_index(i): counts[i] for i in range(size) if counts[i]}


def _pack_buckets(buckets: Mapping[int, int]) -> list[int]:
    """[Δindex, count, Δindex, count, ...] over HdrHistogram counts indexes: small ints pack small."""
    packed: list[int] = []
    previous = 0
    for key in sorted(buckets):
        index = _index_of(key)
        packed += (index - previous, buckets[key])
        previous = index
    return packed


def _unpack_buckets(packed: Sequence[int]) -> dict[int, int]:
    buckets: dict[int, int] = {}
    index = 0
    for i in range(0, len(packed), 2):
        index += packed[i]
        buckets[_key_of(index)] = packed[i + 1]
    return buckets


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
        self.buckets: dict[int, int] = {}

    def add(self, other: Tally) -> None:
        self.count += other.count
        self.failures += other.failures
        self.expected += other.expected
        self.sum_us += other.sum_us
        self.min_us = min(self.min_us, other.min_us)
        self.max_us = max(self.max_us, other.max_us)
        buckets = self.buckets
        for key, count in other.buckets.items():
            buckets[key] = buckets.get(key, 0) + count

    def to_wire(self) -> list[Any]:
        return [self.count, self.failures, self.expected, self.sum_us, self.min_us, self.max_us,
                _pack_buckets(self.buckets)]

    @classmethod
    def from_wire(cls, values: Sequence[Any]) -> Tally:
        tally = cls()
        tally.count, tally.failures, tally.expected, tally.sum_us, tally.min_us, tally.max_us, packed = values
        tally.buckets = _unpack_buckets(packed)
        return tally


def _ms(us: float | None) -> float | None:
    return None if us is None else round(us / 1000, 3)


_TYPE_ORDER = {"Transaction": 0, "Scheduled": 1}


def entry_order(entry: Entry | Window) -> tuple[int, str, str]:
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
        timed_count = sum(tally.buckets.values())
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


class EntryLookup:
    """Finding entries by kind, shared by a live snapshot and results read back from disk."""

    entries: tuple[Entry, ...]

    def entry(self, type: str, name: str) -> Entry | None:
        """The entry of one request type and name, e.g. `entry("Transaction", "Check-out")`."""
        for entry in self.entries:
            if entry.type == type and entry.name == name:
                return entry
        return None

    def transactions(self) -> list[Entry]:
        return [e for e in self.entries if e.type == "Transaction"]

    def scheduled(self) -> list[Entry]:
        """Open-model latencies measured from each transaction's scheduled start."""
        return [e for e in self.entries if e.type == "Scheduled"]

    def apis(self) -> list[Entry]:
        """API calls (request type = HTTP method)."""
        return [e for e in self.entries if e.type not in _TYPE_ORDER]


@dataclass(frozen=True)
class Snapshot(EntryLookup):
    """What was measured so far; `duration_s` is the measured time the requests/s are over."""

    duration_s: float
    entries: tuple[Entry, ...]
    windows: tuple[Window, ...]
    failures: tuple[Failure, ...]


# ---------------------------------------------------------------------------------------------------
# The recorder


class _Settled:
    """A window reduced to its figures (see _SETTLE_AFTER_WINDOWS)."""

    __slots__ = ("count", "failures", "sum_us", "timed", "p50_us", "p95_us")

    def __init__(self, tally: Tally) -> None:
        self.count, self.failures, self.sum_us = tally.count, tally.failures, tally.sum_us
        self.timed = sum(tally.buckets.values())
        self.p50_us, self.p95_us = percentiles_us(tally.buckets, (0.50, 0.95), tally.min_us, tally.max_us)

    def add_late(self, tally: Tally) -> None:
        self.count += tally.count
        self.failures += tally.failures
        self.sum_us += tally.sum_us
        self.timed += sum(tally.buckets.values())


class _WorkerMark:
    __slots__ = ("seq", "state", "active", "final", "lost")

    def __init__(self) -> None:
        self.seq = 0
        self.state = ""
        self.active = False  # took part in the current test
        self.final = False  # sent a report taken while idle, after the master began stopping
        self.lost = 0  # reports that never arrived (sequence gaps)


Key = tuple[str, str]


class Metrics:
    """One process's recorder. `record` is the `request` listener; everything else is bookkeeping."""

    def __init__(self, *, settle: bool = True, clock: Callable[[], float] = time.time) -> None:
        self._settle = settle  # workers ship their windows instead of settling them
        self._clock = clock
        self._seq = 0
        self._workers: dict[str, _WorkerMark] = {}
        self._awaiting_final = False
        self.before_test_start: list[Callable[[], None]] = []  # e.g. completing the last test first
        self.reset()

    def reset(self) -> None:
        """Forget everything measured; the measured duration starts now (test start, "reset stats")."""
        self._windows: dict[int, dict[Key, Tally]] = {}
        self._open_index = -1
        self._open: dict[Key, Tally] = {}
        self._settled: dict[int, dict[Key, _Settled]] = {}
        self._totals: dict[Key, Tally] = {}
        self._failures: dict[tuple[str, str, str], int] = {}
        self.started = self._clock()
        self.stopped: float | None = None

    def stop(self) -> None:
        """The test stopped: the measured duration ends now."""
        self.stopped = self._clock()

    def record(self, request_type: str, name: str, response_time: float | None, response_length: int = 0,
               exception: BaseException | str | None = None, context: Mapping[str, Any] | None = None,
               **_kwargs: Any) -> None:
        """Locust's `request` event. Cheap on purpose: it runs inline in every virtual user."""
        index = int(self._clock()) // WINDOW_S
        if index != self._open_index:
            self._open_window(index)
        key = (request_type, name)
        tally = self._open.get(key)
        if tally is None:
            tally = self._open[key] = Tally()
        tally.count += 1
        if response_time is not None:
            us = int(response_time * 1000.0 + 0.5)
            if us < 0:
                us = 0
            tally.sum_us += us
            if us < tally.min_us:
                tally.min_us = us
            if us > tally.max_us:
                tally.max_us = us
            shift = us.bit_length() - _SUB_BUCKET_BITS
            if shift > 0:
                us = us >> shift << shift
            buckets = tally.buckets
            buckets[us] = buckets.get(us, 0) + 1
        if exception:
            tally.failures += 1
            failure = (request_type, name, failure_message(exception))
            self._failures[failure] = self._failures.get(failure, 0) + 1
        elif context and context.get("expected"):
            tally.expected += 1

    def _open_window(self, index: int) -> None:
        self._open_index = index
        self._open = self._windows.setdefault(index, {})
        if self._settle:
            self._settle_before(index - _SETTLE_AFTER_WINDOWS)

    def _settle_before(self, index: int) -> None:
        for old in [i for i in self._windows if i < index]:
            settled = self._settled.setdefault(old, {})
            for key, tally in self._windows.pop(old).items():
                self._totals.setdefault(key, Tally()).add(tally)
                settled[key] = _Settled(tally)

    def _add_window(self, index: int, key: Key, tally: Tally) -> None:
        settled = self._settled.get(index)
        if settled is not None:  # a late report for a window already reduced to its figures
            self._totals.setdefault(key, Tally()).add(tally)
            figures = settled.get(key)
            if figures is None:
                settled[key] = _Settled(tally)
            else:
                figures.add_late(tally)
            return
        window = self._windows.setdefault(index, {})
        current = window.get(key)
        if current is None:
            window[key] = tally
        else:
            current.add(tally)

    # -- distributed -------------------------------------------------------------------------------

    def take_report(self, state: str) -> dict[str, Any]:
        """A worker's delta since its last report (msgpack-serialisable); clears what it ships."""
        self._seq += 1
        report = {
            "seq": self._seq,
            "state": state,
            "windows": [[index, key[0], key[1], *tally.to_wire()]
                        for index, window in self._windows.items() for key, tally in window.items()],
            "failures": [[*failure, n] for failure, n in self._failures.items()],
        }
        self._windows = {}
        self._open_index = -1
        self._failures = {}
        return report

    def merge_report(self, client_id: str, report: Mapping[str, Any]) -> None:
        """The master's side of `take_report`."""
        mark = self._workers.get(client_id)
        if mark is None:
            mark = self._workers[client_id] = _WorkerMark()
        seq = report["seq"]
        if mark.seq and seq != mark.seq + 1:
            mark.lost += max(seq - mark.seq - 1, 0)
            logger.warning("metrics reports %d..%d from worker %s never arrived", mark.seq + 1, seq - 1, client_id)
        mark.seq, mark.state = seq, report["state"]
        if report["windows"] or mark.state in _BUSY_STATES:
            mark.active = True
        if self._awaiting_final and mark.state in _IDLE_STATES:
            mark.final = True
        for index, request_type, name, *values in report["windows"]:
            self._add_window(index, (request_type, name), Tally.from_wire(values))
        for request_type, name, error, n in report["failures"]:
            failure = (request_type, name, error)
            self._failures[failure] = self._failures.get(failure, 0) + n
        if self._settle:
            self._settle_before(int(self._clock()) // WINDOW_S - _SETTLE_AFTER_WINDOWS)

    def start_test(self) -> None:
        for hook in self.before_test_start:
            hook()
        self.reset()
        self._awaiting_final = False
        for mark in self._workers.values():
            mark.active = mark.final = False

    def stopping(self, busy_workers: Iterable[str] = ()) -> None:
        """The master began stopping: from now on a report from an idle worker is its final one."""
        self._awaiting_final = True
        for mark in self._workers.values():
            mark.final = False
        for client_id in busy_workers:
            self._workers.setdefault(client_id, _WorkerMark()).active = True

    def pending_workers(self, missing: Iterable[str] = ()) -> set[str]:
        """Workers of this test whose final report has not arrived and still can (not missing)."""
        gone = set(missing)
        return {c for c, m in self._workers.items() if m.active and not m.final and c not in gone}

    def incomplete_workers(self) -> set[str]:
        """Workers of this test whose data is incomplete: no final report, or a report was lost."""
        return {c for c, m in self._workers.items() if m.active and (not m.final or m.lost)}

    # -- reading -----------------------------------------------------------------------------------

    def snapshot(self, windows: bool = True) -> Snapshot:
        """What was measured so far; `windows=False` skips the time windows (cheaper, for a live view)."""
        end = self.stopped if self.stopped is not None else self._clock()
        duration = max(end - self.started, 0.0)
        totals: dict[Key, Tally] = {}
        for key, tally in self._totals.items():
            totals[key] = merged = Tally()
            merged.add(tally)
        rows: list[Window] = []
        for index, window in self._settled.items() if windows else ():
            start = datetime.fromtimestamp(index * WINDOW_S, timezone.utc)
            for (request_type, name), s in window.items():
                rows.append(Window(start, request_type, name, s.count, s.failures,
                                   _ms(s.sum_us / s.timed) if s.timed else None, _ms(s.p50_us), _ms(s.p95_us)))
        for index, window in self._windows.items():
            start = datetime.fromtimestamp(index * WINDOW_S, timezone.utc)
            for key, tally in window.items():
                totals.setdefault(key, Tally()).add(tally)
                if not windows:
                    continue
                p50, p95 = percentiles_us(tally.buckets, (0.50, 0.95), tally.min_us, tally.max_us)
                timed = sum(tally.buckets.values())
                rows.append(Window(start, key[0], key[1], tally.count, tally.failures,
                                   _ms(tally.sum_us / timed) if timed else None, _ms(p50), _ms(p95)))
        entries = sorted((Entry.from_tally(t, n, tally, duration) for (t, n), tally in totals.items()), key=entry_order)
        rows.sort(key=lambda w: (w.start, entry_order(w)))
        failures = sorted((Failure(t, n, e, count) for (t, n, e), count in self._failures.items()),
                          key=lambda f: (-f.occurrences, f.type, f.name, f.error))
        return Snapshot(duration_s=round(duration, 3), entries=tuple(entries), windows=tuple(rows),
                        failures=tuple(failures))


# ---------------------------------------------------------------------------------------------------
# Locust integration

_ATTACHED: weakref.WeakKeyDictionary[Any, Metrics] = weakref.WeakKeyDictionary()


def attach(environment: Any) -> Metrics:
    """Record this Locust process's requests (call once per process from the `init` event)."""
    if environment in _ATTACHED:
        return _ATTACHED[environment]
    import locust.stats
    from locust.runners import MasterRunner, WorkerRunner

    locust.stats.bucket_response_time = locust_bucket
    runner = environment.runner
    events = environment.events
    metrics = Metrics(settle=not isinstance(runner, WorkerRunner))
    _ATTACHED[environment] = metrics
    events.request.add_listener(metrics.record)

    def on_test_start(**_kwargs: Any) -> None:
        metrics.start_test()

    def on_test_stop(**_kwargs: Any) -> None:
        metrics.stop()

    def on_reset_stats(**_kwargs: Any) -> None:
        metrics.reset()

    def on_spawning_complete(**_kwargs: Any) -> None:
        if environment.reset_stats:  # --reset-stats: Locust resets its own stats at this point too
            metrics.reset()

    events.test_start.add_listener(on_test_start)
    events.test_stop.add_listener(on_test_stop)
    events.reset_stats.add_listener(on_reset_stats)
    events.spawning_complete.add_listener(on_spawning_complete)

    if isinstance(runner, WorkerRunner):
        def on_report_to_master(data: dict[str, Any], **_kwargs: Any) -> None:
            data[REPORT_KEY] = metrics.take_report(runner.state)

        def send_final_report(**_kwargs: Any) -> None:
            # as soon as the users have stopped, rather than with the next report up to 3 s later: the
            # master then has it before it completes the test, or before a new test starts
            try:
                runner._send_stats()
            except Exception as exc:  # the master may be gone; nothing more can be delivered
                logger.debug("final metrics report not sent: %s", exc)

        def on_quitting(**_kwargs: Any) -> None:
            runner.stop()  # quitting on its own (Ctrl-C, SIGTERM): Locust would send no final report

        events.report_to_master.add_listener(on_report_to_master)
        events.test_stop.add_listener(send_final_report)
        events.quitting.add_listener(on_quitting)
    elif isinstance(runner, MasterRunner):
        def on_worker_report(client_id: str, data: Mapping[str, Any], **_kwargs: Any) -> None:
            report = data.get(REPORT_KEY)
            if report is not None:
                metrics.merge_report(client_id, report)

        def on_test_stopping(**_kwargs: Any) -> None:
            metrics.stopping(c.id for c in runner.clients.values() if c.state in _BUSY_STATES)

        events.worker_report.add_listener(on_worker_report)
        events.test_stopping.add_listener(on_test_stopping)
    return metrics


def of(environment: Any) -> Metrics:
    """The recorder `attach` gave this environment."""
    try:
        return _ATTACHED[environment]
    except KeyError:
        raise FolioperfError("folioperf metrics are not attached to this Locust environment") from None


def wait_for_final_reports(environment: Any, timeout: float | None = None) -> set[str]:
    """On a master, once Locust has told the workers to stop or quit: wait until every worker of the test
    has delivered its final report (or is missing, or `timeout` passed) and return the ids of workers
    whose data is incomplete (empty: the metrics are complete). Local runners return at once.

    Default timeout: the stop timeout plus two report intervals. If Locust's message loop has already
    ended (after `runner.quit()`), this reads the workers' late reports itself."""
    import gevent
    from locust.runners import STATE_MISSING, WORKER_REPORT_INTERVAL, MasterRunner

    runner = environment.runner
    if not isinstance(runner, MasterRunner):
        return set()
    metrics = of(environment)
    if timeout is None:
        timeout = (environment.stop_timeout or 0) + 2 * WORKER_REPORT_INTERVAL
    deadline = time.monotonic() + timeout
    while True:
        missing = [c.id for c in runner.clients.values() if c.state == STATE_MISSING]
        remaining = deadline - time.monotonic()
        if not metrics.pending_workers(missing) or remaining <= 0:
            return metrics.incomplete_workers()
        if len(runner.greenlet) == 0:
            _read_late_reports(environment, min(remaining, 0.2))
        else:
            gevent.sleep(0.05)


def _read_late_reports(environment: Any, timeout: float) -> None:
    """Receive worker messages after Locust's master loop ended, passing stats reports on as Locust would."""
    import gevent
    from locust.rpc.zmqrpc import RPCError

    try:
        with gevent.Timeout(timeout):
            _, msg = environment.runner.server.recv_from_client()
    except (gevent.Timeout, RPCError):
        return
    if msg.type == "stats":
        environment.events.worker_report.fire(client_id=msg.node_id, data=msg.data)


def on_test_complete(environment: Any, callback: Callable[[Snapshot, set[str]], None],
                     timeout: float | None = None) -> None:
    """Call `callback(snapshot, incomplete_workers)` after each test, with complete data, however it
    ended: a web-UI stop, the run time, Ctrl-C. Locust fires `test_stop` on the master *before* telling
    workers to quit, so the callback runs in its own greenlet once the final reports are in; the `quit`
    event waits for it. Should a new test start first (web UI), the last one completes with what has
    arrived. A no-op on workers."""
    from gevent import getcurrent
    from gevent.pool import Group
    from locust.runners import WorkerRunner

    if isinstance(environment.runner, WorkerRunner):
        return
    metrics = of(environment)
    pending = Group()
    waiting: set[Any] = set()  # completions still waiting for final reports

    def complete(wait: bool) -> None:
        try:
            incomplete = wait_for_final_reports(environment, timeout) if wait else metrics.incomplete_workers()
            snapshot = metrics.snapshot()
        finally:
            waiting.discard(getcurrent())
        try:
            callback(snapshot, incomplete)
        except Exception:
            logger.exception("handling the end of the test failed")

    def on_test_stop(**_kwargs: Any) -> None:
        waiting.add(pending.spawn(complete, True))

    def before_next_test() -> None:
        for greenlet in list(waiting):
            greenlet.kill()
            complete(False)

    def on_quit(**_kwargs: Any) -> None:
        pending.join()

    metrics.before_test_start.append(before_next_test)
    environment.events.test_stop.add_listener(on_test_stop)
    environment.events.quit.add_listener(on_quit)
