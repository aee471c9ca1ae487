"""`folioperf sandbox start|init` as a user runs them: a bad or taken port and a role that is no superuser
end in one clear line, without touching the database when they need not."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid

import psutil
import psycopg
import pytest
import requests

from folioperf import db
from folioperf.sandbox.process import start_sandbox
from tests.conftest import database_exists
from tests.locust_process import folioperf


@pytest.fixture()
def new_dsns(folio_postgres):
    """new_dsns() → the DSN of a database name not yet taken on the tests' server; whatever gets created is
    dropped afterwards."""
    made: list[str] = []

    def make() -> str:
        made.append(db.with_database(folio_postgres, f"folioperf_test_cli_{uuid.uuid4().hex[:10]}"))
        return made[-1]

    yield make
    for dsn in made:
        db.drop_database(dsn)


def test_a_port_out_of_range_is_refused_before_anything_starts(new_dsns):
    dsn = new_dsns()
    r = folioperf("sandbox", "start", "--port", "99999", "--db", dsn)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == ["folioperf sandbox start: error: argument --port: invalid port "
                                             "'99999': a whole number from 0 to 65535 (0 picks a free one) "
                                             "(see folioperf sandbox start --help)"]  # one line, no usage block
    assert not database_exists(dsn)


def test_a_taken_port_is_found_before_the_database_is_set_up(new_dsns):
    dsn = new_dsns()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = folioperf("sandbox", "start", "--port", str(port), "--db", dsn)
    assert (r.returncode, r.stderr) == (2, f"folioperf: error: cannot listen on 127.0.0.1:{port}: Address already "
                                           "in use\n")
    assert not database_exists(dsn)  # no database created, no tenant written


def test_a_sandbox_starts_beside_one_serving_the_same_database(new_dsns):
    """Every start runs the set-up: on a tenant installed by the same release it changes nothing, so it
    takes no lock that would stall a sandbox serving the database (here, a check-out's open transaction)."""
    dsn = new_dsns()
    assert folioperf("sandbox", "init", "--db", dsn).returncode == 0
    with psycopg.connect(dsn) as serving:
        serving.execute("LOCK TABLE diku_mod_circulation_storage.loan IN ROW EXCLUSIVE MODE")  # as an INSERT holds it
        r = folioperf("sandbox", "init", "--db", dsn, PGOPTIONS="-c lock_timeout=5s")
        assert r.returncode == 0, r.stderr
        # another release upgrades the tables, which must wait for the transaction: told in one line
        r = folioperf("sandbox", "init", "--db", dsn, "--folio-release", "ramsons", PGOPTIONS="-c lock_timeout=1s")
    assert (r.returncode, r.stderr) == (2, f"folioperf: error: setting up the sandbox in database {db.database_name(dsn)} "
                                           "failed: canceling statement due to lock timeout; nothing was changed\n")


@pytest.fixture()
def plain_role(folio_postgres):
    """A login role that is neither superuser nor allowed to create databases (dropped afterwards: ask for
    it before `new_dsns`, so the databases it owns are dropped first)."""
    role = f"folioperf_test_plain_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(folio_postgres, autocommit=True) as conn:  # a password, for servers that do not trust
        conn.execute(f"CREATE ROLE \"{role}\" LOGIN NOSUPERUSER NOCREATEDB PASSWORD '{role}'")
    yield role
    with psycopg.connect(folio_postgres, autocommit=True) as conn:
        conn.execute(f'DROP ROLE "{role}"')


def test_a_role_that_is_no_superuser_gets_a_sandbox_without_pg_stat_statements(plain_role, new_dsns, tmp_path):
    owned = new_dsns()
    with psycopg.connect(db.with_database(owned, "postgres"), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{db.database_name(owned)}" OWNER "{plain_role}"')
    as_role = psycopg.conninfo.make_conninfo(owned, user=plain_role, password=plain_role)
    r = folioperf("sandbox", "init", "--db", as_role)
    assert r.returncode == 0, r.stderr
    assert r.stderr == (f"folioperf: warning: role {plain_role} is no superuser, so pg_stat_statements was not "
                        "created: runs work, but their reports will lack the database's top statements until a "
                        "superuser runs CREATE EXTENSION pg_stat_statements; in database "
                        f"{db.database_name(owned)}\n")
    sandbox = start_sandbox(as_role, log_path=str(tmp_path / "sandbox.log"))  # and it serves
    try:
        r = requests.get(sandbox.url + "/groups", headers=sandbox.headers(sandbox.login()), timeout=30)
        assert r.status_code == 200 and r.json()["usergroups"]
    finally:
        sandbox.stop()


def test_a_role_without_the_privileges_the_sandbox_needs_is_told_which(plain_role, new_dsns):
    foreign = new_dsns()  # owned by the server's superuser: the role may connect, not create in it
    db.ensure_database(foreign)
    r = folioperf("sandbox", "init", "--db", psycopg.conninfo.make_conninfo(foreign, user=plain_role,
                                                                           password=plain_role))
    name = db.database_name(foreign)
    assert (r.returncode, r.stderr) == (2, (
        f"folioperf: error: role {plain_role} may not set up the sandbox in database {name}: permission denied to "
        f'create extension "unaccent"; it needs the CREATE privilege there (a superuser can GRANT CREATE ON '
        f"DATABASE {name} TO {plain_role}, or make {plain_role} its owner)\n"))

    missing = new_dsns()
    r = folioperf("sandbox", "start", "--port", "0", "--db",
                  psycopg.conninfo.make_conninfo(missing, user=plain_role, password=plain_role))
    name = db.database_name(missing)
    assert (r.returncode, r.stderr) == (2, (
        f"folioperf: error: database {name} does not exist and role {plain_role} may not create it (CREATEDB): have a "
        f"superuser run CREATE DATABASE {name} OWNER {plain_role}; or pass --db with an existing database\n"))
    assert not database_exists(missing)


def test_start_without_db_serves_from_the_database_folioperf_db_names(new_dsns):
    """`folioperf sandbox start` with no --db: the database of $FOLIOPERF_DB is the one it sets up and serves."""
    dsn = new_dsns()
    proc = subprocess.Popen([sys.executable, "-m", "folioperf", "sandbox", "start", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "FOLIOPERF_DB": dsn})
    try:
        line = proc.stdout.readline()  # the ready line, or nothing when it died
        assert "ready at http://" in line, proc.stderr.read() if proc.poll() is not None else line
        url = line.split("ready at ", 1)[1].split(" ", 1)[0]
        r = requests.post(url + "/authn/login", json={"username": "diku_admin", "password": "admin"},
                          headers={"X-Okapi-Tenant": "diku"}, timeout=30)
        assert r.status_code == 201, r.text
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
    assert database_exists(dsn)


def test_the_admin_password_comes_from_the_environment_never_the_command_line(new_dsns, tmp_path):
    """`sandbox start|init` read the admin's password from FOLIOPERF_PASSWORD, as `run` does; before, it was
    --admin-password, which `ps` and shell histories show."""
    dsn = new_dsns()
    refused = folioperf("sandbox", "init", "--db", dsn, "--admin-password", "x")
    assert refused.returncode == 2 and "unrecognized arguments: --admin-password" in refused.stderr, refused.stderr
    assert not database_exists(dsn)
    secret = f"Zebra-{uuid.uuid4().hex[:12]}"
    sandbox = start_sandbox(dsn, tenants=("fs00000077",), admin_password=secret, log_path=str(tmp_path / "sandbox.log"))
    try:
        assert secret not in " ".join(psutil.Process(sandbox.process.pid).cmdline())
        login = {"username": sandbox.username, "password": secret}
        r = requests.post(sandbox.url + "/authn/login", json=login, headers=sandbox.headers(), timeout=30)
        assert r.status_code == 201, r.text
        r = requests.post(sandbox.url + "/authn/login", json={**login, "password": "admin"}, headers=sandbox.headers(),
                          timeout=30)
        assert r.status_code == 422, r.text
    finally:
        sandbox.stop()
    assert secret not in (tmp_path / "sandbox.log").read_text()
