"""The results directory: the one place that writes and reads its format.

    results/<UTC yyyymmddTHHMMSSZ>-<workflow>-<N>u/
        run.json         what ran, against what, when, with which flags (format folioperf-results/1)
        stats.json       per transaction and API: counts, latencies (ms), requests/s, HdrHistogram
        timeseries.csv   time,type,name,count,failures,avg_ms,p50_ms,p95_ms — one row per 10 s window
        failures.csv     type,name,error,occurrences
        locust-report.html  Locust's HTML report (when given; `report.html` in directories written
                         before folioperf's own report took that name)
        db.json          database observations (when given)
        server-metrics.csv   time,metric,subject,value: the servers' CPU, memory and connections (when collected)
        server-metrics.json  their source, step, units, notes and summary

`write` puts everything into a hidden sibling directory and renames it into place, so a directory with
the final name is always complete; an existing name gets a suffix (-2, -3, ...). While a test runs, its
windows go to `timeseries.csv` in `<start>-<workflow>-partial/` as they settle (`TimeseriesSpool`), where
the checkpoints put the rest of the results so far; the final directory takes that file whole, plus the
windows not settled yet. A window a late worker report added to after it settled has a second row there;
`load` adds them up (folioperf.metrics.merge_windows). Every string it writes
passes through redaction: the secrets it is given (in the forms JSON, HTML and URLs encode them to) and
anything shaped like a JWT become "***". `load` reads a directory back for reports.
"""

from __future__ import annotations

import csv
import html
import io
import json
import os
import platform
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote, quote_plus

from folioperf.errors import FolioperfError
from folioperf.files import write_file
from folioperf.metrics import Entry, EntryLookup, Failure, ModuleTime, Snapshot, Window, entry_order, merge_windows
from folioperf.outcome import Flags
from folioperf.servers.series import COLUMNS as SERVER_COLUMNS
from folioperf.servers.series import ServerMetrics, from_legacy_db

RUN_FORMAT = "folioperf-results/1"
STATS_FORMAT = "folioperf-stats/1"
TIMESERIES_COLUMNS = ("time", "type", "name", "count", "failures", "avg_ms", "p50_ms", "p95_ms")
FAILURES_COLUMNS = ("type", "name", "error", "occurrences")
REDACTED = "***"
LOCUST_REPORT = "locust-report.html"
_OLD_LOCUST_REPORT = "report.html"
SERVER_CSV, SERVER_JSON = "server-metrics.csv", "server-metrics.json"
_JWT = re.compile(r"eyJ[\w-]{4,}\.[\w-]{4,}\.[\w-]*")
_MODULE_FIELDS = ("type", "name", "module", "count", "calls", "total", "avg", "p95", "share", "histogram")
_ENTRY_FIELDS = ("count", "failures", "avg", "min", "max", "p50", "p75", "p90", "p95", "p99", "rps")


@dataclass(frozen=True)
class Target:
    """What was loaded. `served`: for the sandbox, the requests it answered during the test per API, by its
    own count (a cross-check of what folioperf counted)."""

    url: str
    tenant: str
    sandbox: bool
    modules: tuple[str, ...] = ()
    served: Mapping[str, int] = field(default_factory=dict)
    platform: str | None = None  # "okapi" or "eureka", as found when reading the module versions
    release: str | None = None  # the FOLIO release the module versions belong to, when they match one


def current_versions() -> dict[str, str]:
    from folioperf import __version__

    return {
        "folioperf": __version__,
        "locust": metadata.version("locust"),
        "python": platform.python_version(),
    }


@dataclass(frozen=True)
class RunInfo:
    """run.json. `start`/`end` are timezone-aware; `duration_s` is how long the load ran: the requested duration,
    or less for a test stopped before it (the web UI's Stop, Ctrl-C; a checkpoint: as requested). `users` is
    the peak of users that ran at once (what the reports show), `users_target` how many were asked for, and
    `full_load_at` when all of them were running (None: never)."""

    workflow: str
    users: int
    target: Target
    start: datetime
    end: datetime
    description: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    tag: str | None = None
    ramp_up_s: float | None = None
    spawn_rate: float | None = None
    duration_s: float | None = None
    rate: float | None = None
    workers: int = 0
    peak_cpu_percent: float | None = None
    flags: Flags = Flags()
    exit_code: int | None = 0  # None: a partial record, of a test that has not ended
    versions: Mapping[str, str] = field(default_factory=current_versions)
    users_target: int | None = None
    users_per_worker: Mapping[str, int] = field(default_factory=dict)
    full_load_at: datetime | None = None
    partial: bool = False  # a checkpoint of a test still running (or whose master was killed)
    users_missing_s: float = 0.0  # after full load, the seconds fewer users ran than asked for
    target_silent_s: float = 0.0  # the longest time the target answered none of the users' calls
    scenario: Mapping[str, Any] | None = None  # a scenario's groups: workflow, users reached, pace, rate, options

    def __post_init__(self) -> None:
        if self.users_target is None:
            object.__setattr__(self, "users_target", self.users)

    @property
    def elapsed_s(self) -> float:
        return round((self.end - self.start).total_seconds(), 3)


@dataclass(frozen=True)
class Results(EntryLookup):
    """A results directory read back: `entry(type, name)`, `transactions()`, `apis()`, `scheduled()`,
    `windows(type, name)`; each entry decodes its histogram when asked (`entry.buckets`, `percentile`)."""

    path: Path
    run: RunInfo
    entries: tuple[Entry, ...]
    timeseries: tuple[Window, ...]
    failures: tuple[Failure, ...]
    db: Mapping[str, Any] | None
    modules: tuple[ModuleTime, ...] = ()  # --trace: where each entry's time went
    traced: int | None = None  # --trace: API responses with trace headers (None: not asked for)
    server: ServerMetrics | None = None  # the servers' CPU, memory and connections (--server-metrics)

    @property
    def report_html(self) -> Path | None:
        """Locust's HTML report of the run."""
        return next((p for p in (self.path / LOCUST_REPORT, self.path / _OLD_LOCUST_REPORT) if p.is_file()), None)

    def windows(self, type: str, name: str) -> list[Window]:
        return [w for w in self.timeseries if w.type == type and w.name == name]


def results_dir_name(start: datetime, workflow: str, users: int | None, label: str | None = None) -> str:
    """`<UTC yyyymmddTHHMMSSZ>-<workflow>-<N>u` (or `-<label>` instead of the user count, as a campaign's
    `-campaign`); characters unsafe in a file name become '-'."""
    if start.tzinfo is None:
        raise ValueError("start must be timezone-aware")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", workflow).strip("-.") or "workflow"
    return f"{start.astimezone(timezone.utc):%Y%m%dT%H%M%SZ}-{safe}-{label or f'{users}u'}"


# ---------------------------------------------------------------------------------------------------
# Writing


class _Redactor:
    """Secrets out of text, where they stand as values (a header, a JSON string, a DSN, a query parameter):
    a secret that is part of a longer word is that word, not the secret (the sandbox's password `admin` in
    "administrator")."""

    def __init__(self, secrets: Iterable[str]) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if not secret:
                continue
            as_json = json.dumps(secret)[1:-1]
            forms.update({
                secret, json.dumps(secret, ensure_ascii=False)[1:-1], as_json,
                # Jinja's tojson (Locust's HTML report) also escapes < > & '
                as_json.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("'", "\\u0027"),
                html.escape(secret), html.escape(secret, quote=False), quote(secret, safe=""), quote_plus(secret),
            })
        self._pattern = re.compile("|".join(_standing_alone(f) for f in sorted(forms, key=len, reverse=True))) \
            if forms else None

    def text(self, value: str) -> str:
        if self._pattern is not None:
            value = self._pattern.sub(REDACTED, value)
        return _JWT.sub(REDACTED, value)

    def data(self, value: Any, key: str | None = None) -> Any:
        """Every string in a JSON structure, keys included; histograms are base64, not text."""
        if isinstance(value, str):
            return value if key == "histogram" else self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.data(v, str(k)) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.data(v) for v in value]
        return value


def _standing_alone(form: str) -> str:
    """A pattern of `form` not touching a word character (letter, digit, `_`) on a side where it begins or
    ends with one: `admin` in "admin" and "user:admin@", not in "administrator" or "diku_admin"."""
    before = r"(?<!\w)" if re.match(r"\w", form[0]) else ""
    after = r"(?!\w)" if re.match(r"\w", form[-1]) else ""
    return before + re.escape(form) + after


def _iso(moment: datetime, timespec: str = "milliseconds") -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec=timespec).replace("+00:00", "Z")


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return _iso(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    try:  # Decimal and other numbers from the database
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{type(value).__name__} is not JSON serialisable") from None


def _run_json(run: RunInfo) -> dict[str, Any]:
    return {
        "format": RUN_FORMAT,
        "workflow": run.workflow,
        "description": run.description,
        "options": dict(run.options),
        "tag": run.tag,
        "users": run.users,
        "users_target": run.users_target,
        "users_per_worker": dict(run.users_per_worker),
        "full_load_at": _iso(run.full_load_at) if run.full_load_at else None,
        "ramp_up_s": run.ramp_up_s,
        "spawn_rate": run.spawn_rate,
        "duration_s": run.duration_s,
        "rate": run.rate,
        "target": {"url": run.target.url, "tenant": run.target.tenant, "sandbox": run.target.sandbox,
                   "platform": run.target.platform, "release": run.target.release, "modules": list(run.target.modules),
                   **({"served": dict(run.target.served)} if run.target.served else {})},
        "versions": dict(run.versions),
        "start": _iso(run.start),
        "end": _iso(run.end),
        "elapsed_s": run.elapsed_s,
        "workers": run.workers,
        "generator": {"peak_cpu_percent": run.peak_cpu_percent},
        "flags": {f.name: getattr(run.flags, f.name) for f in fields(Flags)},
        "exit_code": run.exit_code,
        "users_missing_s": run.users_missing_s,
        "target_silent_s": run.target_silent_s,
        **({"partial": True} if run.partial else {}),
        **({"scenario": dict(run.scenario)} if run.scenario else {}),
    }


def _stats_json(stats: Snapshot) -> dict[str, Any]:
    return {
        "format": STATS_FORMAT,
        "unit": "ms",
        "entries": [
            {"type": e.type, "name": e.name, **{f: getattr(e, f) for f in _ENTRY_FIELDS}, "histogram": e.histogram}
            for e in stats.entries
        ],
        "expected_failures": [{"type": e.type, "name": e.name, "count": e.expected}
                              for e in stats.entries if e.expected],
        **({"trace": {"responses": stats.traced, "without_trace": stats.untraced},
            "modules": [{f: getattr(m, f) for f in _MODULE_FIELDS} for m in stats.modules]}
           if stats.traced or stats.untraced else {}),
    }


def _csv(columns: tuple[str, ...] | None, rows: Iterable[Iterable[Any]], redactor: _Redactor) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    if columns is not None:
        writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if v is None else redactor.text(v) if isinstance(v, str) else v for v in row])
    return out.getvalue()


def _window_rows(windows: Iterable[Window]) -> Iterable[tuple[Any, ...]]:
    return ((_iso(w.start, "seconds"), w.type, w.name, w.count, w.failures, w.avg, w.p50, w.p95) for w in windows)


class TimeseriesSpool:
    """The timeseries.csv of a test still running, in its partial directory: a row per window as it settles
    (a folioperf.metrics.WindowSink), so that neither a long run's memory nor a killed master loses them."""

    def __init__(self, root: str | os.PathLike[str], start: datetime, workflow: str, secrets: Iterable[str] = ()) -> None:
        self.directory = Path(root) / results_dir_name(start, workflow, None, label="partial")
        self.path = self.directory / "timeseries.csv"
        self._redactor = _Redactor(secrets)
        self._file: TextIO | None = None

    def add(self, rows: Sequence[Window]) -> None:
        if self._file is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "w", encoding="utf-8", newline="")
            self._file.write(_csv(TIMESERIES_COLUMNS, (), self._redactor))
        self._file.write(_csv(None, _window_rows(rows), self._redactor))
        self._file.flush()

    def clear(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    def kept(self) -> Sequence[Window]:
        return ()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def written(self) -> Path | None:
        """The file, once a window has settled."""
        if self._file is not None:
            self._file.flush()
            return self.path
        return None


def _dump(data: Any, redactor: _Redactor) -> str:
    return json.dumps(redactor.data(json.loads(json.dumps(data, default=_json_default))),
                      indent=2, ensure_ascii=False) + "\n"


Content = str | Callable[[TextIO], None]  # a file's text, or what writes it


def _timeseries(stats: Snapshot, redactor: _Redactor, spooled: Path | None) -> Content:
    """The settled windows' rows as spooled (a copy, in blocks), then those of the windows still open."""
    rest = _csv(None if spooled else TIMESERIES_COLUMNS, _window_rows(stats.windows), redactor)
    if spooled is None:
        return rest

    def write(out: TextIO) -> None:
        with open(spooled, encoding="utf-8", newline="") as f:
            shutil.copyfileobj(f, out)
        out.write(rest)

    return write


def _server_files(server: ServerMetrics, redactor: _Redactor) -> dict[str, str]:
    return {SERVER_CSV: _csv(SERVER_COLUMNS, server.rows(), redactor),
            SERVER_JSON: _dump(server.to_json(), redactor)}


def _files(run: RunInfo, stats: Snapshot, report_html: str | None, db: Mapping[str, Any] | None,
           redactor: _Redactor, spooled: Path | None = None, server: ServerMetrics | None = None
           ) -> dict[str, Content]:
    files = {
        "stats.json": _dump(_stats_json(stats), redactor),
        "timeseries.csv": _timeseries(stats, redactor, spooled),
        "failures.csv": _csv(FAILURES_COLUMNS, (
            (f.type, f.name, f.error, f.occurrences) for f in stats.failures
        ), redactor),
    }
    if report_html is not None:
        files[LOCUST_REPORT] = redactor.text(report_html)
    if db is not None:
        files["db.json"] = _dump(db, redactor)
    if server is not None:
        files.update(_server_files(server, redactor))
    files["run.json"] = _dump(_run_json(run), redactor)  # last: only a finished directory has one
    return files


def _put(path: Path, content: Content) -> None:
    with open(path, "w", encoding="utf-8", newline="") as f:
        if isinstance(content, str):
            f.write(content)
        else:
            content(f)
        f.flush()
        os.fsync(f.fileno())


def _stage(root: Path, name: str, files: Mapping[str, Content]) -> Path:
    """The files in a new hidden directory under `root`, on disk."""
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".staging", dir=root))
    try:
        for filename, content in files.items():
            _put(staging / filename, content)
        staging.chmod(0o755)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging


def write(root: str | os.PathLike[str], run: RunInfo, stats: Snapshot, *, report_html: str | None = None,
          db: Mapping[str, Any] | None = None, server: ServerMetrics | None = None, secrets: Iterable[str] = (),
          timeseries: Path | None = None) -> Path:
    """Write a results directory under `root` and return its path; all of it or nothing. `timeseries`: the
    settled windows' rows as a TimeseriesSpool wrote them (`stats.windows` then holds the others)."""
    root = Path(root)
    name = results_dir_name(run.start, run.workflow, run.users)
    staging = _stage(root, name, _files(run, stats, report_html, db, _Redactor(secrets), timeseries, server))
    try:
        return _publish(staging, root, name)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def write_checkpoint(root: str | os.PathLike[str], run: RunInfo, stats: Snapshot, *,
                     secrets: Iterable[str] = (), spool: TimeseriesSpool | None = None) -> Path:
    """The results so far of a test still running, in `<start>-<workflow>-partial/` (run.json says
    `"partial": true` and has no exit code). Each file is replaced whole, run.json last; with the test's
    `spool` there, its timeseries.csv is the spool's (the windows settled so far). `folioperf report` reads it
    like any results directory, and says it is partial."""
    directory = Path(root) / results_dir_name(run.start, run.workflow, None, label="partial")
    directory.mkdir(parents=True, exist_ok=True)
    files = _files(replace(run, partial=True, exit_code=None), stats, None, None, _Redactor(secrets))
    if spool is not None and spool.directory == directory:
        del files["timeseries.csv"]
        if spool.written() is None:
            _put(spool.path, ",".join(TIMESERIES_COLUMNS) + "\n")  # none settled yet
    for filename, content in files.items():
        staged = directory / f".{filename}.new"
        _put(staged, content)
        os.replace(staged, directory / filename)
    return directory


def add_server_metrics(path: str | os.PathLike[str], server: ServerMetrics, *, replace: bool = False) -> None:
    """Server metrics collected after the fact, into a finished results directory: each file whole or not at
    all; existing ones only with `replace`."""
    path = Path(path)
    files = _server_files(server, _Redactor(()))
    if not replace and any((path / name).exists() for name in files):
        raise FolioperfError(f"{path} has server metrics already (give --replace to collect them again)")
    for name, text in files.items():
        write_file(path / name, text)
    _fsync_dir(path)


def _publish(staging: Path, root: Path, name: str) -> Path:
    """Rename the finished directory to `name`, or `name-2`, `name-3`, ... when that is taken."""
    for n in range(1, 10_000):
        final = root / (name if n == 1 else f"{name}-{n}")
        if final.exists():
            continue
        try:
            os.rename(staging, final)  # fails on a non-empty directory that appeared meanwhile
        except OSError:
            if final.exists():
                continue
            raise
        _fsync_dir(root)
        return final
    raise FolioperfError(f"too many results directories named {name} in {root}")


def _fsync_dir(path: Path) -> None:
    if sys.platform != "win32":
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# ---------------------------------------------------------------------------------------------------
# Reading


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _number(text: str) -> float | None:
    return float(text) if text else None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FolioperfError(f"{path.parent} is incomplete: {path.name} is missing") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise FolioperfError(f"{path} is not valid JSON: {str(exc).splitlines()[0]}") from None


def _read_csv(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    try:
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f)
            if tuple(reader.fieldnames or ()) != columns:
                raise FolioperfError(f"{path} has columns {reader.fieldnames}, expected {list(columns)}")
            return list(reader)
    except FileNotFoundError:
        raise FolioperfError(f"{path.parent} is incomplete: {path.name} is missing") from None


def _run_info(data: Mapping[str, Any]) -> RunInfo:
    target, flags = data["target"], data["flags"]
    return RunInfo(
        workflow=data["workflow"], users=data["users"],
        target=Target(url=target["url"], tenant=target["tenant"], sandbox=target["sandbox"],
                      modules=tuple(target.get("modules") or ()), served=target.get("served") or {},
                      platform=target.get("platform"), release=target.get("release")),
        start=_parse_time(data["start"]), end=_parse_time(data["end"]),
        description=data.get("description", ""), options=data.get("options") or {}, tag=data.get("tag"),
        ramp_up_s=data.get("ramp_up_s"), spawn_rate=data.get("spawn_rate"), duration_s=data.get("duration_s"),
        rate=data.get("rate"), workers=data.get("workers", 0),
        peak_cpu_percent=(data.get("generator") or {}).get("peak_cpu_percent"),
        flags=Flags(**{f.name: bool(flags.get(f.name, False)) for f in fields(Flags)}),
        exit_code=None if data.get("partial") else data.get("exit_code", 0), versions=data.get("versions") or {},
        users_target=data.get("users_target", data["users"]), users_per_worker=data.get("users_per_worker") or {},
        full_load_at=_parse_time(data["full_load_at"]) if data.get("full_load_at") else None,
        partial=bool(data.get("partial", False)), scenario=data.get("scenario"),
        users_missing_s=data.get("users_missing_s", 0.0), target_silent_s=data.get("target_silent_s", 0.0),
    )


def _merged(rows: Iterable[Window]) -> tuple[Window, ...]:
    """One row per window: a late row added to its window's; in time order."""
    by_key: dict[tuple[datetime, str, str], Window] = {}
    for row in rows:
        key = (row.start, row.type, row.name)
        by_key[key] = merge_windows(by_key[key], row) if key in by_key else row
    return tuple(sorted(by_key.values(), key=lambda w: (w.start, entry_order(w))))


def load(path: str | os.PathLike[str]) -> Results:
    """Read a results directory; a missing, foreign or damaged one is a FolioperfError with one line."""
    path = Path(path)
    if not path.exists():
        raise FolioperfError(f"no results directory at {path}")
    if not path.is_dir():
        raise FolioperfError(f"{path} is not a results directory (it is a file)")
    if not (path / "run.json").is_file():
        raise FolioperfError(f"{path} is not a folioperf results directory (no run.json)")
    run_data = _read_json(path / "run.json")
    if not isinstance(run_data, dict) or run_data.get("format") != RUN_FORMAT:
        found = run_data.get("format") if isinstance(run_data, dict) else None
        raise FolioperfError(f"{path} is not a folioperf results directory (run.json format {found!r}, "
                             f"expected {RUN_FORMAT!r})")
    stats_data = _read_json(path / "stats.json")
    db_path = path / "db.json"
    try:
        if stats_data.get("format") != STATS_FORMAT:
            raise FolioperfError(f"{path / 'stats.json'} has format {stats_data.get('format')!r}, "
                                 f"expected {STATS_FORMAT!r}")
        expected = {(x["type"], x["name"]): x["count"] for x in stats_data.get("expected_failures", ())}
        entries = tuple(sorted((
            Entry(type=e["type"], name=e["name"], expected=expected.get((e["type"], e["name"]), 0),
                  **{f: e[f] for f in _ENTRY_FIELDS}, _encoded=e["histogram"])
            for e in stats_data["entries"]), key=entry_order))
        timeseries = _merged(
            Window(start=_parse_time(r["time"]), type=r["type"], name=r["name"], count=int(r["count"]),
                   failures=int(r["failures"]), avg=_number(r["avg_ms"]), p50=_number(r["p50_ms"]),
                   p95=_number(r["p95_ms"]))
            for r in _read_csv(path / "timeseries.csv", TIMESERIES_COLUMNS))
        failures = tuple(Failure(r["type"], r["name"], r["error"], int(r["occurrences"]))
                         for r in _read_csv(path / "failures.csv", FAILURES_COLUMNS))
        modules = tuple(ModuleTime(**{f: m[f] for f in _MODULE_FIELDS}) for m in stats_data.get("modules", ()))
        traced = stats_data["trace"]["responses"] if "trace" in stats_data else None
        run = _run_info(run_data)
        db = _read_json(db_path) if db_path.is_file() else None
        server: ServerMetrics | None
        if (path / SERVER_JSON).is_file():
            server = ServerMetrics.from_files(_read_json(path / SERVER_JSON),
                                              _read_csv(path / SERVER_CSV, SERVER_COLUMNS))
        else:  # written before server-metrics.csv: the sandbox's figures were db.json's
            server = from_legacy_db(db, run.start, run.end)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        detail = f"missing {exc}" if isinstance(exc, KeyError) else str(exc).splitlines()[0]
        raise FolioperfError(f"{path} holds malformed results: {detail}") from None
    return Results(path=path, run=run, entries=entries, timeseries=timeseries, failures=failures,
                   db=db, modules=modules, traced=traced, server=server)
