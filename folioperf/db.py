"""PostgreSQL connections: the DSN a command uses when none is given, creating a missing database, and one
clear error when the server cannot be reached — saying whether no server answers, the database is missing or
the login was refused. Import this only after gevent has patched (psycopg picks its wait function at import
time)."""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

from folioperf import pgcluster
from folioperf.config import DB_ENV, FALLBACK_DSN, SANDBOX_DATABASE
from folioperf.errors import DatabaseMissing, DatabaseUnreachable, FolioperfError, LoginRefused, ServerNotAnswering

_START_HINT = ("start PostgreSQL (folioperf's own: `folioperf db start`; a system one: e.g. "
               "`pg_ctlcluster <version> main start`) or pass --db with a reachable DSN")
# libpq's words (the client's, so not translated by the server) for "nothing listens there"
_NOT_ANSWERING = ("connection refused", "is the server running", "timeout expired", "no such file or directory",
                  "network is unreachable", "no route to host", "connection timed out")
_UNKNOWN_HOST = ("could not translate host name", "failed to resolve host")
_MISSING = re.compile(r'database "([^"]+)" does not exist')
_REFUSED = re.compile(r"password authentication failed|authentication failed|no password supplied|"
                      r'role "[^"]+" does not exist|pg_hba\.conf|not permitted to log in', re.IGNORECASE)


def resolve_dsn(dsn: str | None, say: pgcluster.Say = pgcluster.to_stderr) -> str:
    """The database a command uses: --db, else $FOLIOPERF_DB, else the sandbox database in folioperf's own
    cluster (started or reused, and said in one line), else — no server binaries here — the server at the
    default address. Nothing usable: one line saying what to install."""
    if dsn:
        return dsn
    if os.environ.get(DB_ENV):
        return os.environ[DB_ENV]
    binaries, reasons = pgcluster.find_binaries()
    if binaries is not None:
        cluster = pgcluster.Cluster(pgcluster.default_directory(), binaries, say=say)
        status, what = cluster.start()
        dsn = cluster.dsn(SANDBOX_DATABASE)
        verb = {"created": "created and started", "started": "started", "running": "using"}[what]
        say(f"PostgreSQL: {verb} folioperf's own cluster (PostgreSQL {binaries.version}, {status.data}; "
            f"`folioperf db stop` stops it)")
        return dsn
    try:
        connect(FALLBACK_DSN).close()
    except DatabaseMissing:
        pass  # the server answers; the commands that need the database create it
    except DatabaseUnreachable as exc:
        why = f" ({'; '.join(reasons)})" if reasons else ""
        raise FolioperfError(f"no PostgreSQL to use: no server binaries for folioperf's own cluster{why}, and "
                             f"{exc.reason}: {pgcluster.INSTALL_HINT}") from None
    say(f"PostgreSQL: the server at {redact(FALLBACK_DSN)} (no server binaries here for a cluster of folioperf's "
        f"own; the reports' database section needs pg_stat_statements preloaded there)")
    return FALLBACK_DSN


def redact(dsn: str) -> str:
    """The DSN without its password, safe to print."""
    if "://" in dsn:
        parts = urlsplit(dsn)
        if parts.password:
            host = parts.hostname or ""
            if parts.port:
                host = f"{host}:{parts.port}"
            netloc = f"{parts.username}:***@{host}" if parts.username else host
            return urlunsplit(parts._replace(netloc=netloc))
        return dsn
    return re.sub(r"(password\s*=\s*)(\S+)", r"\1***", dsn)


def database_name(dsn: str) -> str:
    return str(psycopg.conninfo.conninfo_to_dict(dsn).get("dbname") or "postgres")


def with_database(dsn: str, dbname: str) -> str:
    params = psycopg.conninfo.conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return psycopg.conninfo.make_conninfo("", **params)


def connect(dsn: str, **kwargs) -> psycopg.Connection:
    """Connect, turning a failure into one actionable line (a DatabaseUnreachable that says why)."""
    try:
        return psycopg.connect(dsn, connect_timeout=10, **kwargs)
    except psycopg.OperationalError as exc:
        raise connection_error(dsn, exc) from None


def error_line(exc: psycopg.Error) -> str:
    """A statement's error as one line: PostgreSQL's primary message, else the error's first line."""
    return exc.diag.message_primary or str(exc).strip().splitlines()[0]


def connection_error(dsn: str, exc: psycopg.OperationalError) -> DatabaseUnreachable:
    text = str(exc).strip()
    # libpq says "connection to server at ..., port N failed: REASON" per address it tried: the first one
    reason = text.splitlines()[0].rsplit(" failed: ", 1)[-1] if text else type(exc).__name__
    reason = reason.replace("FATAL:  ", "").strip()
    where = f"cannot connect to PostgreSQL at {redact(dsn)}"
    short = f"PostgreSQL at {redact(dsn)} refuses: {reason}"
    if missing := _MISSING.search(text):
        return DatabaseMissing(f'{where}: database "{missing[1]}" does not exist (check --db; `folioperf run`, '
                               "`seed` and `sandbox init` create a missing one)", short)
    if _REFUSED.search(text):
        user = psycopg.conninfo.conninfo_to_dict(dsn).get("user") or "(the operating system user)"
        return LoginRefused(f"{where}: the server refused role {user}: {reason}; check the user and password of "
                            "--db (a password may also come from PGPASSWORD or ~/.pgpass)", short)
    if any(words in text.lower() for words in _UNKNOWN_HOST):
        return ServerNotAnswering(f"{where}: {reason}; check the host of --db", short)
    if any(words in text.lower() for words in _NOT_ANSWERING):
        return ServerNotAnswering(f"{where}: no server answers ({reason.lower()}); {_START_HINT}",
                                  f"PostgreSQL at {redact(dsn)} does not answer ({reason.lower()})")
    return DatabaseUnreachable(f"{where}: {reason}", short)


def ensure_database(dsn: str) -> bool:
    """Create the DSN's database when it does not exist yet; whether it was created."""
    try:
        connect(dsn).close()
        return False
    except DatabaseMissing:
        pass
    name = database_name(dsn)
    with connect(with_database(dsn, "postgres"), autocommit=True) as conn:
        try:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        except (psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
            return False  # created concurrently (the loser of a race sees the catalog's unique index)
        except psycopg.errors.InsufficientPrivilege:
            user = conn.execute("SELECT current_user").fetchall()[0][0]
            raise FolioperfError(
                f"database {name} does not exist and role {user} may not create it (CREATEDB): have a superuser "
                f"run CREATE DATABASE {name} OWNER {user}; or pass --db with an existing database") from None
    return True


def drop_database(dsn: str) -> None:
    name = database_name(dsn)
    with connect(with_database(dsn, "postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
