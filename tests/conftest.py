"""Shared fixtures: the sandbox and PostgreSQL fixtures come from folioperf's pytest plugin (folio_sandbox,
folio_postgres, ...); here, the programs pip cannot install, and the databases of `folioperf run`."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
import requests

from folioperf.pytest_plugin import drop_test_database
from folioperf.seed.vocabulary import CACHE_DIR_ENV

# The programs pip cannot install, each with the Debian package that has it. A test that needs one takes the
# fixture of that name, dashes as underscores (its path). Before the tests run, the missing ones are installed
# with apt-get when running as root, or the run stops and says what to install: never a silent skip.
SYSTEM_PROGRAMS = {"chromium": "chromium", "prometheus": "prometheus", "promtool": "prometheus",
                   "prometheus-node-exporter": "prometheus-node-exporter",
                   "prometheus-postgres-exporter": "prometheus-postgres-exporter"}


def _fixture_name(program: str) -> str:
    return program.replace("-", "_")


def _missing(items: list[pytest.Item]) -> list[str]:
    needed = {name for item in items for name in SYSTEM_PROGRAMS
              if _fixture_name(name) in getattr(item, "fixturenames", ())}
    return sorted(name for name in needed if shutil.which(name) is None)


def _say(config: pytest.Config, line: str) -> None:
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: its stderr, uncaptured, is the terminal
        with config.pluginmanager.get_plugin("capturemanager").global_and_fixture_disabled():
            print(line, file=sys.stderr, flush=True)
    else:
        config.pluginmanager.get_plugin("terminalreporter").write_line(line)


def _apt_get(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["apt-get", *args], env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
                          stdin=subprocess.DEVNULL, capture_output=True, text=True)


CACHE_DIR_PREFIX = "folioperf-tests-cache-"
BYTECODE_DIR_PREFIX = "folioperf-tests-bytecode-"
_BYTECODE_KEY = "folioperf_bytecode_dir"
_bytecode_dir = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    _own_cache(config)
    _shared_bytecode(config)


def _own_cache(config: pytest.Config) -> None:
    """folioperf's cache (the Faker words seeding draws: folioperf.seed.vocabulary) in a directory of this run's
    own, shared by its workers and every process they start (tests.locust_process.clean_env keeps it), removed
    at the end: a dataset's words are drawn by its first seed in the run and read by every later one, and the
    user's cache is neither read nor written."""
    if hasattr(config, "workerinput"):  # a worker: the controller's directory, in the environment it inherited
        return
    saved = os.environ.get(CACHE_DIR_ENV)
    directory = os.environ[CACHE_DIR_ENV] = tempfile.mkdtemp(prefix=CACHE_DIR_PREFIX)

    def restore() -> None:
        shutil.rmtree(directory, ignore_errors=True)
        if saved is None:
            del os.environ[CACHE_DIR_ENV]
        else:
            os.environ[CACHE_DIR_ENV] = saved

    config.add_cleanup(restore)


def _shared_bytecode(config: pytest.Config) -> None:
    """With PYTHONDONTWRITEBYTECODE set, each of the several hundred processes the tests start (folioperf
    commands, Locust masters and workers, sandboxes) would compile folioperf, Locust and gevent again from
    source: 35 to 65 of the suite's 360 to 380 CPU-seconds. They keep their bytecode in a directory of this
    run's own instead (PYTHONPYCACHEPREFIX), removed at the end: still nothing written beside the sources,
    which is what the setting asks. xdist's workers themselves start as they were, reading the installed
    packages' bytecode (which a prefix would hide from them): only the processes that run tests set it for
    their children."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:  # the run's first process names the directory, and removes it at the end
        directory = tempfile.mkdtemp(prefix=BYTECODE_DIR_PREFIX)
        config.add_cleanup(lambda: shutil.rmtree(directory, ignore_errors=True))
        if getattr(config.option, "dist", "no") != "no" and getattr(config.option, "tx", None):
            config.stash[_bytecode_dir] = directory  # xdist's workers run the tests: pytest_configure_node
            return
    elif _BYTECODE_KEY in workerinput:  # a worker of a controller that named it
        directory = workerinput[_BYTECODE_KEY]
    else:
        return
    dont_write = os.environ.pop("PYTHONDONTWRITEBYTECODE")
    os.environ["PYTHONPYCACHEPREFIX"] = directory

    def restore() -> None:
        os.environ["PYTHONDONTWRITEBYTECODE"] = dont_write
        del os.environ["PYTHONPYCACHEPREFIX"]

    config.add_cleanup(restore)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:  # pytest-xdist's controller, for each worker
    if _bytecode_dir in node.config.stash:
        node.workerinput[_BYTECODE_KEY] = node.config.stash[_bytecode_dir]


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's: optional for a run without it (-p no:xdist -o addopts=)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: four workers a core (at most 8). Much of a test's time is spent waiting for Locust runs with
    the PTF's think times, not computing, and the long runs start first: with 6 workers on 2 cores, all six sat
    in waiting runs 35 to 70 s into the suite with the CPU mostly 10 to 60 % busy (174, 175, 175 s); 8 fill that
    (166, 167, 161 s); 10 are no faster (171, 176, 175 s), each worker also costing its own start-up."""
    return min(4 * (os.cpu_count() or 1), 8)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (its worker's hook, registered after this file)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    # The long runs first, so that xdist's workers start them at once and the suite lasts about as long
    # as its longest test, not as that test started last: xdist hands out groups and lone tests in this
    # order (--no-loadscope-reorder in pyproject.toml), a group where its longest test is.
    items.sort(key=_expected_seconds, reverse=True)
    _group_module_fixtures(items)
    _install_missing_programs(config, items)


def _group_module_fixtures(items: list[pytest.Item]) -> None:
    """A module-scoped fixture (a sandbox, a database, a Locust run) is made again on every xdist worker that
    runs a test using it, and loadgroup spread a module's tests over all of them: the tests that use one are
    one group (their module's), so it is made once. A test in a group of its own choosing keeps it."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        definitions = item._fixtureinfo.name2fixturedefs  # type: ignore[attr-defined]
        if any(definitions[name][-1].scope == "module" for name in item.fixturenames if name in definitions):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0].removesuffix(".py")))


def _expected_seconds(item: pytest.Item) -> float:
    mark = item.get_closest_marker("long_run")
    return 0 if mark is None else mark.args[0] if mark.args else 20


def _install_missing_programs(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _missing(items):
        return
    # pytest-xdist's workers each collect: one installs, the others wait and find the programs there.
    with open(os.path.join(tempfile.gettempdir(), f"folioperf-tests-apt-{os.geteuid()}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        missing = _missing(items)
        if not missing:
            return
        packages = sorted({SYSTEM_PROGRAMS[name] for name in missing})
        command = f"apt-get install -y {' '.join(packages)}"
        if shutil.which("apt-get") is None:
            pytest.exit(f"the tests need {', '.join(missing)}, which pip cannot install: install the Debian "
                        f"package(s) {', '.join(packages)} or your system's equivalent", returncode=4)
        if os.geteuid() != 0:
            pytest.exit(f"the tests need {', '.join(missing)}, which pip cannot install: `sudo {command}`",
                        returncode=4)
        _say(config, f"installing {', '.join(packages)} with apt-get: the tests need {', '.join(missing)}")
        result = _apt_get("install", "-y", "-qq", *packages)
        if result.returncode != 0:  # a fresh machine may have no package lists yet
            _apt_get("update", "-qq")
            result = _apt_get("install", "-y", "-qq", *packages)
        if result.returncode != 0 or _missing(items):
            said = (result.stderr or result.stdout).strip().splitlines()
            pytest.exit(f"`{command}` failed: {said[-1] if said else 'no output'}", returncode=4)


def _program(name: str):
    @pytest.fixture(scope="session", name=_fixture_name(name))
    def program() -> str:
        path = shutil.which(name)
        assert path is not None, f"{name} should have been installed before the tests ran"
        return path

    return program


for _name in SYSTEM_PROGRAMS:
    globals()[_fixture_name(_name)] = _program(_name)


@pytest.fixture(scope="session")
def admin_token(folio_sandbox) -> str:
    return folio_sandbox.login()


@pytest.fixture()
def http() -> requests.Session:
    with requests.Session() as s:
        yield s


@contextmanager
def own_database(server_dsn: str, purpose: str = "own") -> Iterator[str]:
    """A database on the tests' server for `folioperf run` and `folioperf campaign`, dropped afterwards."""
    from folioperf.db import ensure_database, with_database

    dsn = with_database(server_dsn, f"folioperf_test_{purpose}_{uuid.uuid4().hex[:10]}")
    ensure_database(dsn)
    try:
        yield dsn
    finally:
        drop_test_database(dsn)


@pytest.fixture(scope="session")
def run_dsn(folio_postgres):
    """The worker's run database, shared by its tests: the full-scale datasets seeded once (tests.locust_process's
    SEEDS_FULL_* groups), the later runs resetting them."""
    with own_database(folio_postgres, "run") as dsn:
        yield dsn


@pytest.fixture()
def own_run_dsn(folio_postgres):
    """A run database for one test alone: for data seeded at another scale than the full one, which in `run_dsn`
    would have the next full-scale `folioperf seed` refused."""
    with own_database(folio_postgres) as dsn:
        yield dsn


def database_exists(dsn: str) -> bool:
    """Whether the DSN's database exists on its server."""
    from folioperf.db import database_name, with_database

    with psycopg.connect(with_database(dsn, "postgres")) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database_name(dsn),))
        return found.fetchone() is not None
