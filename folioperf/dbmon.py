"""Database observations during a run: what the PTF reads from database consoles, taken by folioperf.

`DbMonitor(dsn).start()` before the load and `.stop()` after it return the content of the results
directory's `db.json`:

- top statements by total execution time (pg_stat_statements before/after, this database only);
- client connections by state, sampled every `interval` seconds (pg_stat_activity);
- tables read by sequential scans during the run, flagged as missing-index suspects when scans are
  repeated and read many rows each, with the columns the run's statements filter them on;
- database size growth and the tables that grew most.

The servers' CPU and memory (the sandbox's processes among them) are folioperf.servers'.

The sampler is a `threading.Thread` with its own connection: a real thread in a plain process and a
greenlet in a gevent-patched Locust master (psycopg is imported inside the methods, so after any
patching). It never waits on the application's locks (lock_timeout), and a lost connection is noted in
`errors`, not raised into the run.

dbmon's own statements are left out of the statements it reports. pg_stat_statements keeps one text per
query id (the first it saw, and from PostgreSQL 18 without leading comments), so a comment alone cannot
tell them: at the end dbmon asks the server for the query id of each statement it sent (EXPLAIN VERBOSE)
and drops those entries of its role. Every statement also starts with `MARKER`, for people reading
pg_stat_activity or the server log.
"""

from __future__ import annotations

import re
import threading
import time
from collections import defaultdict
from datetime import datetime, timezone
from typing import Any

from folioperf.errors import FolioperfError
from folioperf.wording import plural

FORMAT = "folioperf-db/1"
MARKER = "/* folioperf-dbmon */"
TOP_STATEMENTS = 20
TOP_TABLES = 20
# A table is a missing-index suspect when the run scanned it sequentially several times and each scan
# read many rows: the index lookups FOLIO's queries expect became full scans.
SUSPECT_MIN_SCANS = 3
SUSPECT_MIN_ROWS_PER_SCAN = 1000
START_TIMEOUT = 30.0
MAX_ACTIVE_TEXTS = 1000
LOCK_TIMEOUT_MS = 1000
STATEMENT_TIMEOUT_MS = 60_000

_ENABLE = "shared_preload_libraries = 'pg_stat_statements'"


class DbMonitor:
    """Samples one database while a run loads it. Not reusable: one `start()`, one `stop()`."""

    def __init__(self, dsn: str, interval: float = 5.0, *, create_extension: bool = False) -> None:
        if interval <= 0:
            raise FolioperfError(f"database sampling interval must be positive, got {interval}")
        self.dsn = dsn
        self.interval = interval
        # CREATE EXTENSION changes the database: only for databases folioperf owns (the sandbox's).
        self.create_extension = create_extension
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._errors: list[str] = []
        self._before: dict[str, Any] = {}
        self._after: dict[str, Any] = {}
        self._samples: list[tuple[float, dict[str, int]]] = []
        self._active: dict[str, int] = defaultdict(int)  # statements seen running -> samples
        self._indexes: dict[str, list[str]] = {}  # table -> index definitions (absent: unknown)
        self._max_connections: int | None = None
        self._statements_note: str | None = None
        self._statements_rel: str | None = None
        self._statements_user: str | None = None
        self._own_sql: dict[str, tuple] = {}  # each statement dbmon sent, with parameters to EXPLAIN it
        self._own_ids: set[tuple[int, int]] = set()  # (userid, queryid) of those statements
        self._userid: int | None = None
        self._started_at = ""
        self._t0 = 0.0

    # -- public API ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Connect and take the "before" snapshot; returns once it is taken (the load may begin)."""
        if self._thread is not None:
            raise RuntimeError("DbMonitor.start() called twice")
        self._thread = threading.Thread(target=self._run, name="folioperf-dbmon", daemon=True)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT):
            self._stop.set()
            raise FolioperfError(f"database monitor: no snapshot within {START_TIMEOUT:.0f} s")
        if self._failure is not None:
            self._thread.join()
            raise self._failure

    def stop(self) -> dict[str, Any]:
        """Take the last sample and the "after" snapshot; returns the db.json content."""
        if self._thread is None:
            raise RuntimeError("DbMonitor.stop() before start()")
        self._stop.set()
        self._thread.join()
        return self._result()

    # -- sampler thread -----------------------------------------------------------------------------
    def _connect(self):
        from folioperf.db import connect

        conn = connect(self.dsn, autocommit=True, application_name="folioperf-dbmon")
        # Never wait behind the application's locks (a migration, VACUUM FULL...): the run's end must
        # not hang on its observer.
        self._q(conn, "SELECT set_config('lock_timeout', %s, false), set_config('statement_timeout', %s, false)",
                (f"{LOCK_TIMEOUT_MS}ms", f"{STATEMENT_TIMEOUT_MS}ms"))
        return conn

    def _run(self) -> None:
        try:
            conn = self._connect()
        except BaseException as exc:  # handed to start(), which raises it in the caller
            self._failure = exc
            self._ready.set()
            return
        try:
            self._started_at = _now()
            self._t0 = time.monotonic()
            self._prepare_statements(conn)
            self._before = self._snapshot(conn)
            self._read_indexes(conn)
            self._sample(conn)
        except Exception as exc:
            self._failure = FolioperfError(f"database monitor: {_one_line(exc)}")
            conn.close()
            self._ready.set()
            return
        self._ready.set()
        while not self._stop.wait(self.interval):
            conn = self._guarded(conn, self._sample)
        conn = self._guarded(conn, self._sample)
        conn = self._guarded(conn, lambda c: self._after.update(self._snapshot(c)))
        conn = self._guarded(conn, self._read_new_indexes)
        conn = self._guarded(conn, self._learn_own_ids)
        conn.close()

    def _read_indexes(self, conn, tables: list[str] | None = None) -> None:
        """Index definitions, to tell whether a filter column is indexed: of every table at the start,
        or of the given tables. Reading one locks its table briefly, so a table locked exclusively by
        the application stays unknown rather than stalling dbmon."""
        import psycopg

        if tables is None:
            try:
                rows = self._q(conn, "SELECT schemaname || '.' || tablename, indexdef FROM pg_indexes "
                                     "WHERE schemaname NOT IN ('pg_catalog', 'information_schema')")
            except psycopg.errors.LockNotAvailable:
                return  # read per table at the end instead
            indexes: dict[str, list[str]] = {name: [] for name in self._before.get("tables", {})}
            for name, definition in rows:
                indexes.setdefault(name, []).append(definition)
            self._indexes.update(indexes)
            return
        for name in tables:
            schema, table = name.split(".", 1)
            try:
                rows = self._q(conn, "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND tablename = %s",
                               (schema, table))
            except psycopg.errors.LockNotAvailable:
                continue
            self._indexes[name] = [r[0] for r in rows]

    def _read_new_indexes(self, conn) -> None:
        before = self._before.get("tables", {})
        scanned = [name for name, a in self._after.get("tables", {}).items()
                   if a["seq_scan"] > before.get(name, {}).get("seq_scan", 0) and name not in self._indexes]
        self._read_indexes(conn, scanned)

    def _guarded(self, conn, step):
        """Run a step; a lost connection is noted and replaced, never raised into the load test."""
        import psycopg

        try:
            step(conn)
        except psycopg.Error as exc:
            self._note_error(exc)
            if conn.broken or conn.closed:
                try:
                    conn = self._connect()
                except (FolioperfError, psycopg.Error) as again:
                    self._note_error(again)
        return conn

    def _note_error(self, exc: BaseException | str) -> None:
        message = _one_line(exc)
        if message not in self._errors:
            self._errors.append(message)

    def _q(self, conn, sql: str, params: tuple = ()) -> list[tuple]:
        cur = conn.execute(f"{MARKER} {sql}", params)
        self._own_sql.setdefault(sql, params)
        return cur.fetchall() if cur.description else []

    def _learn_own_ids(self, conn) -> None:
        """The query ids of dbmon's statements, as the server computes them (PostgreSQL 14 and later).
        Runs after the last snapshot, so these EXPLAINs are not counted in the run."""
        import psycopg

        if self._statements_rel is None or self._userid is None:
            return
        for sql, params in self._own_sql.items():
            if not sql.lstrip().upper().startswith("SELECT"):
                continue  # only queries can be explained; dbmon sends nothing else during the run
            try:
                plan = conn.execute(f"EXPLAIN (VERBOSE, FORMAT JSON) {MARKER} {sql}", params).fetchone()[0]
            except psycopg.Error:
                continue
            query_id = plan[0].get("Query Identifier") if plan else None
            if query_id is not None:
                self._own_ids.add((self._userid, int(query_id)))

    def _own(self, key: tuple, query: str | None) -> bool:
        """Whether a pg_stat_statements entry, keyed (userid, queryid, toplevel), is dbmon's own."""
        return key[:2] in self._own_ids or (query is not None and MARKER in query)

    # -- pg_stat_statements -------------------------------------------------------------------------
    def _prepare_statements(self, conn) -> None:
        import psycopg

        db, user, self._userid = self._q(conn, "SELECT current_database(), current_user, "
                                               "(SELECT oid FROM pg_roles WHERE rolname = current_user)")[0]
        self._max_connections = int(self._q(conn, "SELECT current_setting('max_connections')")[0][0])
        schema = self._extension_schema(conn)
        if schema is None and self.create_extension:
            try:
                self._q(conn, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            except psycopg.Error:
                pass  # reported below as "not installed", with the fix
            schema = self._extension_schema(conn)
        if schema is None:
            if self._preloaded(conn):
                self._statements_note = (f"pg_stat_statements is loaded but not installed in database {db}: "
                                         f"run CREATE EXTENSION pg_stat_statements; there as a superuser.")
            else:
                self._statements_note = (f"pg_stat_statements is not available in database {db}: set {_ENABLE} in "
                                         f"postgresql.conf, restart PostgreSQL, then run CREATE EXTENSION "
                                         f"pg_stat_statements; in {db} as a superuser.")
            return
        rel = f'"{schema}".pg_stat_statements'
        try:
            self._q(conn, f"SELECT 1 FROM {rel} LIMIT 1")
        except psycopg.errors.ObjectNotInPrerequisiteState:
            self._statements_note = (
                f"pg_stat_statements is installed but not loaded: set {_ENABLE} in postgresql.conf "
                f"and restart PostgreSQL."
            )
            return
        except psycopg.errors.InsufficientPrivilege:
            self._statements_note = (
                f"role {user} may not read pg_stat_statements: GRANT pg_read_all_stats TO {user}; "
                f"(as a superuser)."
            )
            return
        self._statements_rel = rel
        self._statements_user = user

    def _preloaded(self, conn) -> bool:
        import psycopg

        try:
            return "pg_stat_statements" in self._q(conn, "SELECT current_setting('shared_preload_libraries')")[0][0]
        except psycopg.errors.InsufficientPrivilege:
            return False  # unknown to this role: the advice then includes loading it

    def _extension_schema(self, conn) -> str | None:
        rows = self._q(conn, "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
                             "WHERE e.extname = 'pg_stat_statements'")
        return rows[0][0] if rows else None

    def _statements(self, conn) -> dict[tuple, tuple]:
        rows = self._q(
            conn,
            f"SELECT userid, queryid, toplevel, calls, total_exec_time, rows, query FROM {self._statements_rel} "
            "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())",
        )
        return {(r[0], r[1], r[2]): (r[3], r[4], r[5], r[6]) for r in rows}

    def _dealloc(self, conn) -> int | None:
        import psycopg

        assert self._statements_rel is not None  # read only once pg_stat_statements was found readable
        schema = self._statements_rel.rsplit(".", 1)[0]
        try:
            return int(self._q(conn, f"SELECT dealloc FROM {schema}.pg_stat_statements_info")[0][0])
        except psycopg.Error:
            return None  # PostgreSQL before 14

    # -- snapshots and samples ----------------------------------------------------------------------
    def _snapshot(self, conn) -> dict[str, Any]:
        self._q(conn, "SELECT pg_stat_clear_snapshot()")
        tables = {
            f"{r[0]}.{r[1]}": {"seq_scan": r[2], "seq_tup_read": r[3], "idx_scan": r[4], "rows": r[5]}
            for r in self._q(conn, "SELECT schemaname, relname, seq_scan, seq_tup_read, coalesce(idx_scan, 0), "
                                   "n_live_tup FROM pg_stat_user_tables")
        }
        snap: dict[str, Any] = {
            "time": _now(),
            "db_bytes": self._q(conn, "SELECT pg_database_size(current_database())")[0][0],
            "tables": tables,
            "table_bytes": self._table_bytes(conn),
        }
        if self._statements_rel:
            snap["statements"] = self._statements(conn)
            snap["dealloc"] = self._dealloc(conn)
        return snap

    def _table_bytes(self, conn) -> dict[str, int] | None:
        """Each table's size with its indexes and TOAST; None when a table is locked exclusively
        (measuring a relation takes a lock)."""
        import psycopg

        try:
            rows = self._q(conn, "SELECT schemaname || '.' || relname, pg_total_relation_size(relid) "
                                 "FROM pg_stat_user_tables")
        except psycopg.errors.LockNotAvailable:
            return None
        return dict(rows)

    def _sample(self, conn) -> None:
        rows = self._q(
            conn,
            "SELECT coalesce(state, 'unknown'), query FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
        )
        counts: dict[str, int] = defaultdict(int)
        for state, query in rows:
            counts[state] += 1
            if state == "active" and query:
                # Running statements keep their literals, which pg_stat_statements normalises away; they
                # name the jsonb fields a slow scan filters on. Masked, as they may hold personal data.
                text = mask_literals(query)
                if text is not None and (text in self._active or len(self._active) < MAX_ACTIVE_TEXTS):
                    self._active[text] += 1
        self._samples.append((round(time.monotonic() - self._t0, 1), dict(counts)))

    # -- result -------------------------------------------------------------------------------------
    def _result(self) -> dict[str, Any]:
        after = self._after or self._before
        if not self._after:
            self._note_error("the final snapshot could not be taken: statements, scans and size cover nothing")
        return {
            "format": FORMAT,
            "start": self._started_at,
            "end": after.get("time", self._started_at),
            "interval_s": self.interval,
            "statements": self._statements_result(after),
            "connections": self._connections_result(),
            "active": [{"query": q, "samples": n} for q, n in
                       sorted(self._active.items(), key=lambda kv: -kv[1])[:TOP_STATEMENTS]],
            "seq_scans": self._seq_scans_result(after),
            "size": self._size_result(after),
            "errors": list(self._errors),
        }

    def _statement_deltas(self, after: dict) -> list[dict[str, Any]]:
        before = self._before.get("statements", {})
        merged: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0])
        for key, (calls, total, rows, query) in after.get("statements", {}).items():
            if self._own(key, query):
                continue
            b = before.get(key)
            if b and b[0] <= calls:  # else the entry was evicted or reset during the run: count it all
                calls, total, rows = calls - b[0], total - b[1], rows - b[2]
            if calls <= 0:
                continue
            m = merged[query or "<query text unavailable>"]
            m[0] += calls
            m[1] += total
            m[2] += rows
        return [{"query": q, "calls": int(c), "total_ms": round(t, 3), "mean_ms": round(t / c, 3), "rows": int(r)}
                for q, (c, t, r) in merged.items()]

    def _statements_result(self, after: dict) -> dict[str, Any]:
        if not self._statements_rel:
            return {"available": False, "note": self._statements_note, "total_ms": 0.0, "calls": 0, "top": []}
        deltas = self._statement_deltas(after)
        total = sum(d["total_ms"] for d in deltas)
        for d in deltas:
            d["percent"] = round(100.0 * d["total_ms"] / total, 2) if total else 0.0
        deltas.sort(key=lambda d: d["total_ms"], reverse=True)
        notes = []
        hidden = sum(1 for d in deltas if d["query"] == "<insufficient privilege>")
        if hidden:
            user = self._statements_user
            notes.append(f"{plural(hidden, 'statement')} of other roles {'is' if hidden == 1 else 'are'} hidden: "
                         f"GRANT pg_read_all_stats TO {user}; "
                         "(as a superuser).")
        b, a = self._before.get("dealloc"), after.get("dealloc")
        if a is not None and b is not None and a > b:
            notes.append("pg_stat_statements evicted entries during the run (raise pg_stat_statements.max): "
                         "totals are incomplete.")
        return {"available": True, "note": " ".join(notes) or None, "total_ms": round(total, 3),
                "calls": sum(d["calls"] for d in deltas), "top": deltas[:TOP_STATEMENTS]}

    def _connections_result(self) -> dict[str, Any]:
        states = sorted({s for _, counts in self._samples for s in counts})
        series: dict[str, list] = {"t": [t for t, _ in self._samples],
                                   "total": [sum(c.values()) for _, c in self._samples]}
        for state in states:
            series[state] = [c.get(state, 0) for _, c in self._samples]
        summary = {name: {"avg": round(sum(v) / len(v), 2) if v else 0.0, "max": max(v, default=0)}
                   for name, v in series.items() if name != "t"}
        return {"samples": len(self._samples), "max_connections": self._max_connections,
                "total": summary.pop("total"), "by_state": summary, "series": series}

    def _seq_scans_result(self, after: dict) -> list[dict[str, Any]]:
        before = self._before.get("tables", {})
        statements = self._statement_deltas(after) if self._statements_rel else []
        statements += [{"query": q, "calls": n} for q, n in self._active.items()]
        out = []
        for name, a in after.get("tables", {}).items():
            b = before.get(name, {"seq_scan": 0, "seq_tup_read": 0, "idx_scan": 0})
            scans = a["seq_scan"] - b["seq_scan"]
            if scans <= 0:
                continue
            read = a["seq_tup_read"] - b["seq_tup_read"]
            per_scan = read / scans
            out.append({
                "table": name, "rows": a["rows"], "seq_scans": scans, "rows_read": read,
                "rows_per_scan": round(per_scan, 1), "idx_scans": a["idx_scan"] - b["idx_scan"],
                "suspect": scans >= SUSPECT_MIN_SCANS and per_scan >= SUSPECT_MIN_ROWS_PER_SCAN,
                "filter_columns": [{"column": c, "indexed": _indexed(c, self._indexes.get(name))}
                                   for c in filter_columns(name.split(".", 1)[1], statements)],
            })
        out.sort(key=lambda t: (not t["suspect"], -t["rows_read"]))
        return out[:TOP_TABLES]

    def _size_result(self, after: dict) -> dict[str, Any]:
        b_db, a_db = self._before.get("db_bytes", 0), after.get("db_bytes", 0)
        before, now = self._before.get("table_bytes"), after.get("table_bytes")
        grown = []
        for name, size in (now or {}).items():
            b = (before or {}).get(name, 0)
            if size > b:
                grown.append({"table": name, "before_bytes": b, "after_bytes": size, "growth_bytes": size - b})
        grown.sort(key=lambda t: t["growth_bytes"], reverse=True)
        result = {"before_bytes": b_db, "after_bytes": a_db, "growth_bytes": a_db - b_db,
                  "tables": grown[:10] if before is not None else []}
        if before is None or now is None:
            result["note"] = "table sizes were not measured: a table was locked exclusively at a snapshot"
        return result


_JSONB_PATH = re.compile(r"jsonb((?:\s*->>?\s*'[^']+')+)")
_PATH_KEY = re.compile(r"'([^']+)'")
_COLUMN_CMP = re.compile(
    r"(?<![\w'$])(?:\w+\.)?([a-z_][a-z0-9_]*)\s*(?:=|<>|!=|<=|>=|<|>|\s(?:not\s+)?i?like\s|\sin\s*\()", re.IGNORECASE)
_NOT_COLUMNS = {"jsonb", "and", "or", "not", "where", "select", "lower", "upper", "f_unaccent", "left", "true",
                "false", "null", "limit", "offset", "then", "else", "when", "case", "end", "length"}


def filter_columns(table: str, statements: list[dict[str, Any]], limit: int = 5) -> list[str]:
    """Columns (or jsonb paths like `status.name`) in the WHERE clauses of statements naming `table`,
    most called first."""
    named = re.compile(rf"\b{re.escape(table)}\b", re.IGNORECASE)
    weight: dict[str, int] = defaultdict(int)
    for s in statements:
        query = s["query"]
        if not named.search(query):
            continue
        where = re.split(r"\bwhere\b", query, maxsplit=1, flags=re.IGNORECASE)
        if len(where) < 2:
            continue
        clause = re.split(r"\b(?:order\s+by|group\s+by|limit|returning)\b", where[1], maxsplit=1,
                          flags=re.IGNORECASE)[0]
        found = {".".join(_PATH_KEY.findall(m.group(1))) for m in _JSONB_PATH.finditer(clause)}
        found |= {m.group(1).lower() for m in _COLUMN_CMP.finditer(_JSONB_PATH.sub(" ", clause))
                  if m.group(1).lower() not in _NOT_COLUMNS}
        for col in found:
            weight[col] += s["calls"]
    return [c for c, _ in sorted(weight.items(), key=lambda kv: (-kv[1], kv[0]))][:limit]


def _indexed(column: str, indexdefs: list[str] | None) -> bool | None:
    """Whether an index definition mentions the column, or every key of a jsonb path (`status.name`);
    None when the table's indexes are unknown."""
    if indexdefs is None:
        return None
    if "." in column:
        keys = column.split(".")
        return any(all(f"'{k}'" in d for k in keys) for d in indexdefs)
    return any(re.search(rf"\b{re.escape(column)}\b", d.split(" USING ", 1)[-1]) for d in indexdefs)


_LITERAL = re.compile(r"'(?:[^']|'')*'")


def mask_literals(query: str) -> str | None:
    """The statement with string literals replaced by `?`, except jsonb keys (`jsonb->>'barcode'`);
    None for statements that may carry credentials."""
    if re.search(r"password|secret|token", query, re.IGNORECASE):
        return None

    def mask(m: re.Match) -> str:
        return m.group(0) if query[:m.start()].rstrip().endswith(("->", "->>")) else "?"

    return " ".join(_LITERAL.sub(mask, query).split())


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _one_line(exc: BaseException | str) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
