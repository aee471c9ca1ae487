"""pytest fixtures for testing against the folioperf sandbox (registered through the `pytest11` entry point).

    def test_users(folio_sandbox):
        token = folio_sandbox.login()
        r = requests.get(folio_sandbox.url + "/users", headers=folio_sandbox.headers(token))

`folio_sandbox` is one sandbox per test session, on a free port and its own database (dropped at the
end). `folio_sandbox_factory(**options)` starts more sandboxes on that database with other server
options, e.g. `token_ttl=2`, or as another platform and release: `eureka=True, folio_release="ramsons"`.
`folio_postgres` is the server holding the test databases: a PostgreSQL cluster folioperf starts for the
test run (as it configures its own: pg_stat_statements preloaded, many connections; fsync and autovacuum off,
since it is thrown away when the run ends), shared by pytest-xdist's workers; or the server of
FOLIOPERF_TEST_DB, a DSN, when set. The machine's own PostgreSQL is never changed. `drop_test_database(dsn)`
ends a test's database.
"""

from __future__ import annotations

import os
import secrets
import tempfile
import uuid
from pathlib import Path
from typing import Iterator

import psutil
import pytest

from folioperf import pgcluster
from folioperf.sandbox.process import SandboxInstance, start_sandbox

__all__ = ["SandboxInstance", "drop_test_database", "start_sandbox"]

TEST_DB_ENV = "FOLIOPERF_TEST_DB"
CLUSTER_PREFIX = "folioperf-pytest-"  # + the pid of the pytest process that owns it
TEST_CONNECTIONS = 500  # every xdist worker's sandboxes, Locust runs and scratch databases at once
_WORKER_KEY = "folioperf_pg_dir"
_cluster_dir = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    """The test run's cluster directory: named here (created only when a test needs it), handed to xdist's
    workers, so that they all share one server."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and _WORKER_KEY in workerinput:
        config.stash[_cluster_dir] = Path(workerinput[_WORKER_KEY])
    else:
        name = f"{CLUSTER_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"  # _run_owner reads the pid back
        config.stash[_cluster_dir] = Path(tempfile.gettempdir()) / name


def pytest_report_header(config: pytest.Config) -> str:
    if os.environ.get(TEST_DB_ENV):
        from folioperf.db import redact

        return f"folioperf: test databases on the server of {TEST_DB_ENV} ({redact(os.environ[TEST_DB_ENV])})"
    return (f"folioperf: test databases on a PostgreSQL cluster of this run's own, started when a test needs it "
            f"({config.stash[_cluster_dir]}, removed at the end)")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:  # pytest-xdist's controller, for each worker
    node.workerinput[_WORKER_KEY] = str(node.config.stash[_cluster_dir])


def pytest_unconfigure(config: pytest.Config) -> None:
    """The process that named the cluster (xdist's controller, after its workers) stops it and has its files
    removed without waiting for them (a run leaves tens of thousands); a run killed before that leaves it to
    the next run (`_discard_abandoned`)."""
    if not hasattr(config, "workerinput") and _cluster_dir in config.stash and config.stash[_cluster_dir].exists():
        pgcluster.discard(config.stash[_cluster_dir], background=True)


def drop_test_database(dsn: str) -> None:
    """The end of a test database: dropped on a named server; on a test run's own cluster it is left to go with
    the cluster's files when the run ends (a DROP DATABASE there costs seconds of the run: it checkpoints the
    whole server and unlinks every file of a seeded database one by one)."""
    from psycopg.conninfo import conninfo_to_dict

    from folioperf.db import drop_database

    socket_directory = Path(str(conninfo_to_dict(dsn).get("host") or "/"))
    if _run_owner(socket_directory.parent) is None:
        drop_database(dsn)


def _run_owner(path: Path) -> int | None:
    """The pid of the pytest process whose cluster directory `path` is (pytest_configure names them), or None
    when `path` is no test run's cluster."""
    pid = path.name.removeprefix(CLUSTER_PREFIX).split("-", 1)[0]
    is_run_cluster = path.parent == Path(tempfile.gettempdir()) and path.name.startswith(CLUSTER_PREFIX)
    return int(pid) if is_run_cluster and pid.isdigit() else None


def _discard_abandoned(directory: Path) -> None:
    """This user's clusters of test runs killed before they could remove theirs (their pytest is gone)."""
    for path in directory.parent.glob(f"{CLUSTER_PREFIX}*"):
        owner = _run_owner(path)
        if path != directory and owner is not None and not psutil.pid_exists(owner) \
                and path.stat().st_uid == os.geteuid():
            pgcluster.discard(path)


@pytest.fixture(scope="session")
def folio_postgres(request: pytest.FixtureRequest) -> str:
    """The DSN (database `postgres`) of the server that holds this session's test databases."""
    named = os.environ.get(TEST_DB_ENV)
    if named:
        return named
    directory = request.config.stash[_cluster_dir]
    binaries, reasons = pgcluster.find_binaries()
    if binaries is None:
        why = f" ({'; '.join(reasons)})" if reasons else ""
        pytest.fail(f"no PostgreSQL server binaries for the tests' cluster{why}: {pgcluster.INSTALL_HINT} "
                    f"(or set {TEST_DB_ENV})", pytrace=False)
    _discard_abandoned(directory)
    cluster = pgcluster.Cluster(directory, binaries, durable=False, connections=TEST_CONNECTIONS)
    cluster.start()
    return cluster.dsn()


@pytest.fixture(scope="session")
def folio_sandbox_dsn(folio_postgres: str) -> Iterator[str]:
    """A fresh database for this test session, ended with `drop_test_database`."""
    from folioperf.db import ensure_database, with_database

    dsn = with_database(folio_postgres, f"folioperf_test_{uuid.uuid4().hex[:10]}")
    ensure_database(dsn)
    yield dsn
    drop_test_database(dsn)


@pytest.fixture(scope="session")
def folio_sandbox_factory(folio_sandbox_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    started: list[SandboxInstance] = []
    logs = tmp_path_factory.mktemp("sandbox-logs")

    def factory(**options: object) -> SandboxInstance:
        log_path = str(logs / f"sandbox-{len(started)}.log")
        instance = start_sandbox(folio_sandbox_dsn, log_path=log_path, **options)  # type: ignore[arg-type]
        started.append(instance)
        return instance

    yield factory
    for instance in started:
        instance.stop()


@pytest.fixture(scope="session")
def folio_sandbox(folio_sandbox_factory) -> SandboxInstance:
    """A running sandbox: `.url`, `.tenant`, `.username`, `.password`, `.dsn`, `.login()`, `.headers()`."""
    return folio_sandbox_factory()
