"""folioperf in one Locust process: one `FolioRun`, built by the plugin's init listener and kept on the
environment (`environment.folioperf`), as Locust's Environment owns its runner, stats and events.

It holds the run's settings and workflows, the test data (`store`), the logins, the metrics, the open
model, and on the master the workers' coordinator (folioperf.distributed) or on a worker its link to the
master; the virtual users take what they need from it. Its listeners are wired in one place (`_attach`).

A test on the master (or the one local process):
- test_start: settings and workflows as the form or command line has them, the test data loaded (local)
  or sealed and sent to each trusted worker (master), a new record, the database monitor, the module
  versions, the live view, the periodic checkpoint;
- test_stopping (master): the workers are asked to stop and their final reports collected;
- test_stop: the end of the test, handled once (`_end_test`): flags, exit code, the results directory,
  the summary. It runs in `finally` paths: whatever ends a test (run time, web UI, Ctrl-C, SIGTERM, a lost
  worker, exhausted test data), its record is written or the exit code says it was not (8); never exit 0
  without results;
- quitting with a test still running (Ctrl-C, SIGTERM): the test is ended first, flagged `interrupted`;
- quit (master/local, --prometheus): a Prometheus that has been scraping gets its last scrape of the final
  counts before the process ends (folioperf.prometheus).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Mapping

import gevent
import gevent.event
import psutil
import requests
from locust.event import EventHook
from locust.runners import STATE_MISSING, STATE_SPAWNING, MasterRunner, WorkerRunner

from folioperf import locust_memory, locust_stats, okapi_trace, results
from folioperf.auth import Credentials, Logins
from folioperf.backoff import TARGET_DOWN_SECONDS, IterationWatch, TargetWatch
from folioperf.config import DB_ENV, PASSWORD_ENV
from folioperf.console import LiveView, print_summary
from folioperf.dbmon import DbMonitor
from folioperf.distributed import REPORT_GRACE_SECONDS, Coordinator, Link, Seal, quit_once
from folioperf.errors import FolioperfError, is_raised
from folioperf.groups import UserGroup
from folioperf.metrics import ERROR, TRANSACTION, Metrics, locust_bucket
from folioperf.okapi import Okapi
from folioperf.options import Settings, format_duration
from folioperf.outcome import EXIT_INTERRUPTED, EXIT_NOT_RECORDED, EXIT_TARGET_DOWN, RAMP_LATE_S, Flags, exit_code, ramp_short
from folioperf.pools import SHARED, PoolStore, check_declared, read_pools_file, split
from folioperf.rates import RateStatus
from folioperf.servers.collector import Collector
from folioperf.servers.series import ServerMetrics
from folioperf.servers.sources import make_source
from folioperf.steady_gc import SteadyGC
from folioperf.target_info import TargetInfo, target_info
from folioperf.testdata import POOL_LIMIT
from folioperf.timers import Timers
from folioperf.workflow import FolioUser, Workflow, find_workflow

if TYPE_CHECKING:
    from folioperf.prometheus import Exporter

log = logging.getLogger("folioperf")

CHECKPOINT_SECONDS = 60.0  # a long run's results so far are written this often, in case its master is killed
USERS_MISSING_SECONDS = 5.0  # after full load, fewer users than asked for longer than this (in all) is flagged
USERS_SETTLE_SECONDS = 5.0  # ... counted from this long after full load: workers report their users every 3 s
WATCH_SECONDS = 1.0
RUN_TIME_SLACK_S = 1.0  # a test stopped this close to its run time ended by it (Locust's timer starts a moment early)
TRIM_EVERY = 10  # watches: Locust's own statistics held to what they show (folioperf.locust_memory)
UNTRACED_BEFORE_SAYING = 20  # --trace: API responses without trace headers before saying the target sends none
MASTER, WORKER, LOCAL = "master", "worker", "local"


@dataclass
class TestRecord:
    """What the master (or local process) observes of one test, beyond the metrics."""

    start: datetime
    users_target: int
    spawn_rate: float | None
    duration_s: float | None  # as asked (the run time)
    peak_users: int = 0
    users_per_worker: dict[str, int] = field(default_factory=dict)
    full_load_at: datetime | None = None
    users_per_group: dict[str, int] = field(default_factory=dict)  # peak users of each user group
    peak_cpu: float = 0.0
    seen_workers: set[str] = field(default_factory=set)
    lost_workers: set[str] = field(default_factory=set)
    interrupted: bool = False
    ended: bool = False  # its end has begun (flags, results, summary)
    written: gevent.event.Event = field(default_factory=gevent.event.Event)  # ... and is over, exit code set
    target: TargetInfo | None = None  # platform, module versions, release
    served_before: dict[str, int] | None = None  # the sandbox's request counters when the test started
    dbmon: DbMonitor | None = None
    servers: Collector | None = None  # the server metrics' collector (master or local only)
    spool: results.TimeseriesSpool | None = None  # its settled windows, in its partial directory with the checkpoints
    untraced_said: bool = False  # --trace: the target sends no trace headers, and the user was told
    users_missing_s: float = 0.0  # after full load: seconds with fewer users running than asked
    fewest_users: int | None = None  # ... and the fewest then
    sandbox_gone: bool = False  # the built-in sandbox's process exited during the test
    silence_said: bool = False  # the target's current silence was told
    stopped: datetime | None = None  # when its stop began (the run time's end, the web UI's Stop, Ctrl-C)
    timed_from: datetime | None = None  # when its run time began (Locust's timer: before test_start's work)

    def ran_s(self, end: datetime) -> float:
        """How long the load ran, up to its stop: the run time asked for, or less when the test was stopped
        before it (a test stopped after 37 s of 60 is recorded as 37 s)."""
        stopped = self.stopped or end
        timed = (stopped - (self.timed_from or self.start)).total_seconds()
        if self.duration_s and timed > self.duration_s - RUN_TIME_SLACK_S:
            return self.duration_s  # ended by its run time
        return round((stopped - self.start).total_seconds(), 3)  # as elapsed_s: never above it

    def users_missing(self) -> bool:
        return self.users_missing_s > USERS_MISSING_SECONDS

    def ramp_incomplete(self, end: datetime) -> bool:
        """Not every user it asked for ran for at least half of the test."""
        if self.users_target <= 0:
            return False
        ramp = (self.full_load_at - self.start).total_seconds() if self.full_load_at else None
        return ramp_short(ramp, (end - self.start).total_seconds())


class FolioRun:
    """folioperf's state in one Locust process (see the module docstring)."""

    def __init__(self, environment: Any) -> None:
        self.environment = environment
        runner = environment.runner
        self.role = MASTER if isinstance(runner, MasterRunner) else WORKER if isinstance(runner, WorkerRunner) else LOCAL
        self.settings = Settings()
        self.password: str | None = os.environ.get(PASSWORD_ENV) or None
        self.db_dsn: str | None = None  # the monitored database; kept out of the options Locust sends workers
        self.groups: dict[type, UserGroup] = {}  # folioperf user class -> what its users share
        self.modes: dict[str, str] = {}
        self.logins = Logins()
        self.store = PoolStore()
        self.metrics = Metrics(settle=self.role != WORKER)
        self.target_watch = TargetWatch()  # how long the target did not answer (folioperf.backoff)
        self.iterations = IterationWatch()  # whether every iteration raises (folioperf.backoff)
        self.share = 1  # how many processes share the open model's rate (the master says, in its setup)
        self.test: TestRecord | None = None
        self.tests = 0  # tests started in this process (master or local)
        self._keep_store = False  # the next test goes on with the pools as the former one left them
        self.stopping = False
        self._quitting = False  # the process is shutting down (see _on_quitting)
        self.last_results: Path | None = None
        self.test_complete = EventHook()  # master/local: fired with record=, snapshot=, path=, exit_code=
        self.live: LiveView | None = None
        self.exporter: Exporter | None = None  # master/local with --prometheus
        self.gc = SteadyGC()  # the collector during a test, where users run (local, worker)
        self._pools: tuple[tuple, dict[str, list]] | None = None
        self._tool: tuple[tuple, Okapi] | None = None
        seal = Seal.from_environment()
        self.coordinator = Coordinator(environment, seal, self._merge_report, self.stop_run) \
            if self.role == MASTER else None
        self.link = Link(environment, seal, self._apply_setup, self._take_report) \
            if self.role == WORKER else None
        self._attach()

    @staticmethod
    def of(environment: Any) -> FolioRun:
        run = getattr(environment, "folioperf", None)
        if run is None:
            raise FolioperfError("folioperf is not set up in this Locust environment (its plugin's init listener did not run)")
        return run

    # -- listeners, in one place -------------------------------------------------------------------
    def _attach(self) -> None:
        import locust.stats  # noqa: PLC0415

        locust.stats.bucket_response_time = locust_bucket
        locust_stats.count_calls_only(self.environment.stats)
        events = self.environment.events
        events.request.add_listener(self.metrics.record)
        events.test_start.add_listener(self._on_test_start)
        events.reset_stats.add_listener(lambda **_kw: self.metrics.reset())
        events.spawning_complete.add_listener(self._on_spawning_complete)
        if self.role == WORKER:
            events.test_stop.add_listener(lambda **_kw: self.gc.stop())
            events.quitting.add_listener(self._on_worker_quitting)
            return
        self.metrics.on_new_failure = self._on_new_failure
        if self.role == MASTER:
            quit_once(self.environment.runner)
        events.test_stopping.add_listener(self._on_test_stopping)
        events.test_stop.add_listener(self._on_test_stop)
        events.quitting.add_listener(self._on_quitting)
        events.quit.add_listener(self._on_quit)

    # -- set-up ------------------------------------------------------------------------------------
    def configure(self, required: bool = True) -> None:
        """Settings, the workflow of each folioperf user class, option values and pool modes, from the
        parsed options. `required=False` lets --workflow be missing (a web UI run before its form is sent)."""
        options = self.environment.parsed_options
        self.settings = Settings.from_options(options)
        if self.role != WORKER and options is not None and getattr(options, "db", None):
            self.db_dsn = options.db
            options.db = None  # Locust hands every worker the master's options: no DSN (and its password) there
        self._configure_workflows(self.settings.workflow, required)

    def _configure_workflows(self, spec: str | None, required: bool) -> None:
        chosen = None
        groups: dict[type, UserGroup] = {}
        for cls in self.environment.user_classes:
            if not (isinstance(cls, type) and issubclass(cls, FolioUser)):
                continue
            if cls._chosen_by_option:
                if not spec:
                    if not required:
                        continue
                    raise FolioperfError("no workflow chosen: give --workflow NAME or FILE (`folioperf workflows` lists them)")
                chosen = chosen or find_workflow(spec)
                cls.workflow, cls.tasks = chosen, [chosen.taskset]
            assert cls.workflow is not None  # its own, or the one chosen just now
            groups[cls] = UserGroup.of(cls.workflow, cls.group, self.settings, self.environment.parsed_options,
                                       self.environment.events)
        if spec and chosen is None and groups:
            log.warning("--workflow %s is ignored: the locustfile's users run %s", spec, ", ".join(w.name for w in self.workflows))
        modes: dict[str, str] = {}
        for group in groups.values():
            for name, mode in group.modes().items():
                if modes.setdefault(name, mode) != mode:
                    raise FolioperfError(f"pool {name!r} is {modes[name]} in one workflow and {mode} in another")
        self.groups, self.modes = groups, modes

    @property
    def workflows(self) -> list[Workflow]:
        return list(dict.fromkeys(g.workflow for g in self.groups.values()))

    @property
    def workflow_name(self) -> str:
        """What runs, as the results name it: the scenario, else the workflows (`locust`: none of folioperf's)."""
        names = [self.scenario_name] if self.scenario_name else ([w.name for w in self.workflows] or ["locust"])
        return "+".join(names)

    @property
    def scenario_name(self) -> str | None:
        return Path(self.settings.scenario).stem if self.settings.scenario else None

    def group_of(self, cls: type) -> UserGroup:
        return self.groups[cls]

    def serve_metrics(self) -> None:
        """Master or local, once: serve Prometheus' format at --prometheus until the process quits."""
        if self.settings.prometheus and self.exporter is None:
            from folioperf.prometheus import Exporter  # noqa: PLC0415  (prometheus_client and numpy: only then)

            exporter = Exporter(self, self.settings.prometheus)
            exporter.start()
            self.exporter = exporter

    def prepare(self) -> None:
        """Master or local, at start: the password, a login, the test data; a bad one ends the run here.
        A locustfile without folioperf workflows (plain Locust users) needs none of them: it gets folioperf's
        metrics, results directory and exit codes all the same."""
        if not self.workflows:
            return
        if self.password is None:
            self.password = Credentials.from_environment(self.settings.tenant, self.settings.username).password
        self.rate_targets()  # a bad --rate is one line now, not an error in every user
        if self.environment.host:  # in the web UI it may come later
            self.tool_okapi().authenticate()
        if self.environment.host or self.settings.pools:
            self.pool_data()

    @property
    def credentials(self) -> Credentials:
        if self.password is None:
            raise FolioperfError(f"no FOLIO password in this process: set {PASSWORD_ENV}")
        return Credentials(self.settings.tenant, self.settings.username, self.password)

    def okapi(self, session: Any, group: UserGroup, timers: Timers) -> Okapi:
        """A virtual user's FOLIO client over its Locust session; `timers` are the user's (fired before each call)."""
        s = self.settings
        return Okapi(session, self.credentials, auth=s.auth, shared_login=s.login == "shared",
                     refresh_margin=s.refresh_margin, logins=self.logins, browser=group.workflow.browser,
                     preflights=not s.no_preflight, timers=timers, label=group.label,
                     headers=group.workflow.headers(group.options) if group.workflow.headers else None,
                     trace=self.metrics if s.trace else None)

    def tool_okapi(self) -> Okapi:
        """Over a plain requests session, for work on the master (the first login, pool loaders, module
        versions); one login serves them all while the URL, tenant, user and auth mode stay the same."""
        key = (self.environment.host, self.settings.tenant, self.settings.username, self.settings.auth)
        if self._tool is None or self._tool[0] != key:
            self._tool = (key, Okapi(requests.Session(), self.credentials, url=self.environment.host,
                                     auth=self.settings.auth, logins=self.logins))
        return self._tool[1]

    def rate_targets(self) -> dict[str, float]:
        """Each open-model group's target in iterations/s for the whole run (--rate, a scenario group's rate,
        else its workflow's default); closed-model groups have none."""
        return {g.key: target for g in self.groups.values() if (target := g.target_per_s()) is not None}

    def pool_data(self) -> dict[str, list]:
        """The declared pools, from --pools or drawn as the workflows declare; read once per configuration."""
        key = (self.settings.pools, self.settings.tenant, tuple(sorted(self.modes.items())))
        if self._pools is not None and self._pools[0] == key:
            return self._pools[1]
        pools: dict[str, list] = {}
        if self.modes:
            names = ", ".join(w.name for w in self.workflows)
            if self.settings.pools and not (self.settings.redraw_pools and self.tests > 1):
                document = read_pools_file(self.settings.pools)
                source = f"pools file {self.settings.pools}"
                tenant = document.get("tenant")
                if tenant and tenant != self.settings.tenant:
                    raise FolioperfError(f"{source} holds data of tenant {tenant!r}, but the run uses tenant {self.settings.tenant!r}")
                for w in self.workflows:
                    expected = Path(w.dataset).stem if w.dataset else None  # a name, or a file named after it
                    if expected and document.get("dataset") not in (None, expected):
                        log.warning("%s was made for dataset %r; workflow %s expects %r", source, document["dataset"], w.name, expected)
                pools = document["pools"]
            else:
                source = f"the test data of workflow {names}"
                pools = self._draw_pools()
            check_declared(pools, self.modes, source)
            pools = {name: pools[name] for name in self.modes}
        self._pools = (key, pools)
        return pools

    def _draw_pools(self) -> dict[str, list]:
        """No pools file (plain Locust): the workflows' pools drawn now, as `folioperf pools` draws them, from the
        database when --db names it, else through the APIs as the run's user."""
        from folioperf.seed import datapools  # noqa: PLC0415
        from folioperf.seed import dataset as dataset_mod  # noqa: PLC0415  (TOML and Faker: only for this)

        for w in self.workflows:
            if w.pools and w.draw is None:
                raise FolioperfError(f"workflow {w.name} needs test data (pools {', '.join(w.pools)}) and does not say "
                                     "how to draw it: give --pools FILE (`folioperf pools` writes it)")
        datasets = {w: dataset_mod.load(os.fspath(w.dataset)) if w.dataset else None for w in self.workflows}
        units = [datapools.Unit(g.pool, g.workflow, datasets[g.workflow]) for g in self.groups.values() if g.workflow.pools]
        if self.db_dsn:
            with datapools.database(self.db_dsn, self.settings.tenant) as source:
                return datapools.draw(source, units, POOL_LIMIT)
        credentials = self.credentials
        return datapools.draw(datapools.api(self.environment.host, credentials.tenant, credentials.username,
                                            credentials.password), units, POOL_LIMIT)

    def _setup_for(self, index: int, count: int, pools: dict[str, list]) -> dict[str, Any]:
        """A worker's setup: the settings, its share of the test data, and the password when it has none."""
        share = split(pools, self.modes, count)[index] if pools else {}
        detected = [[url, tenant, mode] for (url, tenant), mode in self.logins.detected.items()]
        settings = {k: v for k, v in vars(self.settings).items() if k not in ("db", "live", "sandbox_pid", "prometheus")}
        return {"settings": settings, "options": {g.key: vars(g.options) for g in self.groups.values()},
                "index": index, "count": count,
                "pools": share, "modes": self.modes, "totals": {n: len(e) for n, e in pools.items()},
                "auth": detected, "password": self.password}

    def _take_report(self) -> dict[str, Any]:
        """A worker's report: its metrics since the last one, and how its users found the target."""
        return {**self.metrics.take_report(), "target": self.target_watch.to_wire()}

    def _merge_report(self, client_id: str, report: Mapping[str, Any]) -> None:
        self.metrics.merge_report(client_id, report)
        self.target_watch.merge(client_id, report.get("target"))

    def _apply_setup(self, data: dict[str, Any]) -> None:
        """A worker, before its test's first spawn message: settings, workflow, test data, password."""
        # the test's reports are numbered from here, not from test_start: Locust's spawn message may come
        # seconds later (the master's test_start goes on after the setups), and the report sent in between
        # already carries this test's number
        self.metrics.start_test()
        self.target_watch.reset()
        self.iterations.reset()
        self.settings = Settings.from_options(data["settings"])
        try:
            self._configure_workflows(self.settings.workflow, required=True)
        except FolioperfError as exc:
            self.stop_run(str(exc), exc.exit_code)
            return
        for group in self.groups.values():
            group.options = SimpleNamespace(**data["options"][group.key])
        self.store.load(data["pools"], data["modes"], worker=data["index"], workers=data["count"], totals=data["totals"])
        self.share = data["count"]
        if self.password is None:
            self.password = data.get("password")
        for url, tenant, mode in data.get("auth") or ():  # spares each worker its own probe of login-with-expiry
            self.logins.detected[(url, tenant)] = mode

    # -- stopping a run from inside ------------------------------------------------------------------
    def stop_run(self, message: str, exit_code: int) -> None:
        """End the whole run with one logged reason and `exit_code` (from a user, a worker or the master)."""
        if self.stopping:
            return
        self.stopping = True
        runner = self.environment.runner
        if self.link is not None:
            self.link.stop_run(message, exit_code)
            return
        log.error(message)
        self.environment.process_exit_code = exit_code
        options = self.environment.parsed_options
        # as Locust does for StopTest: a headless run ends, a web UI run stops and waits for the user
        gevent.spawn(runner.quit if options is None or options.headless else runner.stop)

    def _on_new_failure(self, request_type: str, name: str, error: str) -> None:
        """A workflow's bug, logged once per distinct error (as the failure of a task or of a transaction)."""
        if request_type == ERROR:
            log.error("error in %s: %s (further occurrences are counted, not logged)", name, error)
        elif request_type == TRANSACTION and is_raised(error):
            log.error("error in transaction %s: %s (further occurrences are counted, not logged)", name, error)

    # -- a test ------------------------------------------------------------------------------------
    def _users_about_to_run(self) -> None:
        """Local or worker, its test data loaded: what must be ready before the first user starts."""
        self.gc.start()  # after every import and the test data: all of it out of the collector's sight

    def _on_test_start(self, **_kwargs: Any) -> None:
        self.stopping = False
        if self.role == WORKER:  # its metrics and test data started with the master's setup, before this
            self._start_open_models(self.share)
            self._users_about_to_run()
            return
        self.metrics.start_test()
        self.target_watch.reset()
        self.iterations.reset()
        self.tests += 1
        runner = self.environment.runner
        options = self.environment.parsed_options
        timed_from = datetime.now(timezone.utc)
        try:
            self.configure()  # web UI: the form's values
            if self.tests > 1:
                # Locust says "spawning" only once test_start is over; "stopped" meanwhile ends the web UI's polling
                runner.update_state(STATE_SPAWNING)
            if self.tests > 1 and self._fresh_data():
                self.metrics.start_test()  # the test starts now, its data ready
                self._restart_run_time()
                timed_from = datetime.now(timezone.utc)
            self.prepare()
            self._start_open_models(1)
            if self.role == MASTER:
                pools = self.pool_data()
                assert self.coordinator is not None
                count = self.coordinator.start_test(lambda k, n: self._setup_for(k, n, pools))
                if pools:
                    log.info("test data sent to %d worker(s): %s", count, ", ".join(
                        f"{n} {len(e)}{' (each worker all)' if self.modes[n] == SHARED else ''}" for n, e in pools.items()))
            else:
                if not self._keep_store:
                    self.store.load(self.pool_data(), self.modes)
                self._users_about_to_run()
        except FolioperfError as exc:
            self.stop_run(str(exc), exc.exit_code)
        run_time = getattr(options, "run_time", None)
        users = getattr(runner, "target_user_count", None) or getattr(options, "num_users", None) or 0
        self.test = record = TestRecord(start=datetime.now(timezone.utc), users_target=int(users),
                                        spawn_rate=getattr(options, "spawn_rate", None),
                                        duration_s=float(run_time) if run_time else None, timed_from=timed_from)
        if self.db_dsn:
            record.dbmon = self._start_dbmon()
        record.servers = self._start_servers(record)
        if self.settings.sandbox_pid:
            record.served_before = self._served()
        gevent.spawn(self._watch, record)
        if self.settings.results_dir:
            record.spool = results.TimeseriesSpool(self.settings.results_dir, record.start, self.workflow_name,
                                                   self._secrets())
            self.metrics.windows_to(record.spool)
            gevent.spawn(self._read_modules, record)
            gevent.spawn(self._checkpoints, record)
        if self.settings.live:
            self._start_live(record)

    def _fresh_data(self) -> bool:
        """Master or local, before a test after the first in this process (the web UI's next test, a Locust
        master's next): the test starts as a new run would, not on the items the former test checked out or
        placed holds on, which its pools would hand out again. The datasets `folioperf run` seeded are reset and
        the pools drawn again; pools drawn at the test's start (plain Locust) are drawn again from the data as it
        is now; a pools file of the user's, with nothing reset, goes on from where the former test left its
        entries (one process), or is refused (a master: its workers hold them). Says whether the data changed."""
        s = self.settings
        self._keep_store = False
        for spec in s.reset_datasets.split(",") if s.reset_datasets else ():
            self._reset_dataset(spec)
        if s.redraw_pools or not s.pools:
            self._pools = None
            return bool(s.reset_datasets) or bool(self.modes)
        if not s.reset_datasets and any(mode != SHARED for mode in self.modes.values()):
            if self.role == MASTER:
                raise FolioperfError(
                    f"pools file {s.pools} was handed out to the previous test, whose users used its items: a second "
                    "test would take them again (an item checked out twice); start Locust again with a fresh pools "
                    "file (`folioperf pools`), or use `folioperf run --web`, which resets the data before each test")
            self._keep_store = True
            log.info("pools file %s: this test goes on from where the previous one left its entries", s.pools)
        return bool(s.reset_datasets)

    def _reset_dataset(self, spec: str) -> None:
        """`folioperf reset` in a child process: seeding's generator and threads are not for a gevent-patched one."""
        if not self.db_dsn:
            raise FolioperfError("the data cannot be reset for this test: no --db")
        cmd = [sys.executable, "-m", "folioperf", "reset", spec, "--tenant", self.settings.tenant]
        if self.settings.reset_scale:
            cmd += ["--scale", repr(self.settings.reset_scale)]
        env = {**os.environ, DB_ENV: self.db_dsn}  # the environment, never argv: the DSN may hold a password
        done = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if done.returncode != 0:
            said = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
            said = said.removeprefix("folioperf: error: ")
            raise FolioperfError(f"the data could not be reset for this test: {said}")
        log.info("dataset %s reset to its seeded state for this test", Path(spec).stem)

    def _restart_run_time(self) -> None:
        """The web UI's run-time timer began with the form, before the data was ready: the test runs its
        whole run time from now, as a new run would (Locust keeps the timer on its web UI)."""
        web_ui = self.environment.web_ui
        run_time = getattr(self.environment.parsed_options, "run_time", None)
        if web_ui is None or not run_time or getattr(web_ui, "_run_time_greenlet", None) is None:
            return
        web_ui._cancel_run_time_timer()
        web_ui._run_time_greenlet = gevent.spawn_later(run_time, web_ui._stop_runners)

    def _start_open_models(self, share: int) -> None:
        for group in self.groups.values():
            group.open_model.start_test(group.target_per_s(), share)

    def _on_spawning_complete(self, user_count: int, **_kwargs: Any) -> None:
        if self.environment.reset_stats:  # --reset-stats: Locust resets its own stats at this point too
            self.metrics.reset()
        record = self.test
        if record is not None and self.role != WORKER and record.full_load_at is None and user_count >= record.users_target:
            record.full_load_at = datetime.now(timezone.utc)
            record.peak_users = max(record.peak_users, user_count)

    def _on_test_stopping(self, **_kwargs: Any) -> None:
        record = self.test
        if record is None or record.ended:
            return
        record.stopped = datetime.now(timezone.utc)
        self.metrics.stop()  # the measured duration (requests/s, the achieved rate) ends when stopping begins
        if self.coordinator is None:
            return
        timeout = (self.environment.stop_timeout or 0) + REPORT_GRACE_SECONDS
        incomplete = self.coordinator.stop_and_collect(timeout)
        record.lost_workers |= incomplete | set(self.metrics.lost_reports)

    def _on_test_stop(self, **_kwargs: Any) -> None:
        self.gc.stop()
        self._end_test()

    def _on_quitting(self, **_kwargs: Any) -> None:
        """The process is ending. After a test that ended, nothing to do (its results may still be being
        written: they are finished first, with the test's own exit code). Otherwise a signal (Ctrl-C, SIGTERM)
        came first: a test under way is ended here, flagged interrupted, so its record is complete; before
        any test began there is nothing to write, and the run says so with the same exit code.

        Locust shuts down twice when a SIGTERM comes as it ends on its own (its handler's shutdown and its main
        one), the second raising SystemExit in a process already exiting (a traceback after the summary): a
        second shutdown waits here for the first, which ends the process."""
        if self._quitting:
            gevent.event.Event().wait()
        self._quitting = True
        record = self.test
        environment = self.environment
        if record is not None and record.ended:
            if not record.written.is_set():
                log.warning("interrupted as the test's results are written: they are finished first")
                record.written.wait()
            return
        options = environment.parsed_options
        if record is None:
            if options is not None and options.headless and environment.process_exit_code is None:
                log.warning("interrupted before the test started: nothing ran, no results were written")
                environment.process_exit_code = EXIT_INTERRUPTED
            return
        record.interrupted = True
        log.warning("interrupted: stopping the test and writing its results")
        environment.runner.quit()  # on a master, while its test ends: waits for that end (quit_once)
        self._end_test()

    def _on_quit(self, **_kwargs: Any) -> None:
        """The results are written and the workers told to quit: Prometheus' last scrape, then the process ends."""
        if self.exporter is not None:
            self.exporter.linger()

    def _on_worker_quitting(self, **_kwargs: Any) -> None:
        self.environment.runner.stop()  # quitting on its own (Ctrl-C, SIGTERM): stop so the final report goes

    # -- during the test ---------------------------------------------------------------------------
    def _watch(self, record: TestRecord) -> None:
        """Peak users and generator CPU, lost workers, the live view: once a second while the test runs."""
        runner = self.environment.runner
        own = psutil.Process()
        own.cpu_percent(None)  # the first reading only starts the measurement
        ticks = 0
        while not record.ended and self.test is record:
            ticks += 1
            if ticks % TRIM_EVERY == 0:
                locust_memory.trim(runner.stats, time.time())
            if self.role == MASTER:
                clients = list(runner.clients.values())
                if clients:
                    record.peak_cpu = max(record.peak_cpu, *(c.cpu_usage for c in clients))
                current = {c.id for c in clients if c.state != STATE_MISSING}
                record.lost_workers |= {c.id for c in clients if c.state == STATE_MISSING}
                if runner.state not in ("stopping", "stopped"):
                    record.lost_workers |= record.seen_workers - current
                    record.seen_workers |= current
                assert self.coordinator is not None
                test = self.coordinator.test
                record.peak_users = max(record.peak_users, test.peak_total)
                record.users_per_worker = dict(test.peak_users)
                by_class = runner.reported_user_classes_count
                gone = self.coordinator.gone()
                running = sum(n for worker, n in test.users.items() if worker not in gone)
            else:  # Locust samples its own CPU only every 5 s: too coarse for short runs
                record.peak_cpu = max(record.peak_cpu, own.cpu_percent(None))
                record.peak_users = max(record.peak_users, runner.user_count)
                by_class = runner.user_classes_count
                running = runner.user_count
            self._count_users(record, running)
            self._watch_target(record)
            for cls, group in self.groups.items():
                users = by_class.get(cls.__name__, 0)
                record.users_per_group[group.key] = max(record.users_per_group.get(group.key, 0), users)
            if (self.settings.trace and not record.untraced_said and self.metrics.traced == 0
                    and self.metrics.untraced >= UNTRACED_BEFORE_SAYING):  # on a master, the workers' come in their reports
                record.untraced_said = True
                log.warning("--trace: %s %s", self.environment.host, okapi_trace.NO_HEADERS)
            if self.live is not None:
                self.live.update()
            gevent.sleep(WATCH_SECONDS)

    def _count_users(self, record: TestRecord, running: int) -> None:
        """After full load, the users running against those asked for, for the whole test (not its stop). Locust
        fires test_stopping before its state leaves "running", and the workers' users stop while the master
        collects their last reports: the stop's own start (`record.stopped`) ends the count."""
        if (self.environment.runner.state != "running" or self.stopping or record.full_load_at is None
                or record.stopped is not None):
            return
        if (datetime.now(timezone.utc) - record.full_load_at).total_seconds() < USERS_SETTLE_SECONDS:
            return
        if running < record.users_target:
            record.users_missing_s += WATCH_SECONDS
            record.fewest_users = running if record.fewest_users is None else min(record.fewest_users, running)

    def _watch_target(self, record: TestRecord) -> None:
        """The built-in sandbox gone ends the run; a target silent for long is said once a silence."""
        pid = self.settings.sandbox_pid
        if pid and not record.sandbox_gone and not _alive(pid):
            record.sandbox_gone = True
            self.stop_run(f"target down: the built-in sandbox at {self.environment.host} (pid {pid}) exited during "
                          "the test; ending the run", EXIT_TARGET_DOWN)
            return
        silent = self.target_watch.silent_s()
        if silent >= TARGET_DOWN_SECONDS and not record.silence_said:
            record.silence_said = True
            log.error("target down: %s has not answered for %.0f s (connections refused or timed out); the users "
                      "back off until it answers", self.environment.host, silent)
        elif silent == 0 and record.silence_said:
            record.silence_said = False
            log.warning("the target %s answers again", self.environment.host)

    def _read_modules(self, record: TestRecord) -> None:
        """The target's platform, module versions and FOLIO release: from Okapi or Eureka (best effort)."""
        try:
            record.target = target_info(self.tool_okapi(), self.settings.tenant)
        except Exception as exc:  # no rights to read them, or neither platform's list: versions unknown
            log.debug("module versions not read: %s", exc)

    def _served(self) -> dict[str, int] | None:
        """The sandbox's own count of the requests it answered, per API (best effort)."""
        try:
            counters = requests.get(f"{self.environment.host}/_/sandbox/counters", timeout=10).json()
            return {name: c["total"] for name, c in counters["requests"].items()}
        except Exception as exc:  # the figures are a cross-check; the run does not depend on them
            log.debug("sandbox counters not read: %s", exc)
            return None

    def _start_dbmon(self) -> DbMonitor | None:
        assert self.db_dsn is not None
        monitor = DbMonitor(self.db_dsn, create_extension=bool(self.settings.sandbox_pid))
        try:
            monitor.start()
        except FolioperfError as exc:
            log.warning("no database insight for this run: %s", exc)
            return None
        return monitor

    def _start_servers(self, record: TestRecord) -> Collector | None:
        """The servers' metrics, collected here (the master or the one local process) during the test."""
        s = self.settings
        try:
            source = make_source(s.server_metrics, queries=s.server_metrics_queries, dsn=self.db_dsn,
                                 sandbox_pid=s.sandbox_pid)
        except FolioperfError as exc:
            log.warning("no server metrics for this run: %s", exc)
            return None
        if source is None:
            return None
        collector = Collector(source, s.server_metrics_step)
        collector.start(record.start)
        return collector

    def _start_live(self, record: TestRecord) -> None:
        names = ", ".join(w.name for w in self.workflows) or "locust"
        logging.getLogger("locust.stats_logger").disabled = True  # folioperf's view and summary replace it
        self.live = LiveView(self.environment, lambda: self.metrics.snapshot(windows=False),
                             f"{names} against {self.environment.host}", record.users_target, record.duration_s)
        self.live.start()

    def _checkpoints(self, record: TestRecord) -> None:
        """Every CHECKPOINT_SECONDS, the results so far in `<results>/<start>-<workflow>-partial/`, so a
        master killed outright leaves what it had measured (replaced by the real directory at the end)."""
        directory = self.settings.results_dir
        assert directory is not None  # spawned only for a run that writes results
        while True:
            gevent.sleep(CHECKPOINT_SECONDS)
            if record.ended or self.test is not record:
                return
            try:
                info = self._run_info(record, Flags(), None, {}, datetime.now(timezone.utc))
                results.write_checkpoint(directory, info, self.metrics.snapshot(),
                                         secrets=self._secrets(), spool=record.spool)
            except Exception as exc:  # a checkpoint is a safety net; the run goes on without it
                log.warning("checkpoint not written: %s", exc)

    # -- the end of a test, handled once -------------------------------------------------------------
    def _end_test(self) -> None:
        record = self.test
        if record is None or record.ended:
            return
        record.ended = True
        environment = self.environment
        code = EXIT_NOT_RECORDED
        path: Path | None = None
        snapshot = None
        try:
            if self.live is not None:
                self.live.stop()
                self.live = None
            db = self._stop_dbmon(record)
            server = self._stop_servers(record)
            if self.metrics.stopped is None:
                self.metrics.stop()
            snapshot = self.metrics.snapshot()
            end = datetime.now(timezone.utc)
            runner = environment.runner
            rates = {g.key: RateStatus.of_snapshot(target, snapshot, g.label(""), record.users_per_group.get(g.key, 0))
                     for g in self.groups.values() if (target := g.target_per_s()) is not None}
            for key, status in rates.items():
                if status.missed:
                    log.warning(status.message() + (f" ({key})" if len(self.groups) > 1 else ""))
            if self.settings.scenario:
                for group in self.groups.values():
                    prefix = group.label("")
                    if not any(e.name.startswith(prefix) and e.count for e in snapshot.transactions()):
                        log.warning("group %s finished no transaction in the test: no figures for it (its pace or "
                                    "rate may need a longer test)", group.key)
            if self.settings.trace and not snapshot.traced and snapshot.untraced and not record.untraced_said:
                log.warning("--trace: %s %s", environment.host, okapi_trace.NO_HEADERS)
            silent = self.target_watch.longest()
            flags = Flags(
                target_down=record.sandbox_gone or silent >= TARGET_DOWN_SECONDS,
                users_missing=record.users_missing() and not record.interrupted and not self.stopping,
                cpu_saturated=bool(runner.cpu_warning_emitted or getattr(runner, "worker_cpu_warning_emitted", False)),
                rate_missed=any(status.missed for status in rates.values()),
                worker_lost=bool(record.lost_workers),
                interrupted=record.interrupted,
                ramp_incomplete=record.ramp_incomplete(end) and not self.settings.allow_partial_ramp
                and not record.interrupted and not self.stopping,
            )
            code = exit_code(flags, snapshot, self.settings.fail_on_error_rate, environment.process_exit_code)
            if flags.target_down and not record.sandbox_gone:
                first = self.target_watch.first_silence()
                into = f", from {first - record.start.timestamp():.0f} s into the test" if first else ""
                log.error("target down: %s did not answer for %.0f s%s (connections refused or timed out): the "
                          "figures describe a target that was not there", environment.host, silent, into)
            if flags.users_missing:
                log.error("users missing: after full load, only %s of the %s users asked for were running, for "
                          "%.0f s of the test", record.fewest_users, record.users_target, record.users_missing_s)
            if flags.worker_lost:
                log.error("a worker was lost during the test: its share of the load and of the data is missing")
            if flags.cpu_saturated:
                log.error("a load generator process was above 90 % CPU: latencies may include its own queueing")
            if flags.ramp_incomplete:
                log.error(self._ramp_message(record, end))
            if self.settings.results_dir:
                served = _difference(self._served(), record.served_before) if record.served_before is not None else {}
                info = self._run_info(record, flags, code, rates, end,
                                      _by_api(served, [e.name for e in snapshot.apis()]), duration_s=record.ran_s(end))
                html = self._locust_html()
                path = results.write(self.settings.results_dir, info, snapshot, report_html=html, db=db,
                                     server=server, secrets=self._secrets(),
                                     timeseries=record.spool.written() if record.spool else None)
                if record.spool is not None:  # written whole: the partial directory has served
                    record.spool.close()
                    shutil.rmtree(record.spool.directory, ignore_errors=True)
                self.last_results = path
                log.info("results: %s", path)
            if self.settings.live:
                print_summary(snapshot, path, flags, code, record.peak_users, record.users_target)
        except Exception as exc:
            code = EXIT_NOT_RECORDED
            log.error("the results of the test could not be written: %s: %s", type(exc).__name__, exc)
        finally:
            environment.process_exit_code = code
            record.written.set()
        self.test_complete.fire(record=record, snapshot=snapshot, path=path, exit_code=code)
        options = environment.parsed_options
        if options is not None and options.headless:
            gevent.spawn(environment.runner.quit)  # a headless test that stopped on its own (all workers lost) ends

    def _ramp_message(self, record: TestRecord, end: datetime) -> str:
        ran = format_duration(round((end - record.start).total_seconds(), 1))
        if record.full_load_at is None:
            what = (f"{record.peak_users} of {record.users_target} users were running at most in the test's {ran}, "
                    "and every user must run for at least half of it")
        else:
            ramp = format_duration(round((record.full_load_at - record.start).total_seconds(), 1))
            what = (f"the last of {record.users_target} users started {ramp} into the test's {ran}, but every user "
                    f"must run for at least half of it (starting {format_duration(RAMP_LATE_S)} late is allowed)")
        return f"ramp-up incomplete: {what}; give a longer duration or a faster ramp-up, or --allow-partial-ramp"

    def _stop_dbmon(self, record: TestRecord) -> dict | None:
        if record.dbmon is None:
            return None
        try:
            return record.dbmon.stop()
        except Exception as exc:
            log.warning("database insight lost: %s", exc)
            return None

    def _stop_servers(self, record: TestRecord) -> ServerMetrics | None:
        if record.servers is None:
            return None
        try:
            return record.servers.stop(datetime.now(timezone.utc))
        except Exception as exc:
            log.warning("server metrics lost: %s", exc)
            return None

    def _secrets(self) -> list[str]:
        return [s for s in (self.password, self.db_dsn) if s]

    def _locust_html(self) -> str | None:
        from locust.html import get_html_report  # noqa: PLC0415  (Flask and templates: only when writing)

        try:
            return get_html_report(self.environment, show_download_link=False)
        except Exception as exc:  # the report is a convenience; the record is what matters
            log.warning("Locust's HTML report was not made: %s", exc)
            return None

    def _run_info(self, record: TestRecord, flags: Flags, code: int | None, rates: dict[str, RateStatus],
                  end: datetime, served: dict[str, int] | None = None,
                  duration_s: float | None = None) -> results.RunInfo:
        """`duration_s`: how long the load ran (default: as asked, for a checkpoint of a test under way)."""
        environment = self.environment
        settings = self.settings
        chosen: dict[str, Any] = {"auth": settings.auth, "login": settings.login, "think_time": settings.think_time,
                                  "plan": settings.plan}
        for name, value in (("think_offset", settings.think_offset), ("pace", settings.pace),
                            ("no_preflight", settings.no_preflight), ("trace", settings.trace)):
            if value:
                chosen[name] = value
        scenario = None
        if settings.scenario:
            scenario = {"name": self.scenario_name, "groups": [
                {"name": g.key, "workflow": g.workflow.name, "users": record.users_per_group.get(g.key, 0),
                 "pace": g.pace, "rate": g.target_per_s(), "think_time": g.think_time, "options": vars(g.options),
                 **({"rate_achieved": rates[g.key].achieved_per_s} if g.key in rates else {})}
                for g in self.groups.values()]}
        else:
            for g in self.groups.values():
                chosen.update(vars(g.options))
        single = next(iter(rates.values())) if len(rates) == 1 and not settings.scenario else None
        return results.RunInfo(
            workflow=self.workflow_name, users=record.peak_users, users_target=record.users_target,
            users_per_worker=dict(record.users_per_worker), full_load_at=record.full_load_at,
            target=results.Target(url=environment.host or "", tenant=settings.tenant,
                                  sandbox=bool(settings.sandbox_pid),
                                  modules=record.target.modules if record.target else (),
                                  platform=record.target.platform if record.target else None,
                                  release=record.target.release if record.target else None,
                                  served=served or {}),
            start=record.start, end=end, description="; ".join(w.description for w in self.workflows),
            options=chosen, tag=settings.tag,
            ramp_up_s=((record.users_target - 1) / record.spawn_rate) if record.spawn_rate else None,
            spawn_rate=record.spawn_rate, duration_s=duration_s if duration_s is not None else record.duration_s,
            rate=single.target_per_s if single else None, scenario=scenario,
            workers=len(record.seen_workers) if self.role == MASTER else 0,
            peak_cpu_percent=round(record.peak_cpu, 1), flags=flags, exit_code=code,
            users_missing_s=record.users_missing_s, target_silent_s=round(self.target_watch.longest(), 1),
        )


def _alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie, dead but not yet reaped by its parent, does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _by_api(served: dict[str, int], names: list[str]) -> dict[str, int]:
    """The sandbox names what it served by its route templates (`/automated-patron-blocks/{userId}`), a
    workflow by its own (`/automated-patron-blocks/{id}`, `/note-links/domain/users/...`): count each route
    under the API name it matches segment by segment, a `{...}` on either side matching any one segment."""
    def parts(name: str) -> list[str]:
        return name.split("?", 1)[0].replace(" ", "/", 1).split("/")

    def same(a: list[str], b: list[str]) -> bool:
        return len(a) == len(b) and all(x == y or x.startswith("{") or y.startswith("{") for x, y in zip(a, b))

    aligned: dict[str, int] = {}
    for route, count in served.items():
        name = next((n for n in names if same(parts(n), parts(route))), route)
        aligned[name] = aligned.get(name, 0) + count
    return aligned


def _difference(after: dict[str, int] | None, before: dict[str, int] | None) -> dict[str, int]:
    """What the sandbox served during the test, per API: its counters at the end minus at the start."""
    if after is None or before is None:
        return {}
    return {name: n - before.get(name, 0) for name, n in after.items()
            if n - before.get(name, 0) and " /_/" not in name}  # Okapi's own /_/ paths are no part of the load
