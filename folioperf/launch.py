"""`folioperf run` and `folioperf worker`: from a command line to Locust processes and a results directory.

1. everything the command line says is checked before anything starts: the workflow and its options, the
   rate, the users and how long they take to start, the pools file, where the results go, the target;
2. the target: the built-in sandbox on a free port (default) or the FOLIO given by --okapi-url;
3. the data: the workflow's dataset seeded (or, when already there, reset to its seeded state) and the
   data pools built from the database — or, for a FOLIO without database access, through its API;
4. Locust: one process, or a master and --workers K on this machine, or a master for `folioperf worker`s
   elsewhere; composed as `locust -f folioperf/locustfile.py ...` command lines, so everything a run adds
   (auth, pools, metrics, the results directory, exit codes) is the same plugin plain `locust -f` loads
   (run by folioperf.locust_main: Locust's own main, with the entry points read once);
5. the end: the master writes the results directory and prints the summary; the sandbox is stopped. A
   master that dies without doing so is reported, with the last checkpoint of its results, if any.

Ctrl-C (or SIGTERM) ends a run at any stage with exit code 130 and a line saying what happened. Before Locust
starts (the sandbox starting, seeding, a reset, the test data) the work under way is undone (seeding and a
reset roll back) and nothing runs. Once the master runs, the signal goes to it alone (the children run in their
own sessions, and end with `folioperf run` if it is killed), and the master says what it does: before its
test starts nothing ran and nothing is written; during the test it stops it, writes the results flagged
`interrupted` and tells the workers to quit; once the test has ended its results are finished first. A second
Ctrl-C kills everything at once (still 130). This process prints nothing while the master runs: the
master's live view has the terminal.
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Callable

from folioperf import db, scenario
from folioperf.children import popen_options
from folioperf.config import DEFAULT_ADMIN_USER, DEFAULT_TENANT, PASSWORD_ENV, WORKER_KEY_ENV
from folioperf.console import console
from folioperf.errors import FolioperfError
from folioperf.options import CLI_OPTIONS, LOCUST_FLAGS, RUN_OPTIONS, Settings, format_duration, run_argv, split_address
from folioperf.outcome import EXIT_INTERRUPTED, RAMP_LATE_S, ramp_fits
from folioperf.servers.sources import check as check_server_metrics
from folioperf.wording import did_you_mean, plural

try:
    import termios
except ImportError:  # Windows: no terminal modes to set
    termios = None  # type: ignore[assignment]

err = console(stderr=True)
WORKER_EXIT_TIMEOUT = 10.0  # after the master has ended: workers quit at once when told
LOCUST_DEFAULTS_ENV = ("LOCUST_SKIP_MONKEY_PATCH", PASSWORD_ENV)
LOCUST = (sys.executable, "-m", "folioperf.locust_main")  # `locust`, with the entry points read once
DEFAULT_DURATION_S = 60  # with no --duration, unless the ramp-up needs longer
MEASURING_S = 60  # ... then at least this long with every user running


def locustfile() -> str:
    spec = find_spec("folioperf.locustfile")
    assert spec is not None and spec.origin is not None
    return spec.origin


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Endpoint:
    """Where the load goes and how to log in there."""

    url: str
    tenant: str
    username: str
    password: str = field(repr=False)
    dsn: str | None  # the database behind it, when known
    sandbox_pid: int | None = None


@dataclass
class Unit:
    """What one group of users runs: its workflow and the dataset it needs; `group` is "" outside a scenario."""

    group: str
    workflow: Any
    dataset: Any


@dataclass
class Plan:
    """A `folioperf run` checked whole before anything starts."""

    spec: str
    units: list[Unit]
    extra: list[str]
    users: int
    spawn_rate: float
    duration: int  # seconds: --duration, or one folioperf chose (`duration_note` says why)
    scenario: Any = None
    duration_note: str | None = None

    def datasets(self) -> list[Any]:
        return list({u.dataset.name: u.dataset for u in self.units if u.dataset is not None}.values())

    def scenario_args(self, args: argparse.Namespace) -> list[str]:
        """What every Locust process (master and workers) needs to build a scenario's user classes."""
        if self.scenario is None:
            return []
        return ["--scenario", os.path.abspath(self.scenario.path), "--users-scale", repr(args.users_scale)]


def _workflow(spec: str) -> Any:
    """The workflow's metadata, read without gevent-patching this process (it seeds with threads and
    child processes; only the Locust processes it starts are patched)."""
    from folioperf.workflow import find_workflow  # noqa: PLC0415  (after LOCUST_SKIP_MONKEY_PATCH is set)

    return find_workflow(spec)


def _workflow_options(workflow: Any, extra: list[str]) -> list[str]:
    """The workflow's own options (e.g. holds' --variant), parsed by the workflow's types and choices now,
    so a typo or a bad value is one clear line before anything starts."""
    known = {option.flag: option for option in workflow.options}
    args = list(extra)
    checked: list[str] = []
    while args:
        arg = args.pop(0)
        flag, eq, value = arg.partition("=")
        option = known.get(flag)
        if option is None:
            raise FolioperfError(_unknown(flag, workflow, list(known)))
        if not eq:
            if not args or args[0].startswith("--"):
                raise FolioperfError(f"{flag} needs a value (workflow {workflow.name})")
            value = args.pop(0)
        option.value(value)  # raises FolioperfError with the option and the reason
        checked += [flag, value]
    return checked


def _check_together(args: argparse.Namespace, units: list[Unit], extra: list[str], chosen_scenario: Any) -> None:
    """The options that must agree with each other, checked now: the run's (e.g. --think-offset with --plan
    as-written) and each workflow's own (e.g. --ptf-plan master with Orchid's pages)."""
    Settings.from_options({opt.name: getattr(args, opt.name, None) for opt in RUN_OPTIONS})
    if chosen_scenario is not None:
        for unit, group in zip(units, chosen_scenario.groups):
            unit.workflow.option_values({k.replace("-", "_"): v for k, v in group.options.items()})
    else:
        given = {flag.lstrip("-").replace("-", "_"): value for flag, value in zip(extra[::2], extra[1::2])}
        units[0].workflow.option_values(given)


def _unknown(flag: str, workflow: Any, workflow_flags: list[str]) -> str:
    ours = [f for opt in (*RUN_OPTIONS, *CLI_OPTIONS) if not opt.hidden for f in opt.flags if f.startswith("--")]
    hint = did_you_mean(flag, ours + workflow_flags)
    own = f" (its options: {', '.join(sorted(workflow_flags))})" if workflow_flags else " (it has no options of its own)"
    return f"unknown option {flag} for workflow {workflow.name}{own}{hint}"


def _spawn_rate(args: argparse.Namespace, users: int, default: float | None) -> float:
    if args.spawn_rate and args.ramp_up:
        raise FolioperfError("--spawn-rate and --ramp-up both say how fast users start: give one")
    if args.spawn_rate:
        return args.spawn_rate
    if args.ramp_up:
        return (users - 1) / args.ramp_up if users > 1 else float(users)
    return default or float(users)


def _ramp_s(args: argparse.Namespace, users: int, spawn_rate: float) -> float:
    """How long starting the users takes: the first starts at once, the last after (N - 1) / rate seconds."""
    if users <= 1:
        return 0.0
    return float(args.ramp_up) if args.ramp_up else (users - 1) / spawn_rate


def _duration(args: argparse.Namespace, ramp_s: float) -> tuple[int, str | None]:
    """The test's duration, and a line saying why when folioperf chose it: with no --duration, long enough for
    the ramp-up and then MEASURING_S (at least) with every user running, in whole 10 s."""
    if args.duration is not None:
        return args.duration, None
    if args.web or args.allow_partial_ramp or ramp_s == 0:
        return DEFAULT_DURATION_S, None
    fitting = math.ceil((ramp_s + max(MEASURING_S, ramp_s + RAMP_LATE_S)) / 10) * 10
    if fitting <= DEFAULT_DURATION_S:
        return DEFAULT_DURATION_S, None
    return fitting, (f"no --duration given: {format_duration(fitting)}, so that after the ramp-up "
                     f"({format_duration(round(ramp_s, 1))}) every user runs for {format_duration(fitting - ramp_s)}, "
                     "more than half the test")


def _check_ramp(args: argparse.Namespace, users: int, spawn_rate: float, duration: int) -> None:
    """A test needs all its users running for at least half its duration, or its figures are not those of
    N users (outcome.ramp_fits, the rule the run's end applies too). A refusal suggests figures that pass."""
    ramp = _ramp_s(args, users, spawn_rate)
    if args.web or args.allow_partial_ramp or ramp_fits(ramp, duration):
        return
    longest = duration // 2  # whole seconds: fits, as --ramp-up takes whole seconds
    fix = [f"--duration {format_duration(math.ceil(2 * ramp))} or more"]
    if args.ramp_up:
        how = f"over {format_duration(args.ramp_up)}"
        if longest >= 1:
            fix.insert(0, f"--ramp-up {format_duration(longest)} or less")
    else:
        how = f"at {spawn_rate:g}/s takes {format_duration(round(ramp, 1))} (the first starts at once)"
        fix.insert(0, f"--spawn-rate {_round_up((users - 1) / (duration / 2)):g} or more"
                      + (f" (or --ramp-up {format_duration(longest)} or less)" if longest >= 1 else ""))
    raise FolioperfError(
        f"starting {plural(users, 'user')} {how}, but the test runs {format_duration(duration)}: every user must run "
        f"for at least half of it. Give {', '.join(fix)}, or --allow-partial-ramp")


def _round_up(value: float) -> float:
    """`value` rounded up to two significant digits (0.4667 → 0.47, 13.2 → 14): a readable figure that still passes."""
    scale = 10 ** (math.floor(math.log10(value)) - 1)
    return math.ceil(round(value / scale, 9)) * scale


def _check_results_dir(path: str) -> None:
    """Before a long run, not after it: the results must have somewhere to go (created when written)."""
    target = Path(path).absolute()
    existing = next(p for p in (target, *target.parents) if p.exists())
    if not existing.is_dir():
        raise FolioperfError(f"cannot write results under {path}: {existing} is not a directory")
    try:  # a real try, not os.access: root passes that for /proc or a read-only mount
        os.rmdir(tempfile.mkdtemp(prefix=".folioperf-check-", dir=existing))
    except OSError as exc:
        raise FolioperfError(f"cannot write results under {path}: {existing} is not writable "
                             f"({exc.strerror})") from None


def _check_prometheus(args: argparse.Namespace) -> None:
    """The metrics' address can be listened on now (the master listens on it once it starts)."""
    if not args.prometheus:
        return
    from folioperf.prometheus import listen  # noqa: PLC0415  (numpy and prometheus_client: for --prometheus only)

    _, port = split_address(args.prometheus)
    for used, flag in ((args.web and args.web_port, "--web-port"), (args.master and args.master_port, "--master-port")):
        if port == used:
            raise FolioperfError(f"--prometheus {args.prometheus}: port {port} is also the {flag}: give another")
    listen(args.prometheus).close()


def _check_web_port(args: argparse.Namespace) -> None:
    """--web: the UI's port is free now (Locust's web server takes it once the master starts): a taken one is
    one line here, not Locust's tracebacks after the sandbox and the seeding."""
    if not args.web:
        return
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Locust's server does: TIME_WAIT is no use
        try:
            sock.bind(("127.0.0.1", args.web_port))
        except OSError as exc:
            reason = {errno.EADDRINUSE: "it is already in use", errno.EACCES: "no permission to listen there"}.get(
                exc.errno or 0, exc.strerror or str(exc))
            raise FolioperfError(f"--web-port {args.web_port}: the web UI cannot listen on port {args.web_port}: "
                                 f"{reason}; give another --web-port") from None


def plan(args: argparse.Namespace) -> Plan:
    """Everything checked, nothing started (a bad command line is exit 2 within a second)."""
    spec = args.workflow_file or args.workflow
    if not spec:
        raise FolioperfError("which workflow? give its name (`folioperf workflows` lists them) or -f FILE")
    if args.workflow_file and args.workflow:
        raise FolioperfError(f"give the workflow once: {args.workflow} or -f {args.workflow_file}")
    chosen_scenario = None
    if scenario.is_scenario(spec):
        chosen_scenario = scenario.load(spec).scaled(args.users_scale)
        if args.users is not None:
            raise FolioperfError(f"a scenario says how many users each group has ({chosen_scenario.users} in all): "
                                 "use --users-scale F instead of --users")
        if args.pools or args.dataset or args.rate or args.pace:
            raise FolioperfError("--pools, --dataset, --rate and --pace are a scenario group's business: set them in "
                                 "the scenario file (its test data is built from each group's dataset)")
    elif args.users_scale != 1.0:
        raise FolioperfError("--users-scale is for scenarios (a .toml file); give --users N for one workflow")
    if args.master and args.workers:
        raise FolioperfError("--workers K starts K workers here; --master waits for `folioperf worker`s elsewhere: choose one")
    if args.workers is not None and args.workers != -1 and args.workers < 1:
        raise FolioperfError(f"--workers {args.workers}: give 1 or more (or -1 for one per core)")
    if args.seed and args.no_seed:
        raise FolioperfError("--seed and --no-seed contradict each other")
    if args.master and not os.environ.get(WORKER_KEY_ENV):
        raise FolioperfError(f"--master hands the workers the password and the test data only when they prove a shared "
                             f"key: set {WORKER_KEY_ENV} to the same secret here and on each `folioperf worker`")
    if args.okapi_url:
        if args.latency_profile:
            raise FolioperfError("--latency-profile is for the sandbox; your FOLIO answers at its own speed")
        if args.folio_release:
            raise FolioperfError("--folio-release is for the sandbox; your FOLIO is the release it is (run.json says which)")
        if args.no_seed:
            raise FolioperfError("--no-seed is for the sandbox: against your FOLIO nothing is seeded unless you pass --seed")
        if args.seed and not args.db:
            raise FolioperfError("--seed needs --db DSN: the PostgreSQL database of your FOLIO")
    elif args.tenant not in (None, DEFAULT_TENANT) or args.username not in (None, DEFAULT_ADMIN_USER):
        raise FolioperfError("--tenant and --username are for --okapi-url: the sandbox's tenant is "
                             f"{DEFAULT_TENANT} and its admin {DEFAULT_ADMIN_USER}")
    from folioperf.seed import dataset as dataset_mod  # noqa: PLC0415  (Faker and TOML: only for a run)

    users: int
    extra: list[str]
    default_rate: float | None
    if chosen_scenario is not None:
        if getattr(args, "extra", []):
            raise FolioperfError(f"{args.extra[0]}: a scenario's workflow options are in its file, group by group")
        units = [Unit(g.name, _workflow(g.workflow), None) for g in chosen_scenario.groups]
        users, extra, default_rate = chosen_scenario.users, [], None
    else:
        workflow = _workflow(spec)
        units = [Unit("", workflow, None)]
        users, extra, default_rate = args.users, _workflow_options(workflow, list(getattr(args, "extra", []))), workflow.spawn_rate
        if users is None:  # after the workflow and the other options: a misspelt --users is named there
            raise FolioperfError("how many virtual users? give --users N (-u N)")
    for unit in units:
        name = args.dataset or unit.workflow.dataset
        unit.dataset = dataset_mod.load(name) if name else None
    _check_together(args, units, extra, chosen_scenario)
    _check_test_data(args, units)
    spawn_rate = _spawn_rate(args, users, default_rate)
    duration, duration_note = _duration(args, _ramp_s(args, users, spawn_rate))
    _check_ramp(args, users, spawn_rate, duration)
    if args.pools:
        from folioperf.pools import read_pools_file  # noqa: PLC0415

        read_pools_file(args.pools)
    _check_results_dir(args.results_dir)
    _check_prometheus(args)
    _check_web_port(args)
    check_server_metrics(args.server_metrics, args.server_metrics_queries, sandbox=not args.okapi_url)
    return Plan(spec, units, extra, users, spawn_rate, duration, chosen_scenario, duration_note)


def _prepare_data(dsn: str, tenant: str, ds: Any, scale: float, replace_mismatch: bool) -> None:
    """Seed the dataset, or reset it when it is there already (a former run changed loans and requests)."""
    from folioperf.seed.reset import reset  # noqa: PLC0415
    from folioperf.seed.seeding import SeededDifferently, seed  # noqa: PLC0415

    try:
        outcome = seed(dsn, tenant, ds, scale, False, err)
    except SeededDifferently:
        if not replace_mismatch:
            raise
        err.print(f"dataset {ds.name} is seeded differently in tenant {tenant}: seeding it again at scale {scale:g}")
        outcome = seed(dsn, tenant, ds, scale, True, err)
    if outcome.nothing_to_add:
        err.print(f"dataset {ds.name} (scale {scale:g}) is seeded; resetting it to its seeded state")
        reset(dsn, tenant, ds, scale, err)
    else:
        rows = sum(s.rows for s in outcome.stats)
        err.print(f"seeded dataset {ds.name} (scale {scale:g}): {rows:,} rows in {outcome.seconds:.1f} s")


def _check_test_data(args: argparse.Namespace, units: list[Unit]) -> None:
    """Each workflow's pools can be drawn from where this run reads the test data, or come in --pools."""
    from folioperf.testdata import undrawable  # noqa: PLC0415

    if args.pools:
        return
    source = "api" if args.okapi_url and not args.db else "database"
    for unit in units:
        workflow = unit.workflow
        if workflow.pools and workflow.draw is None:
            raise FolioperfError(f"workflow {workflow.name} needs test data (pools {', '.join(workflow.pools)}) but does "
                                 "not say how to draw it (Workflow(draw=...)): give --pools FILE")
        missing = undrawable(workflow.draw, source)
        if missing:
            raise FolioperfError(f"pool {missing[0]} of workflow {workflow.name} is drawn with SQL only: give --db DSN "
                                 "(the database of your FOLIO) or --pools FILE")


def _renamer(group: str) -> Callable[[str], str]:
    """A pool's name as the group's (`<group>/<pool>`), or as it is for a lone workflow's users."""
    return lambda name: f"{group}/{name}" if group else name


def _pools_file(target: Endpoint, units: list[Unit], directory: str) -> str | None:
    """The groups' data pools, from the database when it is known, else through the API, as each workflow
    draws them. A scenario's groups get pools of their own (`<group>/<pool>`); groups running the same workflow
    split its pools."""
    from folioperf.seed import datapools  # noqa: PLC0415
    from folioperf.testdata import POOL_LIMIT  # noqa: PLC0415

    wanted = [datapools.Unit(_renamer(u.group), u.workflow, u.dataset) for u in units if u.workflow.pools]
    if not wanted:
        return None
    if target.dsn:
        with datapools.database(target.dsn, target.tenant) as source:
            pools = datapools.draw(source, wanted, POOL_LIMIT)
    else:
        pools = datapools.draw(datapools.api(target.url, target.tenant, target.username, target.password), wanted,
                               POOL_LIMIT)
    path = os.path.join(directory, "pools.json")
    datasets = {u.dataset.name if u.dataset else None for u in wanted}
    datapools.write(path, target.tenant, "database" if target.dsn else "api", datasets.pop() if len(datasets) == 1 else None,
                    pools)
    err.print("test data: " + ", ".join(f"{name} {len(entries):,}" for name, entries in pools.items()))
    return path


def _sandbox(args: argparse.Namespace, stack: ExitStack, directory: str) -> Endpoint:
    from folioperf.sandbox.process import start_sandbox  # noqa: PLC0415

    dsn = db.resolve_dsn(args.db)
    options: dict[str, Any] = {}
    if args.latency_profile:
        options["latency_profile"] = args.latency_profile
    if args.folio_release:
        options["folio_release"] = args.folio_release
    if args.trace or args.web:  # Okapi's trace_headers=true, which --trace reads (and the web form's "Trace" box)
        options["trace_headers"] = True
    err.print(f"starting the sandbox on {db.redact(dsn)} ...")
    sandbox = start_sandbox(dsn, log_path=os.path.join(directory, "sandbox.log"), **options)
    stack.callback(sandbox.stop)
    err.print(f"sandbox ready at {sandbox.url} (tenant {sandbox.tenant})")
    return Endpoint(sandbox.url, sandbox.tenant, sandbox.username, sandbox.password, dsn, sandbox.process.pid)


def _folio(args: argparse.Namespace) -> Endpoint:
    from folioperf.auth import Credentials  # noqa: PLC0415

    tenant, username = args.tenant or DEFAULT_TENANT, args.username or DEFAULT_ADMIN_USER
    password = Credentials.from_environment(tenant, username).password
    return Endpoint(args.okapi_url.rstrip("/"), tenant, username, password, args.db)


def _locust_args(args: argparse.Namespace, chosen: Plan, target: Endpoint, pools: str | None,
                 seeded: list[Any] | None = None) -> list[str]:
    values = dict(vars(args))
    values.update(tenant=target.tenant, username=target.username, pools=pools, db=target.dsn,
                  sandbox_pid=target.sandbox_pid, live=True, results_dir=os.path.abspath(args.results_dir))
    if args.web:  # each test of the web UI after the first starts from the seeded state, with pools of its own
        values.update(redraw_pools=not args.pools)
        if seeded:
            values.update(reset_datasets=",".join(os.path.abspath(ds.path) for ds in seeded), reset_scale=args.scale)
    cmd = [*LOCUST, "-f", locustfile(),
           *(chosen.scenario_args(args) or ["--workflow", chosen.spec]), "--host", target.url,
           "-u", str(chosen.users), "-r", f"{chosen.spawn_rate:g}", "-t", f"{chosen.duration}s",
           "--only-summary", "--loglevel", "INFO" if args.verbose else "WARNING", *run_argv(values)]
    for dest, flag in LOCUST_FLAGS.items():
        value = values.get(dest)
        if value is not None:
            cmd += [flag, repr(value) if isinstance(value, float) else str(value)]
    cmd += ["--headless"] if not args.web else ["--web-host", "127.0.0.1", "--web-port", str(args.web_port)]
    return cmd + chosen.extra


def worker_command(master_host: str, master_port: int, *extra: str) -> list[str]:
    """A Locust worker of folioperf's locustfile; workflow, options, data and password come from the master."""
    return [*LOCUST, "-f", locustfile(), "--worker", "--master-host", master_host,
            "--master-port", str(master_port), *extra]


def _child_env(password: str | None = None, key: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in LOCUST_DEFAULTS_ENV}
    if password is not None:
        env[PASSWORD_ENV] = password  # the environment, never argv: argv shows in `ps` and logs
    if key is not None:
        env[WORKER_KEY_ENV] = key
    return env


class Processes:
    """The Locust processes of a run, and what a signal does at each stage (see the module docstring)."""

    def __init__(self, key: str | None, worker_args: list[str]) -> None:
        self.key = key
        self.worker_args = worker_args  # a scenario's, which workers need at start to build its user classes
        self.master: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        self.interrupts = 0
        self.launching = False  # the master is being started: a signal is for it, once it exists
        self.ended = False  # the master has ended: a signal no longer changes anything

    def start_master(self, cmd: list[str], password: str) -> None:
        self.launching = True
        self.master = subprocess.Popen(cmd, env=_child_env(password, self.key), stdin=subprocess.DEVNULL,
                                       **popen_options())
        if self.interrupts:  # it came as the master started: the master ends before its test, and says so
            self.master.send_signal(signal.SIGTERM)

    def start_worker(self, port: int, log_dir: str) -> None:
        # its log lines to a file, said after the run: on the terminal they would land inside the master's live view
        log = os.path.join(log_dir, f"worker-{len(self.workers) + 1}.log")
        cmd = worker_command("127.0.0.1", port, "--loglevel", "WARNING", "--logfile", log, *self.worker_args)
        self.workers.append(subprocess.Popen(cmd, env=_child_env(key=self.key), stdin=subprocess.DEVNULL,
                                             **popen_options()))

    def interrupt(self, *_args: Any) -> None:
        """SIGINT and SIGTERM, for the whole of `folioperf run`."""
        self.interrupts += 1
        if self.master is None and self.launching:
            return  # start_master passes it on
        if self.master is None:
            raise KeyboardInterrupt  # setting up: unwind (seeding and resets roll back), nothing ran
        if self.ended:
            return  # the results are written; stopping the sandbox takes a moment
        if self.interrupts == 1 and self.master.poll() is None:
            # SIGTERM, not SIGINT: Locust shuts down on it in every state, and folioperf ends the test first,
            # flagged interrupted; the master says what it does, through its live view
            self.master.send_signal(signal.SIGTERM)
        else:
            self.kill()

    def wait(self) -> int:
        assert self.master is not None
        while True:
            try:
                code = self.master.wait()
                break
            except KeyboardInterrupt:  # a signal arrived before the handler was in place
                self.interrupt()
        if code != 0:  # the workers may not have been told to quit: don't wait long for them
            for worker in self.workers:
                if worker.poll() is None:
                    worker.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + WORKER_EXIT_TIMEOUT
        for worker in self.workers:
            try:
                worker.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
        self.ended = True
        return 128 - code if code < 0 else code  # killed by signal N: the shell's 128 + N, not a wrapped negative

    def kill(self) -> None:
        for proc in [self.master, *self.workers]:
            if proc is not None and proc.poll() is None:
                proc.kill()


def _report_killed_master(code: int, results_dir: str, started: float) -> None:
    """The master died of a signal before it could write the results: say so, and where any checkpoint is."""
    name = signal.Signals(code - 128).name if 128 < code < 128 + 65 else f"code {code}"
    root = Path(results_dir)
    partial = sorted((p for p in root.glob("*-partial") if (p / "run.json").is_file() and p.stat().st_mtime >= started),
                     key=lambda p: p.stat().st_mtime) if root.is_dir() else []
    if partial:
        err.print(f"[red]folioperf: the Locust master was killed ({name}) before it wrote the results; the last "
                  f"checkpoint of its measurements is {partial[-1]}[/]")
    else:
        err.print(f"[red]folioperf: the Locust master was killed ({name}) before it wrote the results; it had "
                  "written no checkpoint yet (one is written every minute), so nothing of this test was kept[/]")


def _report_interrupted(code: int, processes: Processes, results_dir: str, started: float) -> int:
    """The master ended after a signal: what it left, in one line where it could not say it itself."""
    if processes.interrupts >= 2 or code == 128 + signal.SIGKILL:
        written = _written_since(results_dir, started)
        err.print("[red]folioperf: stopped at once (Ctrl-C twice): "
                  + (f"the results were written before, to {written[-1]}[/]" if written else "no results were written[/]"))
    elif code == 128 + signal.SIGTERM:  # killed by the signal before Locust could handle it: no test yet
        err.print("[red]folioperf: interrupted before the test started: nothing ran, no results were written[/]")
    else:
        return code  # the master said what happened (130, or the code of a test that had ended)
    return EXIT_INTERRUPTED


def _written_since(results_dir: str, started: float) -> list[Path]:
    root = Path(results_dir)
    return sorted((p for p in root.iterdir() if not p.name.startswith(".") and not p.name.endswith("-partial")
                   and (p / "run.json").is_file() and p.stat().st_mtime >= started),
                  key=lambda p: p.stat().st_mtime) if root.is_dir() else []


def run(args: argparse.Namespace) -> int:
    chosen = plan(args)
    if chosen.duration_note:
        err.print(chosen.duration_note)
    started = time.time()
    key = os.environ.get(WORKER_KEY_ENV) or secrets.token_urlsafe(32)
    processes = Processes(key, chosen.scenario_args(args))
    previous = {sig: signal.signal(sig, processes.interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return _run(args, chosen, processes, started)
    except KeyboardInterrupt:  # before Locust started; seeding and resets say so themselves (FolioperfError 130)
        raise FolioperfError("interrupted while setting up the run: nothing ran, no results were written",
                             EXIT_INTERRUPTED) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run(args: argparse.Namespace, chosen: Plan, processes: Processes, started: float) -> int:
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="folioperf-run-") as directory:
        if args.okapi_url:
            target = _folio(args)
            seeded = chosen.datasets() if args.seed else []
            for ds in seeded:
                _prepare_data(args.db, target.tenant, ds, args.scale, replace_mismatch=False)
        else:
            target = _sandbox(args, stack, directory)
            assert target.dsn is not None  # the sandbox's own database
            seeded = chosen.datasets() if not args.no_seed else []
            for ds in seeded:
                _prepare_data(target.dsn, target.tenant, ds, args.scale, replace_mismatch=True)
        pools = args.pools or _pools_file(target, chosen.units, directory)
        cmd = _locust_args(args, chosen, target, pools, seeded)
        stack.callback(processes.kill)
        workers = (os.cpu_count() or 1) if args.workers == -1 else args.workers
        if workers or args.master:
            port = free_port() if workers else args.master_port
            bind = "127.0.0.1" if workers else args.master_bind_host
            cmd += ["--master", "--expect-workers", str(workers or args.expect_workers),
                    "--master-bind-host", bind, "--master-bind-port", str(port)]
        _quiet_keyboard(stack)
        processes.start_master(cmd, target.password)
        if workers:
            for _ in range(workers):
                processes.start_worker(port, directory)
        elif args.master:
            reach = "this machine only; --master-bind-host 0.0.0.0 for others" if bind == "127.0.0.1" else bind
            err.print(f"waiting for {plural(args.expect_workers, 'worker')} on port {port} ({reach}): "
                      f"`folioperf worker --master-host <this host> --master-port {port}` with {WORKER_KEY_ENV} set")
        if args.web:
            err.print(f"web UI at http://127.0.0.1:{args.web_port} — Ctrl-C here ends folioperf")
        code = processes.wait()
        _say_worker_logs(directory)
        if processes.interrupts:
            return _report_interrupted(code, processes, args.results_dir, started)
        if code > 128:
            _report_killed_master(code, args.results_dir, started)
        return code


def _say_worker_logs(directory: str) -> None:
    """What the workers on this machine logged, once the master's view has given the terminal back."""
    for log in sorted(Path(directory).glob("worker-*.log")):
        lines = log.read_text(errors="replace").splitlines()
        if lines:
            err.print(f"folioperf: {log.stem} logged:", highlight=False, soft_wrap=True)
            for line in lines:
                err.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)


def _quiet_keyboard(stack: ExitStack) -> None:
    """While the master's live view has the terminal, what is typed there is not echoed into it (until the run
    ends): Ctrl-C's `^C` or a stray key shifts the lines under the view, which then prints its header again."""
    if termios is None or not sys.stdin.isatty():
        return
    fd = sys.stdin.fileno()
    try:
        before = termios.tcgetattr(fd)
        quiet = list(before)
        quiet[3] &= ~(termios.ECHO | termios.ECHOCTL)  # the local modes
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    except termios.error:
        return  # not a terminal we may change: the view is merely less tidy
    stack.callback(termios.tcsetattr, fd, termios.TCSANOW, before)


def worker(args: argparse.Namespace) -> int:
    """Replace this process with a Locust worker (signals then reach Locust directly)."""
    if not os.environ.get(WORKER_KEY_ENV):
        raise FolioperfError(f"set {WORKER_KEY_ENV} to the master's worker key: the master hands the password and "
                             "the test data only to workers that prove it")
    extra = ["--processes", str(args.processes)] if args.processes is not None else []
    if args.scenario:
        extra += ["--scenario", os.path.abspath(scenario.locate(args.scenario)), "--users-scale", repr(args.users_scale)]
    cmd = worker_command(args.master_host, args.master_port, *extra)
    sys.stdout.flush()
    os.execve(sys.executable, cmd, _child_env())
    return 0  # not reached
