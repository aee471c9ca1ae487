"""The server side of a run as measured: a time series per metric and subject (a FOLIO module, a database, a
host), each series' summary, and each module's memory hour by hour with the PTF's growth flag.

A results directory holds them as `server-metrics.csv` (time,metric,subject,value: every point) and
`server-metrics.json` (the source, its step and units, the notes of what could not be measured, and the
summary), written and read by folioperf.results; reports are rebuilt from the points alone.

Memory growth, as the PTF reads its 24-hour graphs ("mod-inventory-storage seems to be hogging memory as it
goes along", against spikes that "were not prolonged"): a module's memory is averaged per hour of the run, and
the module is flagged when its last hour's average is at least GROWTH_FLAG_PCT above its first hour's and no
hour's average fell more than FALL_TOLERANCE_PCT below the hour before: it kept growing, it did not bounce back.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

FORMAT = "folioperf-server-metrics/1"
COLUMNS = ("time", "metric", "subject", "value")
MODULE, DATABASE, HOST = "module", "database", "host"
GROWTH_FLAG_PCT = 10.0
FALL_TOLERANCE_PCT = 2.0
HOUR_S = 3600.0
MIN_HOUR_COVER = 0.5  # the last, partial hour counts when it covers at least half an hour


@dataclass(frozen=True)
class Metric:
    key: str
    kind: str  # what a subject is: a module, a database or a host
    title: str


METRICS: dict[str, Metric] = {m.key: m for m in (
    Metric("module_cpu", MODULE, "CPU"),
    Metric("module_memory_mb", MODULE, "Memory"),
    Metric("module_memory_percent", MODULE, "Memory"),
    Metric("db_cpu", DATABASE, "CPU"),
    Metric("db_connections", DATABASE, "Connections"),
    Metric("db_freeable_memory_mb", DATABASE, "Freeable memory"),
    Metric("host_cpu", HOST, "CPU"),
)}
MEMORY = ("module_memory_mb", "module_memory_percent")


@dataclass(frozen=True)
class Summary:
    samples: int
    avg: float
    max: float
    min: float
    first: float
    last: float


@dataclass(frozen=True)
class Trend:
    """A series' averages per hour of the run (None: no point in that hour) and whether it grows."""

    metric: str
    subject: str
    hours: tuple[float | None, ...]
    growth_pct: float | None  # last hour's average against the first's
    grows: bool


@dataclass
class ServerMetrics:
    """Points per (metric, subject), keyed by time (epoch seconds): a later fetch of the same instant replaces
    the earlier one (CloudWatch publishes late)."""

    source: str
    step_s: float
    start: datetime
    end: datetime
    units: dict[str, str] = field(default_factory=dict)
    points: dict[tuple[str, str], dict[float, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, metric: str, subject: str, at: float, value: float) -> None:
        if math.isfinite(value):
            self.points.setdefault((metric, subject), {})[round(at, 3)] = value

    def metrics(self) -> list[str]:
        present = {m for m, _ in self.points}
        return [m for m in METRICS if m in present]

    def subjects(self, metric: str) -> list[str]:
        return sorted(s for m, s in self.points if m == metric)

    def series(self, metric: str, subject: str) -> list[tuple[float, float]]:
        return sorted(self.points.get((metric, subject), {}).items())

    def summary(self, metric: str, subject: str) -> Summary | None:
        values = [v for _, v in self.series(metric, subject)]
        if not values:
            return None
        return Summary(len(values), sum(values) / len(values), max(values), min(values), values[0], values[-1])

    def trends(self) -> list[Trend]:
        """Each module's memory per hour, for runs of two hours or more."""
        t0, t1 = self.start.timestamp(), self.end.timestamp()
        hours = int((t1 - t0) // HOUR_S) + (1 if (t1 - t0) % HOUR_S >= MIN_HOUR_COVER * HOUR_S else 0)
        if hours < 2:
            return []
        out = []
        for metric in (m for m in MEMORY if m in self.metrics()):
            for subject in self.subjects(metric):
                buckets: list[list[float]] = [[] for _ in range(hours)]
                for at, value in self.series(metric, subject):
                    index = int((at - t0) // HOUR_S)
                    if 0 <= index < hours:
                        buckets[index].append(value)
                averages = tuple(sum(b) / len(b) if b else None for b in buckets)
                out.append(_trend(metric, subject, averages))
        return out

    # -- the files -----------------------------------------------------------------------------------
    def rows(self) -> Iterable[tuple[str, str, str, float]]:
        for (metric, subject), points in sorted(self.points.items()):
            for at, value in sorted(points.items()):
                yield _iso(at), metric, subject, value

    def to_json(self) -> dict[str, Any]:
        summary = []
        for metric in self.metrics():
            for subject in self.subjects(metric):
                s = self.summary(metric, subject)
                assert s is not None
                summary.append({"metric": metric, "subject": subject, "samples": s.samples, "avg": round(s.avg, 3),
                                "max": s.max, "min": s.min, "first": s.first, "last": s.last})
        return {
            "format": FORMAT, "source": self.source, "step_s": self.step_s,
            "start": _iso(self.start.timestamp()), "end": _iso(self.end.timestamp()),
            "units": {m: u for m, u in self.units.items() if m in self.metrics()}, "notes": list(self.notes),
            "summary": summary,
            "memory_trends": [{"metric": t.metric, "subject": t.subject,
                               "hours": [None if h is None else round(h, 3) for h in t.hours],
                               "growth_pct": None if t.growth_pct is None else round(t.growth_pct, 2),
                               "grows": t.grows} for t in self.trends()],
        }

    @classmethod
    def from_files(cls, data: Mapping[str, Any], rows: Iterable[Mapping[str, str]]) -> ServerMetrics:
        """From server-metrics.json and the rows of server-metrics.csv (KeyError, ValueError when malformed)."""
        if data.get("format") != FORMAT:
            raise ValueError(f"server-metrics.json has format {data.get('format')!r}, expected {FORMAT!r}")
        server = cls(source=data["source"], step_s=float(data["step_s"]), start=_parse(data["start"]),
                     end=_parse(data["end"]), units=dict(data.get("units") or {}), notes=list(data.get("notes") or []))
        for row in rows:
            server.add(row["metric"], row["subject"], _parse(row["time"]).timestamp(), float(row["value"]))
        return server


def _trend(metric: str, subject: str, hours: tuple[float | None, ...]) -> Trend:
    known = [h for h in hours if h is not None]
    if len(known) < 2 or known[0] <= 0:
        return Trend(metric, subject, hours, None, False)
    growth = (known[-1] - known[0]) / known[0] * 100
    steady = all(b >= a * (1 - FALL_TOLERANCE_PCT / 100) for a, b in zip(known, known[1:]))
    return Trend(metric, subject, hours, growth, growth >= GROWTH_FLAG_PCT and steady)


def from_legacy_db(db: Mapping[str, Any] | None, start: datetime, end: datetime) -> ServerMetrics | None:
    """The sandbox's CPU and memory as results directories written before server-metrics.csv held them in
    db.json ("sandbox": seconds since the start, CPU % of one core, MB)."""
    host = (db or {}).get("sandbox")
    if not host:
        return None
    interval = float((db or {}).get("interval_s") or 5.0)
    server = ServerMetrics("sandbox", interval, start, end, {"module_cpu": "% of one core", "module_memory_mb": "MB"})
    series = host.get("series") or {}
    t0 = start.timestamp()
    for key, metric in (("cpu_percent", "module_cpu"), ("memory_mb", "module_memory_mb")):
        for t, value in zip(series.get("t") or [], series.get(key) or []):
            server.add(metric, "sandbox", t0 + t, float(value))
    return server


def _iso(at: float) -> str:
    moment = datetime.fromtimestamp(at, timezone.utc)
    return moment.isoformat(timespec="milliseconds" if at % 1 else "seconds").replace("+00:00", "Z")


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
