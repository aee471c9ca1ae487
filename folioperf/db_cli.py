"""`folioperf db status|start|stop`: the PostgreSQL cluster folioperf manages (folioperf.pgcluster)."""

from __future__ import annotations

import argparse
import os

from folioperf.config import DB_ENV, SANDBOX_DATABASE


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("db", help="folioperf's own PostgreSQL cluster: status, start, stop",
                       description="The PostgreSQL cluster folioperf starts for the sandbox when neither --db nor "
                                   f"${DB_ENV} names a database: configured for folioperf (pg_stat_statements "
                                   "preloaded, 300 connections, unaccent and pg_trgm), reached through a unix socket "
                                   "in its data directory. `run`, `seed`, `reset`, `pools` and `sandbox` start it "
                                   "when they need it; it keeps running until `folioperf db stop`.")
    dsub = p.add_subparsers(dest="db_command", metavar="COMMAND", required=True)
    dsub.add_parser("status", help="where it is, its version, whether it runs, how to connect",
                    description="Where folioperf's own PostgreSQL cluster lives, its server version, whether it "
                                "runs, its socket and the DSN to connect with; says so when "
                                f"${DB_ENV} makes the commands use another database.").set_defaults(
        handler="folioperf.db_cli:status")
    dsub.add_parser("start", help="create it the first time, start it, or find it running",
                    description="Create folioperf's own PostgreSQL cluster the first time, start it, or find it "
                                "running; prints its DSN.").set_defaults(
        handler="folioperf.db_cli:start")
    dsub.add_parser("stop", help="stop it (its data stays)",
                    description="Stop folioperf's own PostgreSQL cluster; its data stays for the next start.").set_defaults(
        handler="folioperf.db_cli:stop")


def _preloaded(dsn: str) -> str:
    from folioperf import db

    with db.connect(dsn) as conn:
        libs = conn.execute("SHOW shared_preload_libraries").fetchall()[0][0]
        connections = conn.execute("SHOW max_connections").fetchall()[0][0]
    loaded = "loaded" if "pg_stat_statements" in libs else "NOT loaded"
    return f"{loaded} (max_connections {connections})"


def status(args: argparse.Namespace) -> int:
    from folioperf import pgcluster

    cluster = pgcluster.default_cluster()
    st = cluster.status()
    state = (f"running (pid {st.pid})" if st.running else "stopped") if st.created else "not created yet"
    rows = [
        ("directory", f"{st.data}" + ("" if os.environ.get(pgcluster.DIR_ENV) else f"  (${pgcluster.DIR_ENV} moves it)")),
        ("server", f"PostgreSQL {st.binaries.version} ({st.binaries.source}: {st.binaries.bindir})"),
        ("runs as", f"OS user {st.user}"),
        ("state", state),
        ("socket", f"{st.socket} (no TCP port)"),
        ("DSN", cluster.dsn(SANDBOX_DATABASE)),
    ]
    if st.running:
        rows.append(("pg_stat_statements", _preloaded(cluster.dsn())))
    if os.environ.get(DB_ENV):
        from folioperf.db import redact

        rows.append(("note", f"${DB_ENV} is set: commands use {redact(os.environ[DB_ENV])}, not this cluster"))
    width = max(len(key) for key, _ in rows)
    print("\n".join(f"{key + ':':<{width + 1}} {value}" for key, value in rows))
    return 0


def start(args: argparse.Namespace) -> int:
    from folioperf import db, pgcluster

    cluster = pgcluster.default_cluster()
    st, what = cluster.start()
    db.ensure_database(cluster.dsn(SANDBOX_DATABASE))
    verb = {"created": "created and started", "started": "started", "running": "already running"}[what]
    print(f"folioperf's PostgreSQL {st.binaries.version} in {st.data}: {verb} (pid {st.pid}); "
          f"DSN {cluster.dsn(SANDBOX_DATABASE)}")
    return 0


def stop(args: argparse.Namespace) -> int:
    from folioperf import pgcluster

    cluster = pgcluster.default_cluster()
    stopped = cluster.stop()
    print(f"folioperf's PostgreSQL in {cluster.data} " + ("stopped" if stopped else "was not running"))
    return 0
