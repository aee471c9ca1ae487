"""Server metrics of the built-in sandbox, sampled live: its process tree's CPU and memory (the sandbox plays
every FOLIO module: one subject, `sandbox`), its PostgreSQL server's CPU (the postmaster and all its processes,
when the server runs on this machine) and the client connections to its database.

CPU is CPU time over wall time, in % of one core: each process's user and system seconds plus those of its
children it has reaped, so processes that start and end between two samples (a backend, a forked server)
still count.
"""

from __future__ import annotations

import ipaddress
import os
import time
from collections.abc import Iterable
from typing import Any

import psutil

from folioperf.errors import FolioperfError
from folioperf.servers.collector import Point, SourceError

SANDBOX, POSTGRESQL = "sandbox", "postgresql"
DEFAULT_STEP_S = 5.0
MIN_INTERVAL_S = 0.5  # a CPU share over less time is mostly noise


class ProcessTree:
    """A process and its descendants: CPU seconds so far (reaped children included) and resident memory."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self._known: dict[int, psutil.Process] = {}

    def _members(self) -> list[psutil.Process]:
        pids = _descendants(self.root.pid)
        if pids is None:
            tree = [self.root, *self.root.children(recursive=True)]
        else:
            tree = [self.root]
            for pid in pids:
                try:
                    tree.append(self._known.get(pid) or psutil.Process(pid))
                except psutil.Error:
                    continue
        # the same Process objects from sample to sample: psutil then tells a reused pid from its process
        self._known = {p.pid: self._known.get(p.pid, p) for p in tree}
        return list(self._known.values())

    def sample(self) -> tuple[float, float]:
        """(CPU seconds, resident MB) of the tree now; psutil.Error when its root has ended."""
        if not self.root.is_running():
            raise psutil.NoSuchProcess(self.root.pid)
        cpu = rss = 0.0
        for proc in self._members():
            try:
                with proc.oneshot():
                    t = proc.cpu_times()
                    cpu += t.user + t.system + t.children_user + t.children_system
                    rss += proc.memory_info().rss
            except psutil.Error:
                continue  # ended meanwhile: its time is its parent's reaped children's now
        return cpu, rss / 1_048_576


class SandboxSource:
    name = SANDBOX
    units = {"module_cpu": "% of one core", "module_memory_mb": "MB", "db_cpu": "% of one core",
             "db_connections": "connections"}
    default_step_s = DEFAULT_STEP_S
    settle_s = 0.0

    def __init__(self, pid: int, dsn: str | None) -> None:
        self.pid = pid
        self.dsn = dsn
        self._sandbox: ProcessTree | None = None
        self._postgres: ProcessTree | None = None
        self._conn: Any = None
        self._last: dict[str, tuple[float, float]] = {}  # tree -> (wall time, CPU seconds) of the last sample

    def check(self, at: float) -> list[str]:
        problems = []
        try:
            self._sandbox = ProcessTree(self.pid)
        except psutil.Error:
            problems.append(f"the sandbox's process {self.pid} is not running: its CPU and memory are not measured")
        if self.dsn:
            try:
                self._connect()
                self._postgres = self._postmaster()
            except SourceError as exc:
                problems.append(str(exc))
        self._prime()
        return problems

    def _connect(self) -> None:
        from folioperf.db import connect  # noqa: PLC0415  (psycopg after gevent's patching, as dbmon)

        assert self.dsn is not None  # connected only when the sandbox has a database
        try:
            self._conn = connect(self.dsn, autocommit=True, application_name="folioperf-server-metrics")
        except FolioperfError as exc:
            raise SourceError(f"the sandbox's database: {exc}") from None

    def _postmaster(self) -> ProcessTree | None:
        info = self._conn.info
        host = info.host or ""
        if not (host.startswith("/") or _loopback(host)):
            raise SourceError(f"the sandbox's PostgreSQL runs on {host}, not this machine: its CPU is not measured")
        try:
            backend = psutil.Process(info.backend_pid)
            postmaster = psutil.Process(backend.ppid())
            if "postgres" not in postmaster.name() and "postmaster" not in postmaster.name():
                raise psutil.NoSuchProcess(postmaster.pid)
            return ProcessTree(postmaster.pid)
        except psutil.Error:
            raise SourceError("the sandbox's PostgreSQL server process is not visible here: its CPU is not "
                              "measured") from None

    def _prime(self) -> None:
        now = time.monotonic()
        for name, tree in ((SANDBOX, self._sandbox), (POSTGRESQL, self._postgres)):
            if tree is not None:
                try:
                    self._last[name] = (now, tree.sample()[0])
                except psutil.Error:
                    pass

    def fetch(self, start: float, end: float, step: float) -> Iterable[Point]:
        at, now = time.time(), time.monotonic()
        points: list[Point] = []
        for name, tree, metric in ((SANDBOX, self._sandbox, "module_cpu"), (POSTGRESQL, self._postgres, "db_cpu")):
            if tree is None:
                continue
            try:
                cpu, rss = tree.sample()
            except psutil.Error:
                raise SourceError(f"the {name} process {tree.root.pid} ended during the run") from None
            before = self._last.get(name)
            if before is not None and now - before[0] >= MIN_INTERVAL_S:
                points.append((metric, name, at, round(100 * (cpu - before[1]) / (now - before[0]), 1)))
            if before is None or now - before[0] >= MIN_INTERVAL_S:
                self._last[name] = (now, cpu)
            if name == SANDBOX:
                points.append(("module_memory_mb", SANDBOX, at, round(rss, 1)))
        if self._conn is not None:
            points.append(("db_connections", POSTGRESQL, at, float(self._connections())))
        return points

    def _connections(self) -> int:
        import psycopg  # noqa: PLC0415

        try:
            return self._conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND backend_type = 'client backend' AND pid <> pg_backend_pid()").fetchone()[0]
        except psycopg.Error as exc:
            if self._conn.broken or self._conn.closed:
                self._connect()
            raise SourceError(f"the sandbox's database connections: {str(exc).strip().splitlines()[0]}") from None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


def _descendants(pid: int) -> list[int] | None:
    """The processes below `pid`, from Linux's /proc/PID/task/TID/children: a few small reads, where psutil reads
    every process of the machine (about 10 ms with 300 of them, at every sample); None where there are no such
    files (another system, a kernel without them, or a process that has ended: psutil then says which)."""
    if not os.path.exists(f"/proc/{pid}/task/{pid}/children"):
        return None
    found: list[int] = []
    queue = [pid]
    while queue:
        current = queue.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue  # ended meanwhile
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as f:
                    children = [int(c) for c in f.read().split()]
            except OSError:
                continue  # the thread or the process ended meanwhile
            found += children
            queue += children
    return found


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
