"""Results directories as reports see them: loading runs (a results directory, or a directory of them
such as a campaign's) and grouping them into the PTF's column groups — one per user count, repeated
runs merged."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from functools import cached_property
from pathlib import Path

from folioperf.errors import FolioperfError
from folioperf.metrics import PERCENTILES, Entry, percentiles_us
from folioperf.outcome import Flags
from folioperf.results import Results, load

TRANSACTION = "Transaction"
SCHEDULED = "Scheduled"
SCRIPT = "Script"  # a PTF plan's JSR223 sampler (folioperf.metrics.SCRIPT): counted as a sample, timed as nothing
PARTIAL = "partial"  # not a flag of run.json: a checkpoint of a test that did not finish (RunInfo.partial)
FLAGS = (PARTIAL, *(f.name for f in fields(Flags)))
# Fewer samples than this and a figure says little (the 95th percentile of fewer than 20 is their largest): the
# reports mark it (FEW_MARK), and `compare` neither highlights its delta nor gives an interval nor gates on it.
MIN_SAMPLES = 20
FEW_MARK = "†"
METRIC_NAMES = tuple(f"p{round(q * 100)}" for q in PERCENTILES)  # p50 p75 p90 p95 p99


def load_runs(paths: list[str | Path]) -> list[Results]:
    """Each path is a results directory or a directory holding results directories (a campaign)."""
    runs: list[Results] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir() and not (path / "run.json").exists():
            found = sorted(p for p in path.iterdir() if (p / "run.json").is_file())
            if not found:
                raise FolioperfError(f"{path} is not a results directory (no run.json) and holds none")
            runs.extend(load(p) for p in found)
        else:
            runs.append(load(path))
    return runs


def flags_of(run: Results) -> list[str]:
    return [f for f in FLAGS if (run.run.partial if f == PARTIAL else getattr(run.run.flags, f))]


def kind_of(type_: str) -> str:
    """"Transaction", "Scheduled", "Script", or "API" (any HTTP method)."""
    return type_ if type_ in (TRANSACTION, SCHEDULED, SCRIPT) else "API"


@dataclass
class Stat:
    """One entry of a column group: a run's entry, or the entries of repeated runs merged."""

    type: str
    name: str
    count: int
    failures: int
    avg: float | None
    rps: float
    percentiles: dict[str, float | None]
    buckets: list[dict[int, int]] | None  # per run {bucket µs: count}; None when a run has no histogram
    run_values: list[dict[str, float]]  # per run avg and percentiles (ms), for bootstraps over runs
    approximate: bool = False  # percentiles averaged over runs, for want of histograms

    def value(self, metric: str) -> float | None:
        return self.avg if metric == "avg" else self.percentiles[metric]


def merge(entries: list[Entry]) -> Stat:
    """Counts add up; the average is weighted by count; percentiles are read from the runs' histograms
    added together (as metrics merges workers), or averaged by count when a run has no histogram."""
    first = entries[0]
    timed = [e for e in entries if e.avg is not None]
    buckets = [dict(e.buckets) for e in timed]
    have_all = all(buckets) and bool(timed)
    if len(timed) == 1:
        percentiles = {m: getattr(timed[0], m) for m in METRIC_NAMES}
        approximate = False
    elif have_all:
        merged: dict[int, int] = {}
        for b in buckets:
            for key, n in b.items():
                merged[key] = merged.get(key, 0) + n
        low = round(min(e.min for e in timed if e.min is not None) * 1000)
        high = round(max(e.max for e in timed if e.max is not None) * 1000)
        values = percentiles_us(merged, PERCENTILES, low, high)
        percentiles = {m: None if v is None else round(v / 1000, 3) for m, v in zip(METRIC_NAMES, values)}
        approximate = False
    else:
        percentiles = {m: _weighted([getattr(e, m) for e in timed], timed) for m in METRIC_NAMES}
        approximate = len(timed) > 1
    return Stat(
        type=first.type, name=first.name, count=sum(e.count for e in entries),
        failures=sum(e.failures for e in entries),
        avg=_weighted([e.avg for e in timed if e.avg is not None], timed),
        rps=sum(e.rps for e in entries) / len(entries),
        percentiles=percentiles, buckets=buckets if have_all else None,
        run_values=[{"avg": e.avg, **{m: getattr(e, m) for m in METRIC_NAMES}} for e in timed if e.avg is not None],
        approximate=approximate,
    )


@dataclass
class Group:
    """A column group of the PTF tables: the runs of one user count (and of one value of any option
    that differs between the runs reported together)."""

    label: str
    users: int
    runs: list[Results]

    @cached_property
    def stats(self) -> dict[tuple[str, str], Stat]:
        by_key: dict[tuple[str, str], list[Entry]] = {}
        for run in self.runs:
            for e in run.entries:
                by_key.setdefault((e.type, e.name), []).append(e)
        return {key: merge(entries) for key, entries in by_key.items()}

    def stat(self, type_: str, name: str) -> Stat | None:
        return self.stats.get((type_, name))

    def find(self, kind: str, name: str) -> Stat | None:
        """The stat of a name of a kind ("Transaction", "Scheduled" or "API")."""
        return next((s for (t, n), s in sorted(self.stats.items()) if n == name and kind_of(t) == kind), None)

    def names(self, kind: str) -> list[str]:
        return sorted({n for t, n in self.stats if kind_of(t) == kind})

    @property
    def flags(self) -> list[str]:
        return [f for f in FLAGS if any(f in flags_of(r) for r in self.runs)]

    @property
    def expected_failures(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for run in self.runs:
            for e in run.entries:
                if e.expected:
                    out[e.name] = out.get(e.name, 0) + e.expected
        return out


def group_runs(runs: list[Results]) -> list[Group]:
    """Column groups for runs of one workflow: by user count, plus any workflow option or arrival rate
    that differs between the runs; runs with equal keys are repeats and merge."""
    workflows = sorted({r.run.workflow for r in runs})
    if len(workflows) > 1:
        raise FolioperfError(f"runs of different workflows ({', '.join(workflows)}) cannot share one table: "
                             "report or compare them separately")
    keys = [_options(r) for r in runs]
    names = sorted({k for key in keys for k in key})
    varying = [k for k in names if len({key.get(k) for key in keys}) > 1]
    groups: dict[tuple, Group] = {}
    for run, key in zip(runs, keys):
        extra = tuple((k, key.get(k)) for k in varying)
        gid = (run.run.users, extra)
        if gid not in groups:
            label = f"{run.run.users} user" + ("" if run.run.users == 1 else "s")
            label += "".join(f", {k}={v}" for k, v in extra)
            groups[gid] = Group(label=label, users=run.run.users, runs=[])
        groups[gid].runs.append(run)
    return [groups[g] for g in sorted(groups, key=lambda g: (g[0], [str(v) for _, v in g[1]]))]


def _options(run: Results) -> dict[str, str]:
    options = {k: json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else str(v)
               for k, v in run.run.options.items()}
    if run.run.rate:
        options["rate"] = f"{run.run.rate:g}/s"
    return options


def _weighted(values: list[float], entries: list[Entry]) -> float | None:
    counts = [e.count for e in entries]
    total = sum(counts)
    if not values:
        return None
    return sum(v * c for v, c in zip(values, counts)) / total if total else sum(values) / len(values)
