"""`folioperf run`: from nothing to a results directory.

1. the target: the built-in sandbox on a free port (default) or the FOLIO given by --okapi-url;
2. the data: the workflow's dataset seeded (or, when already there, reset to its seeded state) and the
   data pools built from the database — or, for a FOLIO without database access, through its API;
3. Locust: one process, or a master and --workers K on this machine, or a master for `folioperf worker`s
   elsewhere; composed as `locust -f folioperf/locustfile.py ...` command lines, so everything a run adds
   (auth, pools, metrics, the results directory, exit codes) is the same plugin plain `locust -f` loads;
4. the end: the master writes the results directory and prints the summary; the sandbox is stopped.

Ctrl-C is passed to the master alone (the children run in their own sessions): it stops the test, writes
the results flagged `interrupted` and tells the workers to quit. A second Ctrl-C kills everything.
"""

from __future__ import annotations

import argparse
import os
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
from typing import Any

from rich.console import Console

from folioperf import db
from folioperf.config import DEFAULT_ADMIN_USER, DEFAULT_TENANT, PASSWORD_ENV
from folioperf.errors import FolioperfError

err = Console(stderr=True, highlight=False, soft_wrap=True)
WORKER_EXIT_TIMEOUT = 30.0  # after the master has ended
MASTER_EXIT_TIMEOUT = 120.0  # after Ctrl-C: stop, final reports, results directory


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


def _workflow(spec: str) -> Any:
    """The workflow's metadata, read without gevent-patching this process (it seeds with threads and
    child processes; only the Locust processes it starts are patched)."""
    os.environ["LOCUST_SKIP_MONKEY_PATCH"] = "1"
    from folioperf.workflow import find_workflow

    return find_workflow(spec)


def _extra_options(workflow: Any, extra: list[str]) -> list[str]:
    """The workflow's own options (e.g. holds' --variant), checked here so a typo is one clear line."""
    known = {option.flag for option in workflow.options}
    for arg in extra:
        if arg.startswith("-") and arg.split("=", 1)[0] not in known:
            hint = f"its options: {', '.join(sorted(known))}" if known else "it has no options of its own"
            raise FolioperfError(f"unknown option {arg.split('=', 1)[0]} for workflow {workflow.name} ({hint})")
    return extra


def _spawn_rate(args: argparse.Namespace, workflow: Any) -> float:
    if args.spawn_rate:
        return args.spawn_rate
    if args.ramp_up:
        return args.users / args.ramp_up
    return workflow.spawn_rate or float(args.users)


def _dataset(args: argparse.Namespace, workflow: Any) -> Any:
    from folioperf.seed import dataset as dataset_mod

    name = args.dataset or workflow.dataset
    return dataset_mod.load(name) if name else None


def _prepare_data(dsn: str, tenant: str, ds: Any, scale: float, replace_mismatch: bool) -> None:
    """Seed the dataset, or reset it when it is there already (a former run changed loans and requests)."""
    from folioperf.seed.reset import reset
    from folioperf.seed.seeding import SeededDifferently, seed

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


def _pools_file(target: Endpoint, ds: Any, workflow: Any, directory: str) -> str | None:
    """The workflow's data pools, from the database when it is known, else through the API."""
    from folioperf.seed import datapools
    from folioperf.seed.dataset import WORKFLOW_DATASETS
    from folioperf.seed.cli import DEFAULT_POOL_LIMIT

    if ds is None or workflow.name not in WORKFLOW_DATASETS or not workflow.pools:
        return None  # the workflow brings its own (load_pools) or needs none
    if target.dsn:
        pools = datapools.from_database(target.dsn, target.tenant, ds, workflow.name, DEFAULT_POOL_LIMIT)
        source = datapools.DatabaseSource.name
    else:
        from folioperf.seed.okapi_reader import OkapiReader

        reader = OkapiReader(target.url, target.tenant, target.username, target.password)
        pools = datapools.build(datapools.ApiSource(reader), ds, workflow.name, DEFAULT_POOL_LIMIT)
        source = datapools.ApiSource.name
    datapools.check(pools, target.tenant, ds)
    path = os.path.join(directory, "pools.json")
    datapools.write(path, target.tenant, source, ds, pools)
    err.print("test data: " + ", ".join(f"{name} {len(entries):,}" for name, entries in pools.items()))
    return path


def _sandbox(args: argparse.Namespace, stack: ExitStack, directory: str) -> Endpoint:
    from folioperf.sandbox.process import start_sandbox

    if args.tenant not in (None, DEFAULT_TENANT) or args.username not in (None, DEFAULT_ADMIN_USER):
        raise FolioperfError("--tenant and --username are for --okapi-url: the sandbox's tenant is "
                             f"{DEFAULT_TENANT} and its admin {DEFAULT_ADMIN_USER}")
    dsn = db.resolve_dsn(args.db)
    options: dict[str, object] = {}
    if args.latency_profile:
        options["latency_profile"] = args.latency_profile
    err.print(f"starting the sandbox on {db.redact(dsn)} ...")
    log_path = os.path.join(directory, "sandbox.log")
    sandbox = start_sandbox(dsn, log_path=log_path, **options)
    stack.callback(sandbox.stop)
    err.print(f"sandbox ready at {sandbox.url} (tenant {sandbox.tenant})")
    return Endpoint(sandbox.url, sandbox.tenant, sandbox.username, sandbox.password, dsn, sandbox.process.pid)


def _folio(args: argparse.Namespace) -> Endpoint:
    from folioperf.okapi import Credentials

    if args.latency_profile:
        raise FolioperfError("--latency-profile is for the sandbox; your FOLIO answers at its own speed")
    if args.no_seed:
        raise FolioperfError("--no-seed is for the sandbox: against your FOLIO nothing is seeded unless you pass --seed")
    if args.seed and not args.db:
        raise FolioperfError("--seed needs --db DSN: the PostgreSQL database of your FOLIO")
    tenant, username = args.tenant or DEFAULT_TENANT, args.username or DEFAULT_ADMIN_USER
    password = Credentials.from_environment(tenant, username).password
    return Endpoint(args.okapi_url.rstrip("/"), tenant, username, password, args.db)


def _locust_args(args: argparse.Namespace, workflow_spec: str, target: Endpoint, spawn_rate: float,
                 pools: str | None, extra: list[str]) -> list[str]:
    cmd = [sys.executable, "-m", "locust", "-f", locustfile(), "--workflow", workflow_spec,
           "--host", target.url, "--tenant", target.tenant, "--username", target.username,
           "-u", str(args.users), "-r", f"{spawn_rate:g}", "-t", f"{args.duration}s", "--stop-timeout", f"{args.stop_timeout:g}",
           "--results-dir", os.path.abspath(args.results), "--fail-on-error-rate", repr(args.fail_on_error_rate),
           "--live", "--only-summary", "--loglevel", "INFO" if args.verbose else "WARNING"]
    for flag, value in (("--auth", args.auth), ("--login", args.login), ("--think-time", args.think_time),
                        ("--rate", args.rate), ("--pools", pools), ("--tag", args.tag), ("--db", target.dsn),
                        ("--sandbox-pid", target.sandbox_pid)):
        if value is not None:
            cmd += [flag, str(value)]
    cmd += ["--headless"] if not args.web else ["--web-host", "127.0.0.1", "--web-port", str(args.web_port)]
    return cmd + extra


def worker_command(master_host: str, master_port: int, *extra: str) -> list[str]:
    """A Locust worker of folioperf's locustfile; workflow, options, data and password come from the master."""
    return [sys.executable, "-m", "locust", "-f", locustfile(), "--worker", "--master-host", master_host,
            "--master-port", str(master_port), *extra]


def _child_env(password: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LOCUST_SKIP_MONKEY_PATCH", PASSWORD_ENV)}
    if password is not None:
        env[PASSWORD_ENV] = password  # the environment, never argv: argv shows in `ps` and logs
    return env


class Processes:
    """The Locust processes of a run; Ctrl-C goes to the master only."""

    def __init__(self) -> None:
        self.master: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        self.interrupts = 0

    def start_master(self, cmd: list[str], password: str) -> None:
        self.master = subprocess.Popen(cmd, env=_child_env(password), stdin=subprocess.DEVNULL, start_new_session=True)

    def start_worker(self, port: int) -> None:
        cmd = worker_command("127.0.0.1", port, "--loglevel", "WARNING")
        self.workers.append(subprocess.Popen(cmd, env=_child_env(), stdin=subprocess.DEVNULL, start_new_session=True))

    def interrupt(self, *_args: Any) -> None:
        self.interrupts += 1
        if self.interrupts == 1 and self.master is not None and self.master.poll() is None:
            err.print("stopping: the results are being written (Ctrl-C again to kill the run)")
            self.master.send_signal(signal.SIGINT)
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
        deadline = time.monotonic() + WORKER_EXIT_TIMEOUT
        for worker in self.workers:
            try:
                worker.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
        return 128 - code if code < 0 else code  # killed by signal N: the shell's 128 + N, not a wrapped negative

    def kill(self) -> None:
        for proc in [self.master, *self.workers]:
            if proc is not None and proc.poll() is None:
                proc.kill()


def _check_results_dir(path: str) -> None:
    """Before a long run, not after it: the results must have somewhere to go (created when written)."""
    target = Path(path).absolute()
    existing = next(p for p in (target, *target.parents) if p.exists())
    if not existing.is_dir():
        raise FolioperfError(f"cannot write results under {path}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise FolioperfError(f"cannot write results under {path}: {existing} is not writable")


def run(args: argparse.Namespace) -> int:
    if args.master and args.workers:
        raise FolioperfError("--workers K starts K workers here; --master waits for `folioperf worker`s elsewhere: choose one")
    if args.seed and args.no_seed:
        raise FolioperfError("--seed and --no-seed contradict each other")
    workflow = _workflow(args.workflow)
    extra = _extra_options(workflow, getattr(args, "extra", []))
    spawn_rate = _spawn_rate(args, workflow)
    ramp_up = args.users / spawn_rate
    if ramp_up >= args.duration and not args.web:
        err.print(f"[yellow]folioperf: warning: starting {args.users} users at {spawn_rate:g}/s takes {ramp_up:g} s, "
                  f"as long as the whole run ({args.duration} s): give a longer --duration or a shorter --ramp-up[/]")
    ds = _dataset(args, workflow)
    _check_results_dir(args.results)
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="folioperf-run-") as directory:
        if args.okapi_url:
            target = _folio(args)
            if args.seed and ds is not None:
                _prepare_data(args.db, target.tenant, ds, args.scale, replace_mismatch=False)
        else:
            target = _sandbox(args, stack, directory)
            if ds is not None and not args.no_seed:
                _prepare_data(target.dsn, target.tenant, ds, args.scale, replace_mismatch=True)
        pools = args.pools or _pools_file(target, ds, workflow, directory)
        cmd = _locust_args(args, args.workflow, target, spawn_rate, pools, extra)
        processes = Processes()
        stack.callback(processes.kill)
        if args.workers or args.master:
            port = free_port() if args.workers else args.master_port
            bind = "127.0.0.1" if args.workers else args.master_bind_host
            cmd += ["--master", "--expect-workers", str(args.workers or args.expect_workers),
                    "--master-bind-host", bind, "--master-bind-port", str(port)]
        previous = {sig: signal.signal(sig, processes.interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
        stack.callback(lambda: [signal.signal(sig, handler) for sig, handler in previous.items()])
        processes.start_master(cmd, target.password)
        if args.workers:
            for _ in range(args.workers):
                processes.start_worker(port)
        elif args.master:
            err.print(f"waiting for {args.expect_workers} worker(s): `folioperf worker --master-host <this host> "
                      f"--master-port {port}`")
        if args.web:
            err.print(f"web UI at http://127.0.0.1:{args.web_port} — Ctrl-C here ends folioperf")
        return processes.wait()


def worker(args: argparse.Namespace) -> int:
    """Replace this process with a Locust worker (signals then reach Locust directly)."""
    extra = ["--processes", str(args.processes)] if args.processes is not None else []
    cmd = worker_command(args.master_host, args.master_port, *extra)
    sys.stdout.flush()
    os.execve(sys.executable, cmd, _child_env())
    return 0  # not reached
