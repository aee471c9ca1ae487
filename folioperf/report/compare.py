"""Comparing two result sets the PTF way — Delta % = (base − new) / base, positive when NEW is faster,
changes within ±5 % being the margin of error — with bootstrap confidence intervals when the data
allows, and gates for CI pipelines modelled on pytest-benchmark's `--benchmark-compare-fail`.

One sign convention everywhere (tables, gates, gate messages): a Delta is positive when NEW is better —
faster (latency), more transactions per second (throughput), fewer failures.

Confidence intervals (95 %, percentile bootstrap, fixed seed so a report is reproducible):
- both sides have HDR histograms: each replicate draws, per side, the runs with replacement (when
  repeated) and then each drawn run's requests from its histogram (a multinomial draw over its
  buckets); the statistic (mean or percentile) of the pooled replicate gives one delta;
- no histograms but at least two runs per side: replicates draw runs with replacement and take the
  count-weighted mean of their values;
- otherwise: no interval.
A single run's interval covers sampling noise only (requests treated as independent); repeated runs
also cover run-to-run variation, which is usually larger.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

from folioperf.errors import FolioperfError
from folioperf.report.document import Cell, Chart, Document, Section, Series, Table
from folioperf.report.formats import fmt_duration, fmt_run_length, fmt_time, unit_name
from folioperf.report.modules import module_stats, traced_rows
from folioperf.report.runs import (
    FEW_MARK,
    MIN_SAMPLES,
    TRANSACTION,
    Group,
    Stat,
    flags_of,
    group_runs,
    kind_of,
)
from folioperf.report.servers import TABLES as SERVER_TABLES
from folioperf.report.servers import figures, fmt_value, metric_title, unit_of
from folioperf.report.tables import DEFAULT_SLOW_MS, FLAG_TEXT
from folioperf.results import Results
from folioperf.wording import plural

if TYPE_CHECKING:
    import numpy as np

MARGIN_PCT = 5.0
METRICS = ("avg", "p50", "p75", "p95")
METRIC_TITLES = {"avg": "Average", "p50": "50th percentile", "p75": "75th percentile", "p90": "90th percentile",
                 "p95": "95th percentile", "p99": "99th percentile"}
LATENCY = ("avg", "p50", "p75", "p90", "p95", "p99")
GATE_METRICS = (*LATENCY, "failures", "rps")
BOOTSTRAP_REPLICATES = 2000
CONFIDENCE = 0.95
_CHUNK = 250


# -- deltas -----------------------------------------------------------------------------------------
def change(metric: str, base: float, new: float) -> float:
    """NEW against BASE, positive when NEW is better: lower latency or failures, higher throughput (rps)."""
    return new - base if metric == "rps" else base - new


def delta_pct(base: float, new: float, metric: str = "avg") -> float:
    """The PTF delta in %, positive when NEW is better; for latency (base − new) / base."""
    return change(metric, base, new) / base * 100.0


def fmt_pct(value: float) -> str:
    value = round(value, 2)
    return f"{value + 0.0:.2f}%"  # + 0.0 turns -0.0 into 0.0


@dataclass
class Delta:
    base: float | None
    new: float | None
    ci: tuple[float, float] | None = None  # of the delta %, when a bootstrap was possible
    margin: float = MARGIN_PCT
    few: bool = False  # a side rests on fewer than MIN_SAMPLES samples: shown, never highlighted

    @property
    def pct(self) -> float | None:
        return delta_pct(self.base, self.new) if self.base and self.new is not None else None

    @property
    def verdict(self) -> str:
        """faster, slower, within margin (|delta| ≤ margin), noise (beyond the margin, but the
        confidence interval includes no change), or too few (samples to tell)."""
        pct = self.pct
        if pct is None:
            return ""
        if self.few:
            return "too few"
        if abs(pct) <= self.margin:
            return "within margin"
        if self.ci and self.ci[0] <= 0 <= self.ci[1]:
            return "noise"
        return "faster" if pct > 0 else "slower"

    def cell(self) -> Cell:
        if self.pct is None:
            return Cell("–")
        text = fmt_pct(self.pct)
        if self.ci and not self.few:
            text += f" [{self.ci[0]:.1f} … {self.ci[1]:.1f}]"
        marker, style = {"within margin": (" ≈", "muted"), "noise": (" ~", "muted"), "faster": ("", "good"),
                         "slower": ("", "bad"), "too few": (f" {FEW_MARK}", "muted")}[self.verdict]
        return Cell(text + marker, style)


@dataclass
class Pair:
    label: str
    base: Group
    new: Group

    @property
    def header(self) -> str:
        return self.label + (" ⚠" if self.base.flags or self.new.flags else "")


@dataclass
class Comparison:
    base_label: str
    new_label: str
    base_runs: list[Results]
    new_runs: list[Results]
    pairs: list[Pair]
    margin: float = MARGIN_PCT
    notes: list[str] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)  # how the compared runs were made differently
    _cis: dict = field(default_factory=dict, repr=False)

    @property
    def mismatch(self) -> str | None:
        """One line naming what differs between the two sides' runs, or None when they ran alike."""
        if not self.differences:
            return None
        return (f"{self.base_label} and {self.new_label} ran different tests ({'; '.join(self.differences)}): "
                "their deltas compare unlike loads")

    def transactions(self) -> list[str]:
        names = [set(p.base.names(TRANSACTION)) & set(p.new.names(TRANSACTION)) for p in self.pairs]
        return sorted(set.union(*names)) if names else []

    def stats(self, pair: Pair, name: str) -> tuple[Stat, Stat] | None:
        """Both sides' stats of a transaction (or, for other names, of the first type holding it)."""
        base, new = _by_name(pair.base, name), _by_name(pair.new, name)
        return (base, new) if base and new else None

    def delta(self, pair: Pair, name: str, metric: str) -> Delta | None:
        both = self.stats(pair, name)
        if both is None:
            return None
        base, new = both
        if too_few(base, new):  # no interval either: a bootstrap of a sample or two only repeats them
            return Delta(base.value(metric), new.value(metric), None, self.margin, few=True)
        ci = self._ci(pair, name, base, new).get(metric) if metric in LATENCY else None
        return Delta(base.value(metric), new.value(metric), ci, self.margin)

    def _ci(self, pair: Pair, name: str, base: Stat, new: Stat) -> dict[str, tuple[float, float]]:
        key = (pair.label, name)
        if key not in self._cis:
            self._cis[key] = bootstrap_cis(base, new)
        return self._cis[key]


def too_few(*stats: Stat) -> bool:
    """Whether a figure of these stats rests on fewer than MIN_SAMPLES samples on some side."""
    return any(s.count < MIN_SAMPLES for s in stats)


def _by_name(group: Group, name: str) -> Stat | None:
    """A transaction by name, else an entry of any other kind with that name."""
    return group.stat(TRANSACTION, name) or next((s for (t, n), s in sorted(group.stats.items()) if n == name), None)


def compare_runs(base_runs: list[Results], new_runs: list[Results], base_label: str | None = None,
                 new_label: str | None = None, margin: float = MARGIN_PCT) -> Comparison:
    """Pair the column groups of both sides by label (user count and varying options); two single
    groups pair whatever their labels."""
    base_groups, new_groups = group_runs(base_runs), group_runs(new_runs)
    workflows = {base_runs[0].run.workflow, new_runs[0].run.workflow}
    if len(workflows) > 1:
        raise FolioperfError(f"cannot compare different workflows: {' and '.join(sorted(map(str, workflows)))}")
    base_label = base_label or _side_label(base_runs, "base")
    new_label = new_label or _side_label(new_runs, "new")
    if base_label == new_label:
        base_label, new_label = f"{base_label} (base)", f"{new_label} (new)"
    cmp = Comparison(base_label, new_label, base_runs, new_runs, [], margin)
    if len(base_groups) == 1 and len(new_groups) == 1:
        b, n = base_groups[0], new_groups[0]
        cmp.pairs.append(Pair(b.label if b.label == n.label else f"{b.label} → {n.label}", b, n))
    else:
        new_by_label = {g.label: g for g in new_groups}
        for b in base_groups:
            if b.label in new_by_label:
                cmp.pairs.append(Pair(b.label, b, new_by_label.pop(b.label)))
            else:
                cmp.notes.append(f"{b.label}: only in {base_label}; not compared.")
        cmp.notes += [f"{label}: only in {new_label}; not compared." for label in new_by_label]
    if not cmp.pairs:
        raise FolioperfError("the two sides share no user count: nothing to compare")
    cmp.differences = differences(cmp.pairs)
    return cmp


def differences(pairs: list[Pair]) -> list[str]:
    """What differs between the runs of each pair, BASE's value first: user count, test duration, arrival
    rate and options (think time, auth, workflow options)."""
    found: dict[str, tuple[set[str], set[str]]] = {}

    def note(key: str, base: set[str], new: set[str]) -> None:
        if base != new:
            b, n = found.setdefault(key, (set(), set()))
            b.update(base)
            n.update(new)

    for pair in pairs:
        note("users", {str(pair.base.users)}, {str(pair.new.users)})
        b_len = [_length(r) for r in pair.base.runs]
        n_len = [_length(r) for r in pair.new.runs]
        if not _alike(b_len + n_len):
            note("duration", {fmt_duration(x) for x in b_len}, {fmt_duration(x) for x in n_len})
        b_opts, n_opts = [_conditions(r) for r in pair.base.runs], [_conditions(r) for r in pair.new.runs]
        for key in sorted({k for o in b_opts + n_opts for k in o}):
            note(key, {o.get(key, "unset") for o in b_opts}, {o.get(key, "unset") for o in n_opts})

    def listed(values: set[str]) -> str:
        return ", ".join(sorted(values, key=lambda v: (len(v), v) if v.isdigit() else (0, v)))

    return [f"{key} {listed(b)} vs {listed(n)}" for key, (b, n) in found.items()]


def _length(run: Results) -> float:
    """The test's duration as asked, or its wall time when none was asked (a test stopped by hand)."""
    return run.run.duration_s or run.run.elapsed_s


def _alike(lengths: list[float]) -> bool:
    """Durations within 10 % of each other: runs stopped by hand are never exactly as long."""
    return max(lengths) <= 1.1 * min(lengths)


def _conditions(run: Results) -> dict[str, str]:
    out = {k.replace("_", " "): str(v) for k, v in run.run.options.items()}
    if run.run.rate:
        out["rate"] = f"{run.run.rate:g}/s"
    return out


def _side_label(runs: list[Results], default: str) -> str:
    tags = {r.run.tag for r in runs}
    tag = tags.pop() if len(tags) == 1 else None
    return default if tag is None else tag


# -- bootstrap --------------------------------------------------------------------------------------
def bootstrap_cis(base: Stat, new: Stat, metrics: Iterable[str] = LATENCY, replicates: int = BOOTSTRAP_REPLICATES,
                  seed: int = 0) -> dict[str, tuple[float, float]]:
    """95 % intervals of the delta % per metric, or {} when neither histograms on both sides nor
    repeated runs on both sides allow one."""
    import numpy as np

    metrics = list(metrics)
    rng = np.random.default_rng(seed)
    if base.buckets and new.buckets:
        b = _replicate_histograms(base.buckets, metrics, replicates, rng)
        n = _replicate_histograms(new.buckets, metrics, replicates, rng)
    elif len(base.run_values) > 1 and len(new.run_values) > 1:
        b = _replicate_runs(base, metrics, replicates, rng)
        n = _replicate_runs(new, metrics, replicates, rng)
    else:
        return {}
    out = {}
    tail = (1 - CONFIDENCE) / 2 * 100
    for i, metric in enumerate(metrics):
        with np.errstate(divide="ignore", invalid="ignore"):
            deltas = (b[i] - n[i]) / b[i] * 100
        deltas = deltas[np.isfinite(deltas)]
        if len(deltas):
            lo, hi = np.percentile(deltas, [tail, 100 - tail])
            out[metric] = (float(lo), float(hi))
    return out


def _replicate_histograms(runs: list[dict[int, int]], metrics: list[str], replicates: int, rng) -> "np.ndarray":
    """(metric, replicate) statistics in ms: runs drawn with replacement, then requests per run from
    its buckets; a bucket stands for its midpoint and percentiles are nearest-rank, as in metrics."""
    import numpy as np

    keys = np.array(sorted({k for r in runs for k in r}), dtype=np.int64)
    index = {int(k): i for i, k in enumerate(keys)}
    widths = np.array([1 << max(0, int(k).bit_length() - 11) for k in keys], dtype=float)
    values = keys + (widths - 1) / 2
    counts = np.zeros((len(runs), len(keys)), dtype=np.int64)
    for i, r in enumerate(runs):
        for k, c in r.items():
            counts[i, index[k]] += c
    totals = counts.sum(axis=1)
    probs = counts / np.maximum(totals, 1)[:, None]
    out = np.empty((len(metrics), replicates))
    for start in range(0, replicates, _CHUNK):
        size = min(_CHUNK, replicates - start)
        draws = np.stack([rng.multinomial(totals[r], probs[r], size=size) for r in range(len(runs))])
        chosen = rng.integers(0, len(runs), size=(size, len(runs)))
        pooled = draws[chosen, np.arange(size)[:, None]].sum(axis=1)  # (size, buckets)
        total = pooled.sum(axis=1)
        cum = np.cumsum(pooled, axis=1)
        for i, metric in enumerate(metrics):
            if metric == "avg":
                stat = pooled @ values / np.maximum(total, 1)
            else:
                rank = np.maximum(1, np.ceil(np.round(float(metric[1:]) / 100 * total, 9)))
                stat = values[np.argmax(cum >= rank[:, None], axis=1)]
            out[i, start: start + size] = stat / 1000.0
    return out


def _replicate_runs(stat: Stat, metrics: list[str], replicates: int, rng) -> "np.ndarray":
    import numpy as np

    n = len(stat.run_values)
    chosen = rng.integers(0, n, size=(replicates, n))
    out = np.empty((len(metrics), replicates))
    for i, metric in enumerate(metrics):
        values = np.array([rv[metric] for rv in stat.run_values])
        out[i] = values[chosen].mean(axis=1)
    return out


# -- the comparison report --------------------------------------------------------------------------
def build_comparison(cmp: Comparison, unit: str = "s", slow_threshold_ms: float = DEFAULT_SLOW_MS) -> Document:
    doc = Document(title=f"{cmp.base_runs[0].run.workflow} — {cmp.base_label} vs {cmp.new_label}")
    for label, runs in ((cmp.base_label, cmp.base_runs), (cmp.new_label, cmp.new_runs)):
        doc.facts.append((label.capitalize() if label in ("base", "new") else label, _side_summary(runs)))
        for run in runs:
            doc.warnings += [f"{label}, {plural(run.run.users, 'user')} ({run.path.name}): "
                             f"{FLAG_TEXT[f].format(peak='')}." for f in flags_of(run)]
    if cmp.mismatch:
        doc.warnings.insert(0, cmp.mismatch + ".")
    names = cmp.transactions()
    section = Section("Response time comparison")
    section.paragraphs.append(
        f"Delta % = ({cmp.base_label} − {cmp.new_label}) / {cmp.base_label}: positive means {cmp.new_label} is "
        f"faster. ≈ marks changes within ±{cmp.margin:g} %, the margin of error.")
    if any((d := cmp.delta(p, n, "avg")) and d.ci for p in cmp.pairs for n in names):
        section.paragraphs.append(
            f"[low … high] is the {CONFIDENCE:.0%} bootstrap confidence interval of the delta; ~ marks a change "
            "beyond the margin whose interval includes no change (noise, not a real difference).")
    if any((d := cmp.delta(p, n, "avg")) and d.few for p in cmp.pairs for n in names):
        section.paragraphs.append(
            f"{FEW_MARK} marks a delta resting on fewer than {MIN_SAMPLES} samples on a side: too few to tell a change "
            "from chance, so it is neither highlighted, nor given an interval, nor gated on.")
    if not names:
        section.paragraphs.append("The two sides share no business transaction.")
    for metric in METRICS:
        if not names:
            break
        table = Table(f"{METRIC_TITLES[metric]} ({unit_name(unit)})",
                      ["Users"] + [c for _ in names for c in (cmp.base_label, cmp.new_label, "Delta")],
                      groups=[(n, 3) for n in names])
        for pair in cmp.pairs:
            cells: list[Cell | str] = [pair.header]
            for name in names:
                d = cmp.delta(pair, name, metric)
                cells += [fmt_time(d.base, unit), fmt_time(d.new, unit), d.cell()] if d else ["–", "–", "–"]
            table.add(*cells)
        section.tables.append(table)
    section.paragraphs += cmp.notes
    if names and len(cmp.pairs) > 1:
        section.charts.append(_p95_chart(cmp, names, unit))
    doc.sections.append(section)
    doc.sections.append(Section("APIs", tables=[slow_api_comparison(cmp, unit, slow_threshold_ms)]))
    modules = modules_comparison(cmp, unit)
    if modules is not None:
        doc.sections.append(modules)
    servers = servers_comparison(cmp)
    if servers is not None:
        doc.sections.append(servers)
    doc.sections.append(Section("Throughput and failures", tables=[throughput_comparison(cmp)]))
    return doc


def modules_comparison(cmp: Comparison, unit: str) -> Section | None:
    """Per transaction and API traced on both sides (--trace): each module's average time per request and its
    delta, so a regression points at a module."""
    groups = [g for p in cmp.pairs for g in (p.base, p.new)]
    rows = [row for row in traced_rows(groups)
            if any(module_stats(p.base, *row) and module_stats(p.new, *row) for p in cmp.pairs)]
    if not rows:
        return None
    section = Section("Where the time goes")
    section.paragraphs.append(
        f"Each FOLIO module's average time per request, from Okapi's X-Okapi-Trace headers; Delta % = "
        f"({cmp.base_label} − {cmp.new_label}) / {cmp.base_label}, positive when {cmp.new_label} spends less "
        f"time in the module; ≈ marks changes within ±{cmp.margin:g} %.")
    for type_, name in rows:
        table = Table(f"{name}{' (transaction)' if type_ == TRANSACTION else ''}: time per module ({unit_name(unit)})",
                      ["Module"] + [c for _ in cmp.pairs for c in (cmp.base_label, cmp.new_label, "Delta")],
                      groups=[(p.header, 3) for p in cmp.pairs])
        sides = [({s.module: s for s in module_stats(p.base, type_, name)},
                  {s.module: s for s in module_stats(p.new, type_, name)}) for p in cmp.pairs]
        modules = [s.module for s in module_stats(cmp.pairs[-1].new, type_, name)]
        modules += sorted({m for b, n in sides for m in (*b, *n)} - set(modules))
        for module in modules:
            cells: list[Cell | str] = [module]
            for base, new in sides:
                b, n = base.get(module), new.get(module)
                cells += [fmt_time(b.average if b else None, unit), fmt_time(n.average if n else None, unit),
                          Delta(b.average, n.average, margin=cmp.margin).cell() if b and n else "–"]
            table.add(*cells)
        section.tables.append(table)
    return section


def servers_comparison(cmp: Comparison) -> Section | None:
    """Each module's, database's and host's average over the run per user count on both sides (folioperf.servers),
    and its delta, so a regression in response times can be set beside what the servers spent."""
    runs = cmp.base_runs + cmp.new_runs
    if not any(r.server for r in runs):
        return None
    section = Section("Servers")
    section.paragraphs.append(
        f"The average over each run (for the database's freeable memory: what the run consumed); Delta % = "
        f"({cmp.base_label} − {cmp.new_label}) / {cmp.base_label}, positive when {cmp.new_label} spends less; "
        f"≈ marks changes within ±{cmp.margin:g} %.")
    for title, column, metrics in SERVER_TABLES:
        for metric in metrics:
            if not any(r.server and metric in r.server.metrics() for r in runs):
                continue
            name = (f"{title} ({unit_of(runs, metric)})" if len(metrics) == 1
                    else f"{title}: {metric_title(metric, runs)}")
            table = Table(name, ["Users", column, cmp.base_label, cmp.new_label, "Delta"], stub=2)
            for pair in cmp.pairs:
                base, new = figures(pair.base, metric), figures(pair.new, metric)
                for subject in sorted(set(base) | set(new)):
                    b, n = (None if f is None else f.consumed if metric == "db_freeable_memory_mb" else f.avg
                            for f in (base.get(subject), new.get(subject)))
                    table.add(pair.header, subject, "–" if b is None else fmt_value(b, metric),
                              "–" if n is None else fmt_value(n, metric),
                              Delta(b, n, margin=cmp.margin).cell() if b is not None and n is not None else "–")
            section.tables.append(table)
    return section


def _p95_chart(cmp: Comparison, names: list[str], unit: str) -> Chart:
    scale = 1000.0 if unit == "s" else 1.0
    xs = list(range(len(cmp.pairs)))
    series = []
    for name in names:
        for label, side, dashed in ((cmp.base_label, "base", False), (cmp.new_label, "new", True)):
            values = []
            for pair in cmp.pairs:
                stat = _by_name(getattr(pair, side), name)
                p95 = stat.percentiles["p95"] if stat else None
                values.append(float("nan") if p95 is None else p95 / scale)
            series.append(Series(f"{name} {label}", xs, values, dashed=dashed, key=name))
    return Chart(f"95th percentile per user count: {cmp.base_label} (solid) vs {cmp.new_label} (dashed)", "",
                 unit_name(unit), series, kind="category", categories=[p.label for p in cmp.pairs])


def _side_summary(runs: list[Results]) -> str:
    first = runs[0].run
    modules = sorted({m for r in runs for m in r.run.target.modules})
    users = ", ".join(str(u) for u in sorted({r.run.users for r in runs}))
    parts = [plural(len(runs), "run"), f"users {users}", fmt_run_length([r.run for r in runs]),
             first.target.url, min(r.run.start for r in runs).strftime("%Y-%m-%d")]
    if modules:
        parts.append(", ".join(modules))
    return "; ".join(parts)


def slow_api_comparison(cmp: Comparison, unit: str, threshold_ms: float) -> Table:
    table = Table(f"APIs slower than {threshold_ms:g} ms at the 75th percentile ({unit_name(unit)})",
                  ["API"] + [c for _ in cmp.pairs for c in (cmp.base_label, cmp.new_label, "Delta")],
                  groups=[(p.header, 3) for p in cmp.pairs])
    names = sorted({n for p in cmp.pairs for g in (p.base, p.new) for (t, n), s in g.stats.items()
                    if kind_of(t) == "API" and (s.percentiles["p75"] or 0) > threshold_ms})
    for name in names:
        cells: list[Cell | str] = [name]
        for pair in cmp.pairs:
            b, n = pair.base.find("API", name), pair.new.find("API", name)
            cells += [fmt_time(b.percentiles["p75"] if b else None, unit),
                      fmt_time(n.percentiles["p75"] if n else None, unit)]
            cells.append(Delta(b.percentiles["p75"], n.percentiles["p75"], margin=cmp.margin).cell() if b and n else "–")
        table.add(*cells)
    if not names:
        table.notes.append(f"No API was slower than {threshold_ms:g} ms at the 75th percentile on either side.")
    return table


def throughput_comparison(cmp: Comparison) -> Table:
    sides = [cmp.base_label, cmp.new_label]
    table = Table("Throughput and failures", ["Users", *sides, *sides, "Delta", *sides],
                  groups=[("Transactions", 2), ("Per second", 3), ("Failures", 2)])
    for pair in cmp.pairs:
        b, n = _totals(pair.base), _totals(pair.new)
        delta = fmt_pct(delta_pct(b[1], n[1], "rps")) if b[1] else "–"
        table.add(pair.header, f"{b[0]:,}", f"{n[0]:,}", f"{b[1]:.2f}", f"{n[1]:.2f}", delta,
                  Cell(f"{b[2]:,}", "bad" if b[2] else ""), Cell(f"{n[2]:,}", "bad" if n[2] else ""))
    table.notes.append(f"Delta % = ({cmp.new_label} − {cmp.base_label}) / {cmp.base_label} of the transactions per "
                       f"second: positive means {cmp.new_label} has more throughput.")
    return table


def _totals(group: Group) -> tuple[int, float, int]:
    stats = [s for (t, _), s in group.stats.items() if t == TRANSACTION] or \
            [s for (t, _), s in group.stats.items() if kind_of(t) == "API"]
    return sum(s.count for s in stats), sum(s.rps for s in stats), sum(s.failures for s in stats)


# -- gates ------------------------------------------------------------------------------------------
_GATE = re.compile(
    r"^\s*(?:(?P<name>.+?)\s*:\s*)?(?P<metric>[a-z0-9]+)\s*(?P<op>[<>])\s*(?P<sign>[+-])?\s*"
    r"(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>%|ms|s)?\s*$")


@dataclass
class Gate:
    """`[NAME:]METRIC OP [±]THRESHOLD[%|ms|s]`. A signed threshold limits the Delta from BASE to NEW, which
    is positive when NEW is better, as in the tables: the gate fails when the Delta falls below it
    (`p95<-5%`: p95 more than 5 % slower; `rps<-10%`: 10 % less throughput; `avg<-50ms`: the average
    50 ms slower; `failures<-0`: more failures). An unsigned one limits NEW's own value (`p95>800ms`,
    `failures>0`, `failures>1%` of requests, `rps<20`). Without NAME a gate applies to every transaction
    of every user count."""

    text: str
    name: str | None
    metric: str
    op: str
    threshold: float
    change: bool
    unit: str  # "%", "ms", or "" (a count or requests per second)

    def crossed(self, value: float) -> bool:
        return value > self.threshold if self.op == ">" else value < self.threshold


def parse_gate(text: str) -> Gate:
    m = _GATE.match(text)
    if not m:
        raise FolioperfError(f"invalid gate {text!r}: expected [NAME:]METRIC>|<[+|-]NUMBER[%|ms|s], "
                             f"e.g. 'p95<-5%' or 'Check-out:p95>800ms'")
    metric, sign, unit = m["metric"], m["sign"], m["unit"] or ""
    if metric not in GATE_METRICS:
        raise FolioperfError(f"invalid gate {text!r}: unknown metric {metric!r} (use {'|'.join(GATE_METRICS)})")
    value = float(m["num"]) * (-1 if sign == "-" else 1)
    if metric in LATENCY:
        if unit == "" or (unit == "%" and not sign):
            raise FolioperfError(f"invalid gate {text!r}: a {metric} threshold needs ms or s, or a signed % "
                                 f"Delta (e.g. {metric}<-5%)")
    elif unit in ("ms", "s"):
        raise FolioperfError(f"invalid gate {text!r}: {metric} is not a time; use a number or %")
    elif metric == "rps" and unit == "%" and not sign:
        raise FolioperfError(f"invalid gate {text!r}: an rps threshold in % must be a signed Delta (e.g. rps<-10%)")
    if sign and m["op"] == ">":
        name = f"{m['name']}:" if m["name"] else ""
        raise FolioperfError(f"invalid gate {text!r}: a signed threshold limits the Delta, which is positive when NEW "
                             f"is better (faster, more throughput, fewer failures), so a gate fails when it falls "
                             f"below: for a regression of more than {m['num']}{unit} write "
                             f"'{name}{metric}<-{m['num']}{unit}'")
    if unit == "s":
        value, unit = value * 1000, "ms"
    return Gate(text.strip(), m["name"], metric, m["op"], value, bool(sign), unit)


@dataclass
class GateResult:
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # crossed, but within the noise
    skipped: list[str] = field(default_factory=list)  # not gated: too few samples


def check_gates(cmp: Comparison, gates: list[Gate], unit: str = "s") -> GateResult:
    result = GateResult()
    for gate in gates:
        matched = False
        for pair in cmp.pairs:
            names = [gate.name] if gate.name else (cmp.transactions() or sorted(
                set(pair.base.names("API")) & set(pair.new.names("API"))))
            for name in names:
                both = cmp.stats(pair, name)
                if both is None:
                    continue
                matched = True
                _check(cmp, gate, pair, name, *both, unit, result)
        if not matched:
            have = ", ".join(cmp.transactions()) or "none"
            raise FolioperfError(f"gate {gate.text!r} matches nothing present on both sides (transactions: {have})")
    return result


def _check(cmp: Comparison, gate: Gate, pair: Pair, name: str, base: Stat, new: Stat, unit: str,
           result: GateResult) -> None:
    b, n = _gate_value(gate, base), _gate_value(gate, new)
    if b is None or n is None:  # nothing was timed (every request failed before a response)
        return
    where = f"{gate.text}: {name} at {pair.label}"
    if gate.metric != "failures" and too_few(*((base, new) if gate.change else (new,))):
        # a failure counted is a fact; a latency or a rate of a sample or two is an anecdote
        counts = f"{base.count:,} and {new.count:,} samples" if gate.change else plural(new.count, "sample")
        result.skipped.append(f"{where}: {counts} (fewer than {MIN_SAMPLES} say too little)")
        return

    def show(v: float) -> str:
        if gate.metric in LATENCY:
            return f"{fmt_time(v, unit)} {unit}"
        if gate.metric == "rps":
            return f"{v:.2f}/s"
        return f"{v:.2f}%" if gate.unit == "%" and not gate.change else f"{v:,.0f}"

    if not gate.change:
        if gate.crossed(n):
            result.failures.append(f"{where}: {cmp.new_label} {show(n)}")
        return
    if gate.unit == "%":
        if b == 0:  # only failures can start from nothing
            delta = 0.0 if n == 0 else -math.inf
            text = "Delta -∞ (none before)" if n else "Delta 0.00%"
        else:
            delta = delta_pct(b, n, gate.metric)
            text = f"Delta {fmt_pct(delta)}"
    else:
        delta = change(gate.metric, b, n)
        text = f"Delta {delta + 0.0:.1f} ms" if gate.metric in LATENCY else f"Delta {delta + 0.0:,.2f}"
    if not gate.crossed(delta):
        return
    line = f"{where}: {show(b)} → {show(n)} ({text})"
    if gate.metric in LATENCY:
        d = cmp.delta(pair, name, gate.metric)
        if d and d.ci:
            lo, hi = d.ci
            line += f", {CONFIDENCE:.0%} CI [{lo:.1f} … {hi:.1f}]"
            if lo <= 0 <= hi:
                result.notes.append(line + ": within noise, not failed")
                return
    result.failures.append(line)


def _gate_value(gate: Gate, stat: Stat) -> float | None:
    if gate.metric in LATENCY:
        return stat.value(gate.metric)
    if gate.metric == "rps":
        return stat.rps
    if gate.unit == "%" and not gate.change:  # failures as a share of requests
        return 100.0 * stat.failures / stat.count if stat.count else 0.0
    return float(stat.failures)
