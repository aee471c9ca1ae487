"""Where the time goes (`--trace`): each FOLIO module's part of a transaction's or API call's time, from
Okapi's X-Okapi-Trace headers (folioperf.okapi_trace), in a report and between the two sides of a comparison.

Per row (a transaction or an API) and module: the calls into the module per request of the row, the
module's average time per request (over all the row's traced requests, so the averages of a row's modules
add up to its average), its 95th percentile over the requests that reached it, and its share of the row's
time. "gateway and network" is the rest of the response time: Okapi, the network and the load generator.
"""

from __future__ import annotations

from dataclasses import dataclass

from folioperf.histogram import decode_histogram, percentiles_us
from folioperf.metrics import ModuleTime
from folioperf.okapi_trace import GATEWAY, NO_HEADERS
from folioperf.report.document import Chart, Section, Series, Table
from folioperf.report.formats import fmt_time, group_header, unit_name
from folioperf.report.runs import TRANSACTION, Group, kind_of

COLUMNS = ("Calls", "Average", "95th", "Share")
CHART_APIS = 12  # the APIs with the most time, in a chart


@dataclass(frozen=True)
class ModuleStat:
    """One module's part of one row in one column group (its runs' figures added up)."""

    module: str
    calls: int
    total: float  # ms, over all the row's requests
    requests: int  # the row's traced requests
    row_total: float  # ms, the row's traced time: all its modules' together
    p95: float | None

    @property
    def average(self) -> float:
        return self.total / self.requests if self.requests else 0.0

    @property
    def share(self) -> float:
        return self.total / self.row_total if self.row_total else 0.0

    @property
    def calls_per_request(self) -> float:
        return self.calls / self.requests if self.requests else 0.0


def _merge(parts: list[ModuleTime], requests: int, row_total: float) -> ModuleStat:
    buckets: dict[int, int] = {}
    for part in parts:
        for key, n in (decode_histogram(part.histogram) if part.histogram else {}).items():
            buckets[key] = buckets.get(key, 0) + n
    if len(parts) == 1 or not buckets:
        p95 = parts[0].p95 if len(parts) == 1 else None
    else:
        (us,) = percentiles_us(buckets, (0.95,), 0, max(buckets) * 2)
        p95 = None if us is None else round(us / 1000, 3)
    return ModuleStat(parts[0].module, sum(p.calls for p in parts), sum(p.total for p in parts), requests, row_total, p95)


def module_stats(group: Group, type_: str, name: str) -> list[ModuleStat]:
    """A row's modules in one column group, the most time first; empty without trace data."""
    by_module: dict[str, list[ModuleTime]] = {}
    requests = 0
    for run in group.runs:
        times = run.modules_of(type_, name)
        requests += max((m.count for m in times), default=0)
        for m in times:
            by_module.setdefault(m.module, []).append(m)
    row_total = sum(p.total for parts in by_module.values() for p in parts)
    stats = [_merge(parts, requests, row_total) for parts in by_module.values()]
    return sorted(stats, key=lambda s: (s.module == GATEWAY, -s.total))


def traced_rows(groups: list[Group]) -> list[tuple[str, str]]:
    """(type, name) of every row with trace data: transactions first, then APIs by time spent, most first."""
    totals: dict[tuple[str, str], float] = {}
    for group in groups:
        for run in group.runs:
            for m in run.modules:
                totals[(m.type, m.name)] = totals.get((m.type, m.name), 0.0) + m.total
    return sorted(totals, key=lambda k: (0, 0.0, k[1]) if k[0] == TRANSACTION else (1, -totals[k], k[1]))


def _row_title(type_: str, name: str) -> str:
    return f"{name} (transaction)" if type_ == TRANSACTION else name


def modules_section(groups: list[Group], unit: str) -> Section | None:
    """The report's "Where the time goes" section; None when no run asked for trace headers."""
    asked = [run for g in groups for run in g.runs if run.traced is not None]
    if not asked:
        return None
    section = Section("Where the time goes")
    silent = [run for run in asked if not run.traced]
    if silent:
        section.paragraphs.append(f"{silent[0].run.target.url} {NO_HEADERS}.")
    rows = traced_rows(groups)
    if not rows:
        return section
    section.paragraphs.append(
        "Each FOLIO module's part of a transaction's or API call's time, from Okapi's X-Okapi-Trace headers. "
        "Calls: calls into the module per request; Average: the module's time per request (the averages of a "
        "row add up to its average); 95th: over the requests that reached the module; Share: of the row's "
        f"time. \"{GATEWAY}\" is the rest of the response time: Okapi, the network and the load generator.")
    for type_, name in rows:
        section.tables.append(_row_table(groups, type_, name, unit))
    for group in groups:
        chart = _api_chart(group, unit)
        if chart is not None:
            section.charts.append(chart)
    return section


def _row_table(groups: list[Group], type_: str, name: str, unit: str) -> Table:
    """A row per user count and module (the reports' orientation, folioperf.report.tables.response_table)."""
    table = Table(f"{_row_title(type_, name)}: where the time goes ({unit_name(unit)})", ["Users", "Module", *COLUMNS],
                  stub=2)
    per_group = [{s.module: s for s in module_stats(g, type_, name)} for g in groups]
    order = [s.module for s in module_stats(groups[-1], type_, name)]
    order += sorted({m for stats in per_group for m in stats} - set(order))
    for group, stats in zip(groups, per_group):
        for module in order:
            s = stats.get(module)
            if s is None:
                continue
            table.add(group_header(group), module,
                      "–" if module == GATEWAY else f"{s.calls_per_request:.1f}", fmt_time(s.average, unit),
                      fmt_time(s.p95, unit) if module != GATEWAY else "–", f"{s.share * 100:.1f}%")
    return table


def _api_chart(group: Group, unit: str) -> Chart | None:
    """A stacked bar per API: its average time split by module."""
    names = [n for t, n in traced_rows([group]) if kind_of(t) == "API"][:CHART_APIS]
    if not names:
        return None
    types = {n: t for t, n in traced_rows([group])}
    stats = {n: {s.module: s for s in module_stats(group, types[n], n)} for n in names}
    modules = sorted({m for by in stats.values() for m in by},
                     key=lambda m: (m == GATEWAY, -sum(by[m].total for by in stats.values() if m in by)))
    scale = 1000.0 if unit == "s" else 1.0
    series = [Series(module, list(range(len(names))),
                     [stats[n][module].average / scale if module in stats[n] else 0.0 for n in names])
              for module in modules]
    return Chart(f"Where the time goes per API, {group.label} (average per call)", unit_name(unit), "", series,
                 kind="stacked", categories=names)
