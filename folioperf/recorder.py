"""The run's record, kept by the master (or the one local process): the results directory, the flags, the
exit code, the live view and the summary table. Loaded by every folioperf locustfile, so plain
`locust -f` gets the same exit codes and, with --results-dir, the same results directory as `folioperf run`.

How a test ends, and what the record says:
- it ran its time, was stopped from the web UI or by folioperf (exhausted test data): `test_stop` fires,
  the workers' final reports arrive, the directory is written (metrics.on_test_complete);
- Ctrl-C or SIGTERM while it runs: Locust fires `quitting` with the test still running; the record stops
  the test itself, writes the directory flagged `interrupted`, and the exit code is 130;
- a worker that stops reporting (killed, or so busy it misses its heartbeats) or leaves mid-test flags
  `worker_lost`; a generator process above Locust's 90 % CPU warning flags `cpu_saturated`; an open-model
  run below 95 % of its target rate flags `rate_missed`.
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from folioperf.errors import FolioperfError
from folioperf.pools import EXIT_EXHAUSTED

log = logging.getLogger("folioperf")

# Exit codes of a run (`folioperf run` and plain `locust -f` with folioperf loaded); the README lists them.
EXIT_OK = 0
EXIT_FAILURES = 1  # unexpected failures above --fail-on-error-rate
EXIT_USAGE = 2  # bad input or set-up: nothing ran
EXIT_STOPPED = EXIT_EXHAUSTED  # 3: folioperf stopped the run early (test data exhausted, login refused)
EXIT_RATE_MISSED = 4
EXIT_WORKER_LOST = 5
EXIT_CPU_SATURATED = 6
EXIT_INTERRUPTED = 130
COMPLETION_TIMEOUT = 90.0  # how long quitting waits for the results directory


def parse_rate_threshold(text: str) -> float:
    """'1%', '0.5 %' or '0.01' → a fraction of requests."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a failure rate: {text!r} (e.g. 1% or 0.01)") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"a failure rate is between 0% and 100%, not {text!r}")
    return value


def add_arguments(add: Any) -> None:
    """The record's options, through the plugin's `add` (Locust's parser, FOLIOPERF_* environment)."""
    add("--results-dir", env_var="FOLIOPERF_RESULTS_DIR", metavar="DIR",
        help="write a results directory per test under DIR (folioperf run: results/)")
    add("--tag", env_var="FOLIOPERF_TAG", metavar="TEXT", help="a label stored with the results (e.g. the release under test)")
    add("--fail-on-error-rate", type=parse_rate_threshold, default=0.0, env_var="FOLIOPERF_FAIL_ON_ERROR_RATE",
        metavar="RATE", help="exit 1 when unexpected failures exceed this share of requests (default 0%%: any)")
    add("--db", env_var="FOLIOPERF_DB_MONITOR", metavar="DSN",
        help="the target's PostgreSQL: the results get its top queries, connections and scans (pg_stat_statements)")
    # set by `folioperf run`, not shown in the web UI's form
    add("--sandbox-pid", type=int, env_var="FOLIOPERF_SANDBOX_PID", help=argparse.SUPPRESS).include_in_web_ui = False
    add("--live", action="store_true", default=False, env_var="FOLIOPERF_LIVE",
        help=argparse.SUPPRESS).include_in_web_ui = False


@dataclass
class _Test:
    """One test (one start → stop) as the record sees it."""

    start: datetime
    users: int
    spawn_rate: float | None
    peak_cpu: float = 0.0
    seen_workers: set[str] = field(default_factory=set)
    lost_workers: set[str] = field(default_factory=set)
    interrupted: bool = False
    done: Any = None  # gevent Event, set once the directory is written
    dbmon: Any = None
    modules: tuple[str, ...] = ()


class Recorder:
    def __init__(self, environment: Any) -> None:
        from gevent.event import Event

        self.environment = environment
        self.test: _Test | None = None
        self.live: Any = None
        self.last_results: Path | None = None
        self._idle = Event()
        self._idle.set()

    # -- listeners ----------------------------------------------------------------------------------
    def on_test_start(self, **_kwargs: Any) -> None:
        import gevent
        from gevent.event import Event

        options = self.environment.parsed_options
        runner = self.environment.runner
        users = getattr(runner, "target_user_count", None) or getattr(options, "num_users", None) or 0
        self.test = test = _Test(start=datetime.now(timezone.utc), users=int(users),
                                 spawn_rate=getattr(options, "spawn_rate", None), done=Event())
        self._idle.clear()
        if getattr(options, "db", None):
            test.dbmon = self._start_dbmon(options)
        gevent.spawn(self._watch, test)
        if getattr(options, "results_dir", None):
            gevent.spawn(self._read_modules, test)
        if getattr(options, "live", False) and self.live is None:
            self._start_live(test)

    def on_quitting(self, **_kwargs: Any) -> None:
        from locust.runners import STATE_SPAWNING, STATE_RUNNING

        runner = self.environment.runner
        test = self.test
        if test is not None and not test.done.is_set() and runner.state in (STATE_SPAWNING, STATE_RUNNING):
            test.interrupted = True  # Ctrl-C or SIGTERM mid-test: end it here so its record is complete
            log.warning("interrupted: stopping the test and writing its results")
            runner.quit()
        if not self._idle.wait(COMPLETION_TIMEOUT):
            log.error("the results were not written within %.0f s", COMPLETION_TIMEOUT)

    def complete(self, snapshot: Any, incomplete_workers: set[str]) -> None:
        """metrics.on_test_complete's callback: flags, exit code, results directory, summary."""
        test = self.test
        if test is None:
            return
        try:
            self._complete(test, snapshot, incomplete_workers)
        finally:
            test.done.set()
            self._idle.set()

    # -- during the test ----------------------------------------------------------------------------
    def _watch(self, test: _Test) -> None:
        """Peak generator CPU and lost workers, once a second while the test runs."""
        import gevent
        from locust.runners import STATE_MISSING, MasterRunner

        import psutil

        runner = self.environment.runner
        own = psutil.Process()
        own.cpu_percent(None)  # the first reading only starts the measurement
        while not test.done.is_set() and self.test is test:
            if isinstance(runner, MasterRunner):
                clients = list(runner.clients.values())
                if clients:
                    test.peak_cpu = max(test.peak_cpu, *(c.cpu_usage for c in clients))
                current = {c.id for c in clients if c.state != STATE_MISSING}
                test.lost_workers |= {c.id for c in clients if c.state == STATE_MISSING}
                if runner.state not in ("stopping", "stopped"):
                    test.lost_workers |= test.seen_workers - current
                    test.seen_workers |= current
            else:  # Locust samples its own CPU only every 5 s: too coarse for short runs
                test.peak_cpu = max(test.peak_cpu, own.cpu_percent(None))
            if self.live is not None:
                self.live.update()
            gevent.sleep(1.0)

    def _read_modules(self, test: _Test) -> None:
        """The target's module versions, from Okapi's module list or Eureka's entitlements (best effort)."""
        from folioperf.plugin import run_of
        from folioperf.target_info import module_versions

        try:
            run = run_of(self.environment)
            test.modules = module_versions(run.tool_okapi(), run.settings.tenant)
        except Exception as exc:  # neither list readable (no rights, login refused): versions unknown
            log.debug("module versions not read: %s", exc)

    def _start_dbmon(self, options: Any) -> Any:
        from folioperf.dbmon import DbMonitor

        monitor = DbMonitor(options.db, sandbox_pid=options.sandbox_pid, create_extension=bool(options.sandbox_pid))
        try:
            monitor.start()
        except FolioperfError as exc:
            log.warning("no database insight for this run: %s", exc)
            return None
        return monitor

    def _start_live(self, test: _Test) -> None:
        from folioperf.console import LiveView
        from folioperf.plugin import run_of

        options = self.environment.parsed_options
        names = ", ".join(w.name for w in run_of(self.environment).workflows) or "locust"
        title = f"{names}: {test.users} users against {self.environment.host}"
        logging.getLogger("locust.stats_logger").disabled = True  # folioperf's view and summary replace it
        self.live = LiveView(self.environment, title, getattr(options, "run_time", None))
        self.live.start()

    # -- the end ------------------------------------------------------------------------------------
    def _complete(self, test: _Test, snapshot: Any, incomplete_workers: set[str]) -> None:
        from locust.runners import MasterRunner

        environment = self.environment
        runner = environment.runner
        options = environment.parsed_options
        if self.live is not None:
            self.live.stop()
            self.live = None
        db = None
        if test.dbmon is not None:
            try:
                db = test.dbmon.stop()
            except Exception as exc:
                log.warning("database insight lost: %s", exc)
        master = isinstance(runner, MasterRunner)
        rate = _rate_status(environment, snapshot)
        flags = _flags(
            cpu_saturated=bool(runner.cpu_warning_emitted or getattr(runner, "worker_cpu_warning_emitted", False)),
            rate_missed=bool(rate and rate.missed),
            worker_lost=bool(test.lost_workers or incomplete_workers),
            interrupted=test.interrupted,
        )
        code = exit_code(flags, snapshot, getattr(options, "fail_on_error_rate", 0.0) or 0.0,
                         environment.process_exit_code)
        environment.process_exit_code = code
        if flags.worker_lost:
            log.error("a worker was lost during the test: its share of the load and of the data is missing")
        if flags.cpu_saturated:
            log.error("a load generator process was above 90%% CPU: latencies may include its own queueing")
        results_root = getattr(options, "results_dir", None)
        path = None
        if results_root:
            try:
                path = self._write(test, snapshot, flags, code, rate, db, workers=len(test.seen_workers) if master else 0)
            except (OSError, FolioperfError) as exc:  # e.g. a results directory that cannot be written
                log.error("the results directory was not written: %s", exc)
                environment.process_exit_code = code = EXIT_USAGE
        if getattr(options, "live", False):
            _print_summary(snapshot, path, flags, code)

    def _write(self, test: _Test, snapshot: Any, flags: Any, code: int, rate: Any, db: Any, workers: int) -> Path:
        from locust.html import get_html_report

        from folioperf import results
        from folioperf.plugin import run_of

        environment = self.environment
        options = environment.parsed_options
        run = run_of(environment)
        names = [w.name for w in run.workflows] or ["locust"]
        settings = run.settings
        chosen: dict[str, Any] = {"auth": settings.auth, "login": settings.login, "think_time": settings.think_time}
        for name in names:
            values = run.options.get(name)
            if values is not None:
                chosen.update(vars(values))
        run_time = getattr(options, "run_time", None)
        info = results.RunInfo(
            workflow="+".join(names), users=test.users,
            target=results.Target(url=environment.host or "", tenant=settings.tenant,
                                  sandbox=bool(getattr(options, "sandbox_pid", None)), modules=test.modules),
            start=test.start, end=datetime.now(timezone.utc),
            description="; ".join(w.description for w in run.workflows),
            options=chosen, tag=getattr(options, "tag", None),
            ramp_up_s=(test.users / test.spawn_rate) if test.spawn_rate else None, spawn_rate=test.spawn_rate,
            duration_s=float(run_time) if run_time else None, rate=rate.target_per_s if rate else None,
            workers=workers, peak_cpu_percent=round(test.peak_cpu, 1), flags=flags, exit_code=code,
        )
        try:
            html = get_html_report(environment, show_download_link=False)
        except Exception as exc:  # the report is a convenience; the record is what matters
            log.warning("Locust's HTML report was not made: %s", exc)
            html = None
        secrets = [run.password] if run.password else []
        path = results.write(options.results_dir, info, snapshot, report_html=html, db=db, secrets=secrets)
        self.last_results = path
        log.info("results: %s", path)
        return path


def _flags(**values: bool) -> Any:
    from folioperf.results import Flags

    return Flags(**values)


def _rate_status(environment: Any, snapshot: Any) -> Any:
    try:
        from folioperf.pacing import rate_status
    except ImportError:
        return None
    return rate_status(environment, snapshot)


def failure_rate(snapshot: Any) -> float:
    """Unexpected failures per request, over the API calls (transactions when a run has none)."""
    entries = snapshot.apis() or snapshot.transactions()
    count = sum(e.count for e in entries)
    return sum(e.failures for e in entries) / count if count else 0.0


def exit_code(flags: Any, snapshot: Any, threshold: float, stopped_with: int | None) -> int:
    """The run's exit code: the most serious thing that happened (see the constants above)."""
    if flags.interrupted:
        return EXIT_INTERRUPTED
    if stopped_with not in (None, EXIT_OK):
        return stopped_with
    if flags.worker_lost:
        return EXIT_WORKER_LOST
    if flags.cpu_saturated:
        return EXIT_CPU_SATURATED
    if flags.rate_missed:
        return EXIT_RATE_MISSED
    rate = failure_rate(snapshot)
    if rate > threshold or (threshold == 0 and rate > 0):
        return EXIT_FAILURES
    return EXIT_OK


def _print_summary(snapshot: Any, path: Path | None, flags: Any, code: int) -> None:
    from rich.console import Console

    from folioperf.console import summary_table

    out = Console(highlight=False, soft_wrap=True)
    if not out.is_terminal:  # a log or CI page: room for the API names rather than the default 80 columns
        out.width = max(out.width, 120)
    rows = [{"type": e.type, "name": e.name, "count": e.count, "failures": e.failures, "avg": e.avg,
             "p50": e.p50, "p75": e.p75, "p95": e.p95, "rps": e.rps} for e in snapshot.entries]
    out.print(summary_table(rows))
    raised = [name for name in ("interrupted", "worker_lost", "cpu_saturated", "rate_missed") if getattr(flags, name)]
    if raised:
        out.print(f"[bold red]flags: {', '.join(raised)}[/]")
    if path is not None:
        out.print(f"results: {path}   (PTF report: folioperf report {path} -o report.md)")
    out.print(f"exit code {code}")


def attach(environment: Any) -> Recorder:
    """Keep the record of this process's tests (master or local; a no-op on workers)."""
    from locust.runners import WorkerRunner

    from folioperf import metrics

    recorder = Recorder(environment)
    if isinstance(environment.runner, WorkerRunner):
        return recorder
    events = environment.events
    events.test_start.add_listener(recorder.on_test_start)
    events.quitting.add_listener(recorder.on_quitting)
    metrics.on_test_complete(environment, recorder.complete)
    return recorder
