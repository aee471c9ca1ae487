"""The servers in a report (folioperf.servers): each FOLIO module's CPU and memory, the database's CPU,
connections and memory, the hosts' CPU. As the PTF's tables: a row per user count and module, the average and
the maximum over the run (repeated runs of a user count: the average of their averages, the highest maximum);
charts over the run in the HTML report; for runs over two hours each module's memory hour by hour, flagged when
it grows (folioperf.servers.series: GROWTH_FLAG_PCT, FALL_TOLERANCE_PCT)."""

from __future__ import annotations

from dataclasses import dataclass

from folioperf.report.document import Cell, Chart, Section, Series, Table
from folioperf.report.formats import group_header
from folioperf.report.runs import Group
from folioperf.results import Results
from folioperf.servers.series import FALL_TOLERANCE_PCT, GROWTH_FLAG_PCT, METRICS

LONG_RUN_S = 2 * 3600  # as the report's longevity section
CHART_SUBJECTS = 10  # the busiest modules in a chart
# (title, subject column, metrics): each table of the section
TABLES = (
    ("Service CPU utilization", "Module", ("module_cpu",)),
    ("Service memory utilization", "Module", ("module_memory_percent",)),
    ("Service memory", "Module", ("module_memory_mb",)),
    ("Database", "Database", ("db_cpu", "db_connections", "db_freeable_memory_mb")),
    ("Host CPU utilization", "Host", ("host_cpu",)),
)

CHART_TITLES = {"module_cpu": "Service CPU utilization", "module_memory_mb": "Service memory",
                "module_memory_percent": "Service memory utilization", "db_cpu": "Database CPU",
                "db_connections": "Database connections", "db_freeable_memory_mb": "Database freeable memory",
                "host_cpu": "Host CPU utilization"}


@dataclass(frozen=True)
class Figure:
    """A subject's metric over a group's runs: the average and maximum, and the lowest value and the first
    (for freeable memory: the memory the run consumed)."""

    avg: float
    max: float
    min: float
    first: float

    @property
    def consumed(self) -> float:
        return self.first - self.min


def figures(group: Group, metric: str) -> dict[str, Figure]:
    """Per subject: its figure in the group (None-free: subjects without points in every run are averaged over
    the runs that have them)."""
    per: dict[str, list] = {}
    for run in group.runs:
        server = run.server
        if server is None:
            continue
        for subject in server.subjects(metric):
            s = server.summary(metric, subject)
            if s is not None:
                per.setdefault(subject, []).append(s)
    return {subject: Figure(sum(s.avg for s in ss) / len(ss), max(s.max for s in ss), min(s.min for s in ss),
                            sum(s.first for s in ss) / len(ss)) for subject, ss in per.items()}


def unit_of(runs: list[Results], metric: str) -> str:
    units = sorted({r.server.units.get(metric, "") for r in runs if r.server and metric in r.server.metrics()})
    return " or ".join(u for u in units if u)


def fmt_value(value: float, metric: str) -> str:
    if metric == "db_connections":
        return f"{value:,.1f}" if value % 1 else f"{value:,.0f}"
    if metric.endswith("_mb"):
        return f"{value:,.0f}"
    return f"{value:.1f}" if abs(value) < 10 else f"{value:,.0f}"


def servers_section(groups: list[Group]) -> Section:
    section = Section("Servers")
    runs = [r for g in groups for r in g.runs]
    measured = [r for r in runs if r.server is not None]
    if not measured:
        section.paragraphs.append("No server metrics: these runs were made without a source (`--server-metrics "
                                  "prometheus:URL` or `cloudwatch` for your FOLIO; the sandbox's are collected by "
                                  "default).")
        return section
    sources = sorted({f"{r.server.source} every {r.server.step_s:g} s" for r in measured if r.server})
    section.paragraphs.append(f"Collected during the run from {', '.join(sources)}: the average and the maximum over "
                              "the run, per user count.")
    section.paragraphs += [f"Server metrics: {n}" for n in sorted({n for r in measured if r.server
                                                                    for n in r.server.notes})]
    for title, column, metrics in TABLES:
        table = metric_table(groups, title, column, metrics)
        if table is not None:
            section.tables.append(table)
    if not section.tables:
        section.paragraphs.append("The source gave no figures for these runs.")
    for group in groups:
        for run in group.runs:
            label = group.label if len(group.runs) == 1 else f"{group.label}, {run.path.name}"
            if run.run.elapsed_s > LONG_RUN_S:
                table = memory_trend_table(run, label)
                if table is not None:
                    section.tables.append(table)
            section.charts += run_charts(run, label)
    return section


def metric_table(groups: list[Group], title: str, column: str, metrics: tuple[str, ...]) -> Table | None:
    runs = [r for g in groups for r in g.runs]
    present = [m for m in metrics if any(r.server and m in r.server.metrics() for r in runs)]
    if not present:
        return None
    single = len(present) == 1
    headers = ["Average", "Maximum"]
    if single:
        title = f"{title} ({unit_of(runs, present[0])})"
    table = Table(title, ["Users", column] + [h for m in present for h in _headers(m, headers)], stub=2,
                  groups=[] if single else [(metric_title(m, runs), len(_headers(m, headers))) for m in present])
    for group in groups:
        per = {m: figures(group, m) for m in present}
        for subject in sorted({s for f in per.values() for s in f}):
            cells: list[Cell | str] = [group_header(group), subject]
            for m in present:
                f = per[m].get(subject)
                if f is None:
                    cells += ["–"] * len(_headers(m, headers))
                elif m == "db_freeable_memory_mb":
                    cells += [fmt_value(f.min, m), fmt_value(f.consumed, m)]
                else:
                    cells += [fmt_value(f.avg, m), fmt_value(f.max, m)]
            table.add(*cells)
    if "db_freeable_memory_mb" in present:
        table.notes.append("Freeable memory: the lowest during the run, and how much less that is than at its start "
                           "(the memory the run consumed, as the PTF reads RDS's FreeableMemory).")
    return table


def metric_title(metric: str, runs: list[Results]) -> str:
    """"CPU (% of one core)", "Connections": the metric's name and its unit, when that says more."""
    title, unit = METRICS[metric].title, unit_of(runs, metric)
    return title if unit.lower() in ("", title.lower()) else f"{title} ({unit})"


def _headers(metric: str, headers: list[str]) -> list[str]:
    return ["Lowest", "Consumed"] if metric == "db_freeable_memory_mb" else headers


def memory_trend_table(run: Results, label: str) -> Table | None:
    assert run.server is not None
    trends = run.server.trends()
    if not trends:
        return None
    metric = trends[0].metric
    trends = [t for t in trends if t.metric == metric]  # one unit: % of the limit where known, else MB
    table = Table(f"Service memory hour by hour — {label} ({run.server.units.get(metric, '')})",
                  ["Module", "1st hour", "Last hour", "Highest hour", "Growth", "Trend"])
    for t in sorted(trends, key=lambda t: (not t.grows, t.subject)):
        known = [h for h in t.hours if h is not None]
        if not known:
            continue
        growth = "–" if t.growth_pct is None else f"{t.growth_pct:+.1f}%"
        table.add(Cell(t.subject, "strong" if t.grows else ""), fmt_value(known[0], metric),
                  fmt_value(known[-1], metric), fmt_value(max(known), metric), growth,
                  Cell("grows", "warn") if t.grows else Cell("steady", "muted"))
    table.notes.append(f"Grows: the last hour's average is at least {GROWTH_FLAG_PCT:g}% above the first hour's and "
                       f"no hour's average fell more than {FALL_TOLERANCE_PCT:g}% below the hour before (memory that "
                       "kept growing, not a spike that came back).")
    return table


def run_charts(run: Results, label: str) -> list[Chart]:
    server = run.server
    if server is None:
        return []
    t0 = run.run.start.timestamp()
    charts = []
    for metric in server.metrics():
        subjects = server.subjects(metric)
        if metric.startswith("module_"):
            summaries = {s: server.summary(metric, s) for s in subjects}
            subjects = sorted(subjects, key=lambda s: -(x.avg if (x := summaries[s]) else 0.0))[:CHART_SUBJECTS]
        lines = []
        for subject in subjects:
            points = server.series(metric, subject)
            if len(points) > 1:
                lines.append(Series(subject, [(at - t0) / 60 for at, _ in points], [v for _, v in points]))
        if lines:
            charts.append(Chart(f"{CHART_TITLES[metric]} — {label}", "minutes since start",
                                server.units.get(metric, ""), lines))
    return charts
