"""PostgreSQL connections: the default DSN, creating a missing database, and one clear error when the
server cannot be reached. Import this only after gevent has patched (psycopg picks its wait function
at import time)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

from folioperf.errors import DatabaseUnreachable

_START_HINT = (
    "start PostgreSQL (e.g. `pg_ctlcluster <version> main start`) or pass --db with a reachable DSN"
)


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
            f"cannot connect to PostgreSQL at {redact(dsn)}: {reason}; {_START_HINT}"
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
        except psycopg.errors.DuplicateDatabase:
            pass  # created concurrently


def drop_database(dsn: str) -> None:
    name = database_name(dsn)
    with connect(with_database(dsn, "postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
