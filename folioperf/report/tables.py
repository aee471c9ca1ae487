"""The PTF report computed from results directories: header, test runs, response times with a row per user
count (the PTF's orientation), slow APIs, failures, throughput, hour-by-hour longevity figures,
per-window chart data and the database section."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime, timedelta

from folioperf.metrics import WINDOW_S
from folioperf.outcome import EXIT_MEANINGS
from folioperf.report.document import Cell, Chart, Document, Section, Series, Table
from folioperf.report.formats import (
    MISSING,
    fmt_bytes,
    fmt_duration,
    fmt_partial,
    fmt_run_length,
    fmt_time,
    group_header,
    is_longer,
    ordinal,
    unit_name,
)
from folioperf.report.modules import modules_section
from folioperf.report.runs import (
    FEW_MARK,
    MIN_SAMPLES,
    SCHEDULED,
    SCRIPT,
    TRANSACTION,
    Group,
    Stat,
    flags_of,
    group_runs,
    kind_of,
)
from folioperf.report.servers import servers_section
from folioperf.results import Results, RunInfo
from folioperf.scenario import SEPARATOR
from folioperf.wording import plural

UNITS = ("s", "ms")
DEFAULT_SLOW_MS = 100.0
LONGEVITY_S = 2 * 3600  # runs longer than this get the hour-by-hour table
MAX_CHART_POINTS = 720
COLUMNS = (("avg", "Average"), ("p50", "50th"), ("p75", "75th"), ("p95", "95th"))
TOP_QUERIES = 10
FEW_NOTE = (f"{FEW_MARK} rests on fewer than {MIN_SAMPLES} samples: too few to say much (a 95th percentile needs "
            f"{MIN_SAMPLES} for one sample to lie above it); `folioperf compare` neither highlights nor gates on such "
            "figures.")
FLAG_TEXT = {
    "cpu_saturated": "the load generator's CPU was saturated{peak}: response times include time the generator "
                     "spent waiting for CPU, not only FOLIO's",
    "rate_missed": "the target arrival rate was not reached: throughput and latency describe less load than asked",
    "worker_lost": "a Locust worker was lost: part of the run ran with fewer users than requested",
    "interrupted": "the run was interrupted before its planned duration",
    "ramp_incomplete": "not every user asked for ran for at least half of the test: its figures describe less "
                       "load than asked",
    "target_down": "the target stopped answering during the test (connections refused or timed out, or the built-in "
                   "sandbox exited): its figures describe a FOLIO that was not there",
    "users_missing": "after full load, fewer users ran than asked for part of the test: its figures describe less "
                     "load than asked",
    "partial": "a partial record: a checkpoint of a test that did not finish (its master was killed, or it still "
               "runs); its figures cover only the part of the test up to the checkpoint, and it has no exit code",
}


# -- the report -------------------------------------------------------------------------------------
def build_report(runs: list[Results], unit: str = "s", slow_threshold_ms: float = DEFAULT_SLOW_MS) -> Document:
    groups = group_runs(runs)
    doc = Document(title=_title(groups))
    doc.facts = header_facts(groups)
    doc.warnings = flag_warnings(groups)
    doc.sections.append(Section("Test runs", tables=[runs_table(groups)]))

    results = Section("Response times")
    for kind, title in ((TRANSACTION, "Transactions"), (SCHEDULED, "Latency from the scheduled start (open model)")):
        table = response_table(groups, kind, unit, f"{title} ({unit_name(unit)})")
        if table.rows:
            results.tables.append(table)
    if not any(g.names(TRANSACTION) for g in groups):
        results.paragraphs.append("The workflow recorded no business transactions; see the API table.")
    charts = [percentile_chart(groups, unit)]
    charts += [response_time_chart(run, _run_label(group, run), unit) for group in groups for run in group.runs]
    results.charts += [c for c in charts if c]
    doc.sections.append(results)

    apis = Section("APIs")
    slow = slow_api_table(groups, unit, slow_threshold_ms)
    if slow.rows:
        apis.tables.append(slow)
    else:
        apis.paragraphs.append(f"No API was slower than {slow_threshold_ms:g} ms at the 75th percentile.")
    apis.tables.append(response_table(groups, "API", unit, f"All API calls ({unit_name(unit)})"))
    doc.sections.append(apis)

    modules = modules_section(groups, unit)
    if modules is not None:
        doc.sections.append(modules)
    doc.sections += scenario_sections(groups, unit)
    doc.sections.append(errors_section(groups))
    throughput = Section("Throughput", tables=[throughput_table(groups)])
    throughput.charts += [c for g in groups for r in g.runs if (c := throughput_chart(r, _run_label(g, r)))]
    doc.sections.append(throughput)

    longevity = [(g, r) for g in groups for r in g.runs if r.run.elapsed_s > LONGEVITY_S]
    if longevity:
        section = Section("Longevity")
        for group, run in longevity:
            section.tables.append(hourly_table(run, _run_label(group, run), unit))
        doc.sections.append(section)

    doc.sections.append(servers_section(groups))
    doc.sections.append(database_section(groups, unit))
    return doc


def scenario_sections(groups: list[Group], unit: str) -> list[Section]:
    """A scenario's groups of users, one section each: who they were and their transactions and APIs."""
    scenario = groups[0].runs[0].run.scenario
    if not scenario:
        return []
    sections = []
    for group in scenario["groups"]:
        prefix = f"{group['name']}{SEPARATOR}"
        how = f"rate {group['rate']:g}/s" if group.get("rate") else (f"pace {group['pace']}" if group.get("pace") else "")
        options = ", ".join(f"{k.replace('_', '-')} {v}" for k, v in (group.get("options") or {}).items())
        section = Section(f"{group['name']}: {group['workflow']}")
        section.paragraphs.append(
            "; ".join(p for p in (plural(group["users"], "user"), how, options) if p) + ".")
        achieved = [(g.label, rate) for g in groups if (rate := samples_per_minute(g, prefix, group["users"])) is not None]
        if achieved:
            section.paragraphs.append(
                "Samples a minute per user, as JMeter counts them (calls, preflights and the plans' script steps): "
                + ", ".join(f"{rate:,.1f}" + (f" ({label})" if len(achieved) > 1 else "") for label, rate in achieved) + ".")
        if not any(n.startswith(prefix) for g in groups for n in g.names(TRANSACTION)):
            section.paragraphs.append("This group finished no transaction in the test: there are no figures for it "
                                      "(its pace or rate may need a longer test).")
        for kind, title in ((TRANSACTION, "Transactions"), (SCHEDULED, "Latency from the scheduled start"), ("API", "API calls")):
            table = response_table(groups, kind, unit, f"{group['name']}: {title} ({unit_name(unit)})", prefix)
            if table.rows:
                section.tables.append(table)
        sections.append(section)
    return sections


def samples_per_minute(group: Group, prefix: str, users: int) -> float | None:
    """A scenario group's samples a minute per user, counted as JMeter counts a thread group's samples (every
    call, preflight and script step), to set beside the plan's throughput timers; None without users."""
    if users <= 0:
        return None
    rates = [s.rps for (t, n), s in group.stats.items() if n.startswith(prefix) and (t == SCRIPT or kind_of(t) == "API")
             and t != "Error"]
    return sum(rates) * 60 / users if rates else None


def _title(groups: list[Group]) -> str:
    workflow = groups[0].runs[0].run.workflow
    return f"{workflow} — performance test report"


def _run_label(group: Group, run: Results) -> str:
    if len(group.runs) == 1:
        return group.label
    return f"{group.label}, run {group.runs.index(run) + 1}"


def header_facts(groups: list[Group]) -> list[tuple[str, str]]:
    runs = [r.run for g in groups for r in g.runs]
    first = runs[0]
    facts = [("Workflow", first.workflow + (f" — {first.description}" if first.description else ""))]
    where = first.target.url + (f" (tenant {first.target.tenant})" if first.target.tenant else "")
    if first.target.sandbox:
        where += ", the built-in sandbox"
    facts.append(("Target", where))
    modules = sorted({m for r in runs for m in r.target.modules})
    facts.append(("Modules", ", ".join(modules) if modules else "not reported by the target"))
    facts.append(("Date", _span(min(r.start for r in runs), max(r.end for r in runs))))
    facts.append(("Users", ", ".join(str(u) for u in sorted({g.users for g in groups}))))
    facts.append(("Duration", fmt_run_length(runs)))
    if first.ramp_up_s:
        facts.append(("Ramp-up", fmt_duration(first.ramp_up_s)))
    rates = sorted({r.rate for r in runs if r.rate})
    if rates:
        facts.append(("Arrival rate", ", ".join(f"{x:g}/s" for x in rates) + " (open model)"))
    shared = {k: v for k, v in first.options.items() if all(r.options.get(k) == v for r in runs)}
    if first.options:
        facts.append(("Options", ", ".join(f"{k}={v}" for k, v in sorted(shared.items())) or "vary by run"))
    workers = sorted({r.workers for r in runs})
    peak = max((r.peak_cpu_percent or 0.0 for r in runs), default=0.0)
    facts.append(("Load generator", ", ".join("local" if w == 0 else plural(w, "worker") for w in workers)
                  + (f", peak CPU {peak:.0f} %" if peak else "")))
    facts.append(("Versions", ", ".join(f"{k} {first.versions[k]}" for k in ("folioperf", "locust", "python")
                                        if first.versions.get(k))))
    tags = sorted({r.tag for r in runs if r.tag})
    if tags:
        facts.append(("Tag", ", ".join(tags)))
    return facts


def flag_warnings(groups: list[Group]) -> list[str]:
    out = []
    for group in groups:
        for run in group.runs:
            for flag in flags_of(run):
                peak = run.run.peak_cpu_percent
                text = FLAG_TEXT[flag].format(peak=f" (peak {peak:.0f} %)" if peak else "")
                out.append(f"{_run_label(group, run)} ({run.path.name}): {text}.")
            code = run.run.exit_code
            if code not in (0, None):
                meaning = EXIT_MEANINGS.get(code, "not one of folioperf's exit codes")
                out.append(f"{_run_label(group, run)} ({run.path.name}): the run ended with exit code {code}: "
                           f"{meaning}.")
    return out


def runs_table(groups: list[Group]) -> Table:
    table = Table("Test runs", ["Test", "Users", "Duration", "Start (UTC)", "Load generator", "Requests", "Flags",
                                "Results"])
    n = 0
    for group in groups:
        for run in group.runs:
            n += 1
            requests = sum(e.count for e in run.apis())
            flags = ", ".join(f.replace("_", " ") for f in flags_of(run))
            table.add(f"{n}.", group.label, _run_duration(run.run), run.run.start.strftime("%Y-%m-%d %H:%M"),
                      "local" if not run.run.workers else plural(run.run.workers, "worker"), f"{requests:,}",
                      Cell(flags, "warn") if flags else "none", run.path.name)
    if any(is_longer(r.run) for g in groups for r in g.runs):
        table.notes.append("Wall time: from the test's start until every user stopped (users finish what they "
                           "were doing).")
    return table


def _run_duration(run: RunInfo) -> str:
    if run.partial:
        return fmt_partial(run)
    if not run.duration_s:
        return fmt_duration(run.elapsed_s)
    wall = f", {fmt_duration(run.elapsed_s)} wall time" if is_longer(run) else ""
    return fmt_duration(run.duration_s) + wall


# -- response times ---------------------------------------------------------------------------------
def response_table(groups: list[Group], kind: str, unit: str, title: str, prefix: str = "") -> Table:
    """The PTF's orientation: a row per user count. Transactions stand side by side under each figure (Count,
    Average, 50th, 75th, 95th), as in the PTF's tables; APIs, too many to stand side by side, get a row each
    under their user count. A figure resting on fewer than MIN_SAMPLES samples is marked. With `prefix`, the
    names of one scenario group (`CICO · `), shown without it."""
    names = sorted({n for g in groups for n in g.names(kind) if n.startswith(prefix)})
    shown = [n[len(prefix):] for n in names]
    few = False
    if kind == "API":
        table = Table(title, ["Users", "API", "Count", *(label for _, label in COLUMNS)], stub=2)
        for g in groups:
            for name, label in zip(names, shown):
                stat = g.find(kind, name)
                if stat is not None:
                    few |= stat.count < MIN_SAMPLES
                    table.add(group_header(g), label, f"{stat.count:,}", *(_figure(stat, m, unit) for m, _ in COLUMNS))
    else:
        table = Table(title, ["Users", *(shown * (len(COLUMNS) + 1))],
                      groups=[("Count", len(names)), *((label, len(names)) for _, label in COLUMNS)] if names else [])
        for g in groups if names else ():
            stats = [g.find(kind, name) for name in names]
            few |= any(s is not None and s.count < MIN_SAMPLES for s in stats)
            cells: list[Cell | str] = [group_header(g), *(f"{s.count:,}" if s else MISSING for s in stats)]
            for m, _ in COLUMNS:
                cells += [_figure(s, m, unit) if s else Cell(MISSING) for s in stats]
            table.add(*cells)
    table.notes = _merge_notes(groups) + ([FEW_NOTE] if few else [])
    return table


def _figure(stat: Stat, metric: str, unit: str) -> Cell:
    """A response time; marked when it rests on too few samples to say much."""
    text = fmt_time(stat.value(metric), unit)
    if stat.count < MIN_SAMPLES and text != MISSING:
        return Cell(f"{text} {FEW_MARK}", "muted")
    return Cell(text)


def _merge_notes(groups: list[Group]) -> list[str]:
    notes = []
    for g in groups:
        if len(g.runs) > 1:
            approximate = any(s.approximate for s in g.stats.values())
            how = ("percentiles averaged over the runs (approximate: a run has no histogram)" if approximate
                   else "percentiles from the merged histograms")
            notes.append(f"{g.label}: {len(g.runs)} runs merged; averages weighted by count, {how}.")
    return notes


def slow_api_table(groups: list[Group], unit: str, threshold_ms: float) -> Table:
    """APIs whose 75th percentile exceeds the threshold in any group (seed 004's "worst" APIs)."""
    table = Table(f"APIs slower than {threshold_ms:g} ms at the 75th percentile ({unit_name(unit)})",
                  ["API"] + ["75th"] * len(groups), groups=[(group_header(g), 1) for g in groups])
    rows = []
    for name in sorted({n for g in groups for n in g.names("API")}):
        stats = [g.find("API", name) for g in groups]
        p75 = [s.percentiles["p75"] if s else None for s in stats]
        if any(v is not None and v > threshold_ms for v in p75):
            rows.append((max(v for v in p75 if v is not None), name, p75))
    for _, name, p75 in sorted(rows, key=lambda r: (-r[0], r[1])):
        table.add(name, *(Cell(fmt_time(v, unit), "strong" if v is not None and v > threshold_ms else "")
                          for v in p75))
    return table


# -- failures and throughput ------------------------------------------------------------------------
def errors_section(groups: list[Group]) -> Section:
    section = Section("Failures")
    table = Table("Failed requests", ["Users", "Name", "Requests", "Failures", "%"], stub=2)
    keys = sorted({k for g in groups for k, s in g.stats.items() if s.failures},
                  key=lambda k: (k[0] != TRANSACTION, k[1], k[0]))
    for g in groups:
        for type_, name in keys:
            s = g.stat(type_, name)
            if s is None:
                continue
            pct = 100.0 * s.failures / s.count if s.count else 0.0
            style = "bad" if s.failures else ""
            table.add(group_header(g), name if kind_of(type_) == "API" else f"{name} ({type_.lower()})",
                      f"{s.count:,}", Cell(f"{s.failures:,}", style), Cell(f"{pct:.2f}%", style))
    if table.rows:
        section.tables.append(table)
        messages = Table("Failure messages", ["Users", "Name", "Error", "Occurrences"])
        for g in groups:
            merged: dict[tuple[str, str], int] = defaultdict(int)
            for run in g.runs:
                for f in run.failures:
                    merged[(f.name, f.error)] += f.occurrences
            for (name, error), n in sorted(merged.items(), key=lambda kv: -kv[1])[:20]:
                messages.add(g.label, name, error, f"{n:,}")
        if messages.rows:
            section.tables.append(messages)
    else:
        section.paragraphs.append("No request failed.")
    expected = Table("Expected FOLIO refusals (declared by the workflow, not counted as failures)",
                     ["Users", "Name", "Count"], stub=2)
    for g in groups:
        for name, count in sorted(g.expected_failures.items()):
            expected.add(group_header(g), name, f"{count:,}")
    if expected.rows:
        section.tables.append(expected)
    return section


def throughput_table(groups: list[Group]) -> Table:
    table = Table("Throughput", ["Users", "Name", "Requests", "per s"], stub=2)
    names = sorted({n for g in groups for n in g.names(TRANSACTION)})
    for g in groups:
        for name in names:
            s = g.stat(TRANSACTION, name)
            if s is not None:
                table.add(group_header(g), name, f"{s.count:,}", f"{s.rps:.2f}")
        api = [s for (t, _), s in g.stats.items() if kind_of(t) == "API"]
        table.add(group_header(g), "All API calls", f"{sum(s.count for s in api):,}", f"{sum(s.rps for s in api):.2f}")
    if any(len(g.runs) > 1 for g in groups):
        table.notes.append("Requests add up over repeated runs; per s is the mean rate of the runs.")
    return table


# -- longevity and charts ---------------------------------------------------------------------------
def hourly_table(run: Results, label: str, unit: str) -> Table:
    """Average response time of each transaction hour by hour (10-second windows weighted by count),
    the whole run, and the change from the first to the last hour."""
    names = sorted({w.name for w in run.timeseries if w.type == TRANSACTION})
    start = run.run.start
    sums: dict[tuple[int, str], list[float]] = defaultdict(lambda: [0.0, 0])
    for w in run.timeseries:
        if w.type != TRANSACTION or w.avg is None:
            continue
        hour = max(0, int((w.start - start).total_seconds() // 3600))
        for key in ((hour, w.name), (-1, w.name)):
            sums[key][0] += w.avg * w.count
            sums[key][1] += w.count
    hours = sorted({h for h, _ in sums if h >= 0})
    table = Table(f"Hour by hour — {label} (average, {unit_name(unit)})", ["Hour", *names])

    def avg(hour: int, name: str) -> float | None:
        total, count = sums.get((hour, name), (0.0, 0))
        return total / count if count else None

    for hour in hours:
        covered = min(3600.0, run.run.elapsed_s - hour * 3600)
        text = f"{ordinal(hour + 1)} hour" + (f" ({fmt_duration(covered)})" if 0 < covered < 3600 else "")
        table.add(text, *(fmt_time(avg(hour, n), unit) for n in names))
    table.add(Cell("Whole run", "strong"), *(Cell(fmt_time(avg(-1, n), unit), "strong") for n in names))
    if len(hours) > 1:
        for n in names:
            a, b = avg(hours[0], n), avg(hours[-1], n)
            if a and b is not None:
                table.notes.append(f"{n}: {fmt_time(a, unit)} {unit} in the 1st hour, "
                                   f"{fmt_time(b, unit)} {unit} in the last "
                                   f"({(b - a) / a * 100:+.1f} %).")
    return table


def response_time_chart(run: Results, label: str, unit: str) -> Chart | None:
    """Average and 95th percentile of each transaction per window, over the run's minutes."""
    windows = [w for w in run.timeseries if w.type == TRANSACTION and w.avg is not None] or \
              [w for w in run.timeseries if kind_of(w.type) == "API" and w.avg is not None]
    if not windows:
        return None
    scale = 1000.0 if unit == "s" else 1.0
    series = []
    for name in sorted({w.name for w in windows}):
        points = _coarsen([w for w in windows if w.name == name], run.run)
        xs = [p[0] for p in points]
        series.append(Series(f"{name} average", xs, [p[1] / scale for p in points], key=name))
        series.append(Series(f"{name} 95th", xs, [p[2] / scale for p in points], dashed=True, key=name))
    return Chart(f"Response time over time — {label}", "minutes since start", unit_name(unit), series)


def throughput_chart(run: Results, label: str) -> Chart | None:
    windows = [w for w in run.timeseries if w.type == TRANSACTION and w.avg is not None]
    if not windows:
        return None
    series = []
    for name in sorted({w.name for w in windows}):
        points = _coarsen([w for w in windows if w.name == name], run.run)
        series.append(Series(name, [p[0] for p in points], [p[3] for p in points]))
    return Chart(f"Transactions per second — {label}", "minutes since start", "per second", series)


def percentile_chart(groups: list[Group], unit: str) -> Chart | None:
    """95th percentile and average of each transaction per user count."""
    if len(groups) < 2:
        return None
    scale = 1000.0 if unit == "s" else 1.0
    xs = list(range(len(groups)))
    series = []
    for name in sorted({n for g in groups for n in g.names(TRANSACTION)}):
        stats = [g.stat(TRANSACTION, name) for g in groups]
        series.append(Series(f"{name} 95th", xs, [_scaled(s.percentiles["p95"] if s else None, scale) for s in stats],
                             key=name))
        series.append(Series(f"{name} average", xs, [_scaled(s.avg if s else None, scale) for s in stats],
                             dashed=True, key=name))
    if not series:
        return None
    return Chart("95th percentile and average per user count", "", unit_name(unit), series, kind="category",
                 categories=[g.label for g in groups])


def _scaled(ms: float | None, scale: float) -> float:
    return float("nan") if ms is None else ms / scale


def _coarsen(windows: list, run: RunInfo) -> list[tuple[float, float, float, float]]:
    """(minute, average, 95th, per second) points, windows merged so a chart has at most
    MAX_CHART_POINTS; a merged point's 95th is the count-weighted mean of its windows' 95th.

    Windows are aligned to the wall clock (so workers' and runs' windows merge), the test is not: a point
    stands at the start of the part of its windows inside the test, minute 0 being the test's start, and
    its rate is over that part only (the first and last windows are partly outside the test)."""
    windows = sorted(windows, key=lambda w: w.start)
    step = max(1, -(-len(windows) // MAX_CHART_POINTS))
    window = timedelta(seconds=WINDOW_S)
    points = []
    for i in range(0, len(windows), step):
        chunk = windows[i: i + step]
        count = sum(w.count for w in chunk)
        first = max(chunk[0].start, run.start)
        last = min(chunk[-1].start + window, max(run.end, first + timedelta(seconds=1)))
        span = max(1.0, (last - first).total_seconds())
        if count:
            points.append(((first - run.start).total_seconds() / 60, sum(w.avg * w.count for w in chunk) / count,
                           sum((w.p95 or w.avg) * w.count for w in chunk) / count, count / span))
    return points


# -- database ---------------------------------------------------------------------------------------
def database_section(groups: list[Group], unit: str) -> Section:
    section = Section("Database")
    dbs = [(g, db) for g in groups if (db := merge_db([r.db for r in g.runs if r.db]))]
    if not dbs:
        section.paragraphs.append("No database observations: these runs were made without a database DSN.")
        section.tables.append(host_table(groups))
        return section
    notes = sorted({db["statements"]["note"] for _, db in dbs if db["statements"].get("note")})
    section.paragraphs += notes
    for g, db in dbs:
        if db["statements"]["available"] and db["statements"]["top"]:
            section.tables.append(queries_table(db, f"Database queries — {g.label}"))
    section.tables.append(connections_table(dbs))
    section.tables.append(seq_scan_table(dbs))
    if not section.tables[-1].rows:
        section.tables.pop()
        section.paragraphs.append("No table was scanned sequentially often enough, reading enough rows, to suspect "
                                  "a missing index.")
    section.tables.append(size_table(dbs))
    section.tables.append(host_table(groups))
    errors = sorted({e for _, db in dbs for e in db.get("errors") or []})
    section.paragraphs += [f"Database monitor: {e}" for e in errors]
    for g, db in dbs:
        series = (db.get("connections") or {}).get("series") or {}
        if len(series.get("t") or []) > 1:
            lines = [Series(state, [t / 60 for t in series["t"]], series[state])
                     for state in series if state != "t"]
            section.charts.append(Chart(f"Database connections — {g.label}", "minutes since start", "connections",
                                        lines))
    return section


def merge_db(dbs: list[Mapping]) -> dict | None:
    """One group's database observations; repeated runs add up (statements, scans, growth) or average
    (connections)."""
    if not dbs:
        return None
    if len(dbs) == 1:
        return dict(dbs[0])
    stmts: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for db in dbs:
        for q in db["statements"]["top"]:
            stmts[q["query"]][0] += q["calls"]
            stmts[q["query"]][1] += q["total_ms"]
    total = sum(db["statements"]["total_ms"] for db in dbs)
    top = sorted(({"query": q, "calls": int(c), "total_ms": t, "mean_ms": t / c if c else 0.0,
                   "percent": 100.0 * t / total if total else 0.0} for q, (c, t) in stmts.items()),
                 key=lambda q: -float(q["total_ms"]))
    first = dbs[0]
    scans: dict[str, dict] = {}
    for db in dbs:
        for s in db["seq_scans"]:
            m = scans.setdefault(s["table"], {**s, "seq_scans": 0, "rows_read": 0, "idx_scans": 0, "suspect": False})
            m["seq_scans"] += s["seq_scans"]
            m["rows_read"] += s["rows_read"]
            m["idx_scans"] += s["idx_scans"]
            m["rows"] = max(m["rows"], s["rows"])
            m["suspect"] = m["suspect"] or s["suspect"]
    for m in scans.values():
        m["rows_per_scan"] = m["rows_read"] / m["seq_scans"]

    def avg_max(parts: list[dict]) -> dict:
        return {"avg": sum(p["avg"] for p in parts) / len(parts), "max": max(p["max"] for p in parts)}

    conns = [db["connections"] for db in dbs]
    states = sorted({s for c in conns for s in c["by_state"]})
    return {
        "statements": {"available": all(db["statements"]["available"] for db in dbs),
                       "note": first["statements"].get("note"), "total_ms": total, "top": top[:TOP_QUERIES]},
        "connections": {"samples": sum(c["samples"] for c in conns), "total": avg_max([c["total"] for c in conns]),
                        "by_state": {s: avg_max([c["by_state"].get(s, {"avg": 0, "max": 0}) for c in conns])
                                     for s in states}},
        "seq_scans": sorted(scans.values(), key=lambda s: (not s["suspect"], -s["rows_read"])),
        "size": {k: sum(db["size"][k] for db in dbs) / (len(dbs) if k != "growth_bytes" else 1)
                 for k in ("before_bytes", "after_bytes", "growth_bytes")},
        "errors": sorted({e for db in dbs for e in db.get("errors") or []}),
    }


def queries_table(db: dict, title: str) -> Table:
    table = Table(title, ["Query", "Total time and %", "Average", "Calls"])
    for q in db["statements"]["top"][:TOP_QUERIES]:
        pct = q["percent"]
        share = f"{pct:.0f}%" if pct >= 1 else "<1%"
        mean = q["mean_ms"]
        table.add(Cell(_short_query(q["query"]), "code"), f"{_human_ms(q['total_ms'])} or {share}",
                  f"{mean:.2f} ms" if mean < 10 else f"{mean:,.0f} ms", f"{q['calls']:,}")
    total = db["statements"]["total_ms"]
    table.notes.append(f"Statements of this database during the run: {_human_ms(total)} of execution in total; "
                       "the top statements by total time.")
    return table


def connections_table(dbs: list[tuple[Group, dict]]) -> Table:
    table = Table("Database connections (sampled)", ["State"] + ["Average", "Max"] * len(dbs),
                  groups=[(group_header(g), 2) for g, _ in dbs])
    states = sorted({s for _, db in dbs for s in db["connections"]["by_state"]})
    rows = [("All client connections", lambda c: c["total"])] + \
           [(s, lambda c, s=s: c["by_state"].get(s, {"avg": 0, "max": 0})) for s in states]
    for label, pick in rows:
        cells: list[Cell | str] = [label]
        for _, db in dbs:
            v = pick(db["connections"])
            cells += [f"{v['avg']:.1f}", f"{v['max']:,}"]
        table.add(*cells)
    limits = {db["connections"].get("max_connections") for _, db in dbs} - {None}
    if limits:
        table.notes.append(f"Server max_connections: {', '.join(str(x) for x in sorted(limits))}.")
    return table


def seq_scan_table(dbs: list[tuple[Group, dict]]) -> Table:
    table = Table("Sequential scans during the run (missing-index suspects)",
                  ["Users", "Table", "Rows", "Seq scans", "Rows read per scan", "Index scans", "Filter columns"])
    for g, db in dbs:
        for s in db["seq_scans"]:
            if not s["suspect"]:
                continue
            cols = ", ".join(c["column"] + (" (no index)" if c["indexed"] is False else "")
                             for c in s.get("filter_columns") or [])
            table.add(g.label, Cell(s["table"], "strong"), f"{s['rows']:,}", f"{s['seq_scans']:,}",
                      f"{s['rows_per_scan']:,.0f}", f"{s['idx_scans']:,}", cols or "unknown")
    return table


def size_table(dbs: list[tuple[Group, dict]]) -> Table:
    table = Table("Database size", ["Users", "Before", "After", "Growth"])
    for g, db in dbs:
        size = db["size"]
        table.add(g.label, fmt_bytes(size["before_bytes"]), fmt_bytes(size["after_bytes"]),
                  fmt_bytes(size["growth_bytes"]))
        grown = size.get("tables") or []
        if grown:
            table.notes.append(f"{g.label}: grew most: " + ", ".join(
                f"{t['table']} +{fmt_bytes(t['growth_bytes'])}" for t in grown[:3]) + ".")
    return table


def host_table(groups: list[Group]) -> Table:
    table = Table("CPU and memory", ["Process"] + ["Average", "Max"] * len(groups),
                  groups=[(group_header(g), 2) for g in groups])
    cells: list[Cell | str] = ["Load generator CPU %"]
    for g in groups:
        peaks = [r.run.peak_cpu_percent or 0.0 for r in g.runs]
        style = "warn" if "cpu_saturated" in g.flags else ""
        cells += [MISSING, Cell(f"{max(peaks):.0f}", style)]
    table.add(*cells)
    table.notes.append("CPU % is of one core (a process using two cores fully shows 200); the servers' are in "
                       "the Servers section.")
    return table


def _short_query(query: str, limit: int = 400) -> str:
    text = " ".join(query.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _human_ms(ms: float) -> str:
    if ms >= 60_000:
        return f"{ms / 60_000:.1f} min"
    if ms >= 1000:
        return f"{ms / 1000:.1f} s"
    return f"{ms:.0f} ms" if ms >= 10 else f"{ms:.2f} ms"


def _span(start: datetime, end: datetime) -> str:
    a = start.strftime("%Y-%m-%d %H:%M")
    b = end.strftime("%H:%M" if end.date() == start.date() else "%Y-%m-%d %H:%M")
    return f"{a} – {b} UTC"
