"""Collecting a source's server metrics: during a test at a fixed step (`Collector`, on the master or the one
local process, never a worker), or afterwards over a finished run's time window (`collect_window`).

A source (folioperf.servers.sources) answers `check(at)` with one line per problem at that time (unreachable,
a query that returns nothing) and `fetch(start, end, step)` with points (metric, subject, epoch seconds, value). Sources
that keep history (Prometheus, CloudWatch) give the points of their step grid between start and end; a live
one (the sandbox) samples once, now. What cannot be measured is said once, as a warning at the start and a
note in the results; the load test never waits on it nor fails for it.

The collector is a `threading.Thread`: a real thread in a plain process, a greenlet in a gevent-patched Locust
master. Each tick fetches from the previous tick (less the source's `settle_s`: CloudWatch publishes a minute
or more late, so its last minutes are fetched again) to now.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Protocol

from folioperf.servers.series import ServerMetrics

log = logging.getLogger("folioperf")

MAX_POINTS_PER_FETCH = 10_000  # Prometheus answers at most 11,000 points per series and query


class SourceError(Exception):
    """One line saying what the source could not give; the collection goes on."""


Point = tuple[str, str, float, float]  # metric, subject, epoch seconds, value


class Source(Protocol):
    name: str  # as the results record it (no credentials)
    units: dict[str, str]
    default_step_s: float
    settle_s: float

    def check(self, at: float) -> list[str]: ...

    def fetch(self, start: float, end: float, step: float) -> Iterable[Point]: ...

    def close(self) -> None: ...


def grid(start: float, end: float, step: float) -> tuple[float, float] | None:
    """The first and last multiples of `step` in [start, end] (None when there is none): the instants a
    source with history is asked for, the same whoever asks and when."""
    first, last = math.ceil(start / step) * step, math.floor(end / step) * step
    return (first, last) if first <= last else None


class Collector:
    """One source during one test. Not reusable: one `start()`, one `stop()`."""

    def __init__(self, source: Source, step_s: float | None = None, say: Callable[[str], None] = log.warning) -> None:
        self.source = source
        self.step_s = float(step_s or source.default_step_s)
        self._say = say
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._data: ServerMetrics | None = None
        self._cursor = 0.0

    def start(self, at: datetime) -> None:
        """Check the source (its problems said now, one line each) and collect every step until `stop`."""
        if self._thread is not None:
            raise RuntimeError("Collector.start() called twice")
        self._data = ServerMetrics(self.source.name, self.step_s, at, at, dict(self.source.units))
        self._cursor = at.timestamp()
        for problem in self.source.check(time.time()):
            self._note(problem)
        self._fetch(time.time())
        self._thread = threading.Thread(target=self._run, name="folioperf-server-metrics", daemon=True)
        self._thread.start()

    def stop(self, at: datetime) -> ServerMetrics:
        """The last fetch, up to `at`; the metrics of the whole test."""
        if self._thread is None or self._data is None:
            raise RuntimeError("Collector.stop() before start()")
        self._stop.set()
        self._thread.join()
        self._data.end = at
        self._fetch(at.timestamp())
        self.source.close()
        return self._data

    def _run(self) -> None:
        while not self._stop.wait(self.step_s):
            self._fetch(time.time())

    def _fetch(self, now: float) -> None:
        assert self._data is not None
        start = max(self._data.start.timestamp(), self._cursor - self.source.settle_s)
        try:
            for metric, subject, at, value in self.source.fetch(start, now, self.step_s):
                self._data.add(metric, subject, at, value)
        except SourceError as exc:
            self._note(str(exc))
        except Exception as exc:  # an observer never ends the run it observes
            self._note(f"{self.source.name}: {type(exc).__name__}: {exc}")
        self._cursor = now

    def _note(self, line: str) -> None:
        assert self._data is not None
        if line not in self._data.notes:
            self._data.notes.append(line)
            self._say(f"server metrics: {line}")


def collect_window(source: Source, start: datetime, end: datetime, step_s: float | None = None) -> ServerMetrics:
    """A finished run's metrics from a source that keeps history, over [start, end]."""
    step = float(step_s or source.default_step_s)
    data = ServerMetrics(source.name, step, start, end, dict(source.units))
    data.notes += source.check(end.timestamp())
    a, b = start.timestamp(), end.timestamp()
    try:
        while a <= b:
            chunk_end = min(b, a + step * (MAX_POINTS_PER_FETCH - 1))
            for metric, subject, at, value in source.fetch(a, chunk_end, step):
                data.add(metric, subject, at, value)
            a = chunk_end + 0.001  # the grid's next instant after this chunk's last
    except SourceError as exc:
        data.notes.append(str(exc))
    finally:
        source.close()
    return data
