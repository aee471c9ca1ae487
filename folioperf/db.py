"""PostgreSQL connections: the DSN a command uses when none is given, creating a missing database, and one
clear error when the server cannot be reached. Import this only after gevent has patched (psycopg picks its
wait function at import time)."""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

from folioperf import pgcluster
from folioperf.config import DB_ENV, FALLBACK_DSN, SANDBOX_DATABASE
from folioperf.errors import DatabaseUnreachable, FolioperfError

_START_HINT = ("start PostgreSQL (folioperf's own: `folioperf db start`; a system one: e.g. "
               "`pg_ctlcluster <version> main start`) or pass --db with a reachable DSN")


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
        ensure_database(dsn)
        verb = {"created": "created and started", "started": "started", "running": "using"}[what]
        say(f"PostgreSQL: {verb} folioperf's own cluster (PostgreSQL {binaries.version}, {status.data}; "
            f"`folioperf db stop` stops it)")
        return dsn
    try:
        ensure_database(FALLBACK_DSN)
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
    return psycopg.conninfo.conninfo_to_dict(dsn).get("dbname") or "postgres"


def with_database(dsn: str, dbname: str) -> str:
    params = psycopg.conninfo.conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return psycopg.conninfo.make_conninfo(**params)


def connect(dsn: str, **kwargs) -> psycopg.Connection:
    """Connect, turning "server unreachable" into one actionable line."""
    try:
        return psycopg.connect(dsn, connect_timeout=10, **kwargs)
    except psycopg.OperationalError as exc:
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise DatabaseUnreachable(
            f"cannot connect to PostgreSQL at {redact(dsn)}: {reason}; {_START_HINT}",
            reason=f"PostgreSQL at {redact(dsn)} refuses: {reason}",
        ) from None


def ensure_database(dsn: str) -> None:
    """Create the DSN's database when it does not exist yet."""
    name = database_name(dsn)
    try:
        psycopg.connect(dsn, connect_timeout=10).close()
        return
    except psycopg.OperationalError as exc:
        if f'database "{name}" does not exist' not in str(exc):
            connect(dsn)  # raises the one-line error
            raise
    with connect(with_database(dsn, "postgres"), autocommit=True) as conn:
        try:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        except (psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
            pass  # created concurrently (the loser of a race sees the catalog's unique index)


def drop_database(dsn: str) -> None:
    name = database_name(dsn)
    with connect(with_database(dsn, "postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
