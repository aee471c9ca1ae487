"""dbmon against real PostgreSQL: a scratch database with pg_stat_statements, then the sandbox's own."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
import uuid

import psycopg
import pytest
import requests

from folioperf.db import database_name, ensure_database, with_database
from folioperf.dbmon import DbMonitor, mask_literals
from folioperf.errors import FolioperfError
from folioperf.pytest_plugin import drop_test_database


@pytest.fixture()
def scratch(folio_postgres):
    """A new database with an unindexed 5,000-row table `item`; pg_stat_statements not yet created."""
    dsn = with_database(folio_postgres, f"folioperf_dbmon_{uuid.uuid4().hex[:10]}")
    ensure_database(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE item (id uuid PRIMARY KEY, holdingsrecordid uuid, jsonb jsonb NOT NULL)")
        conn.execute("INSERT INTO item SELECT gen_random_uuid(), gen_random_uuid(), "
                     "jsonb_build_object('barcode', i::text) FROM generate_series(1, 5000) i")
        conn.execute("CREATE TABLE loan (id uuid PRIMARY KEY, jsonb jsonb NOT NULL)")
    yield dsn
    drop_test_database(dsn)


def _wait_until(predicate, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_queries_scans_connections_and_size(scratch):
    with psycopg.connect(scratch, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION pg_stat_statements")
    monitor = DbMonitor(scratch, interval=60)
    monitor.start()

    with psycopg.connect(scratch, autocommit=True) as conn:
        for _ in range(5):
            conn.execute("SELECT jsonb FROM item WHERE holdingsrecordid = %s", (uuid.uuid4(),)).fetchall()
        conn.execute("INSERT INTO loan SELECT gen_random_uuid(), jsonb_build_object('n', i) "
                     "FROM generate_series(1, 20000) i")
    # A statement still running when dbmon samples: one transaction holds a lock, another waits on it.
    holder = psycopg.connect(scratch)
    holder.execute("LOCK TABLE item IN ACCESS EXCLUSIVE MODE")
    waiter = threading.Thread(target=lambda: psycopg.connect(scratch, autocommit=True).execute(
        "SELECT count(*) FROM item WHERE jsonb->>'barcode' = '4242'").fetchall())
    waiter.start()
    with psycopg.connect(scratch, autocommit=True) as probe:
        _wait_until(lambda: probe.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
        ).fetchone()[0] == 1, "the blocked statement")
    try:
        result = monitor.stop()
    finally:
        holder.rollback()
        holder.close()
        waiter.join()

    assert result["format"] == "folioperf-db/1"
    statements = result["statements"]
    assert statements["available"]
    # other databases on a shared server may make pg_stat_statements evict entries; that alone is noted
    assert statements["note"] is None or statements["note"].startswith("pg_stat_statements evicted entries")
    texts = {s["query"]: s for s in statements["top"]}
    lookup = next(s for q, s in texts.items() if "FROM item WHERE holdingsrecordid" in q)
    assert lookup["calls"] == 5 and lookup["total_ms"] > 0
    dbmon_own = ("folioperf-dbmon", "pg_stat_statements", "pg_stat_user_tables", "pg_database_size", "lock_timeout")
    assert not any(own in q for q in texts for own in dbmon_own), list(texts)
    assert abs(sum(s["percent"] for s in statements["top"]) - 100) < 1

    item = next(t for t in result["seq_scans"] if t["table"] == "public.item")
    assert item["suspect"] and item["seq_scans"] >= 5 and item["rows"] == 5000 and item["rows_per_scan"] == 5000
    assert {"column": "holdingsrecordid", "indexed": False} in item["filter_columns"]
    assert {"column": "barcode", "indexed": False} in item["filter_columns"]  # from the running statement
    assert any(a["query"] == "SELECT count(*) FROM item WHERE jsonb->>'barcode' = ?" for a in result["active"])

    connections = result["connections"]
    assert connections["samples"] == 2  # at start and at stop (the interval is a minute)
    assert connections["by_state"]["active"]["max"] == 1
    assert connections["by_state"]["idle in transaction"]["max"] == 1
    assert connections["max_connections"] >= 100

    # measuring a table needs a lock, and `item` was locked at the last snapshot: said, and not waited for
    assert result["size"]["growth_bytes"] > 500_000
    assert result["size"]["tables"] == []
    assert result["size"]["note"] == "table sizes were not measured: a table was locked exclusively at a snapshot"
    assert result["errors"] == []
    json.dumps(result)  # db.json-ready


def test_the_monitors_own_statements_are_left_out_whatever_text_the_server_kept(scratch, monkeypatch):
    """pg_stat_statements keeps the first text it saw per query id, and PostgreSQL 18 strips leading comments
    from it: the monitor's statements then carry no marker. A first monitor run without the marker leaves
    exactly those texts; a second, normal run must still leave all of its own statements out."""
    from folioperf import dbmon

    with psycopg.connect(scratch, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION pg_stat_statements")
    monkeypatch.setattr(dbmon, "MARKER", "")
    unmarked = DbMonitor(scratch, interval=60)
    unmarked.start()
    unmarked.stop()
    monkeypatch.undo()

    monitor = DbMonitor(scratch, interval=0.05)
    monitor.start()
    with psycopg.connect(scratch, autocommit=True) as conn:
        for _ in range(3):
            conn.execute("SELECT count(*) FROM loan").fetchall()
        _wait_until(lambda: len(monitor._samples) >= 3, "three samples")
        # the application's own catalog query is not the monitor's, although the monitor reads that view too
        conn.execute("SELECT count(*) FROM pg_indexes WHERE schemaname = 'public'").fetchall()
    result = monitor.stop()
    texts = [s["query"] for s in result["statements"]["top"]]
    assert "SELECT count(*) FROM loan" in texts
    assert any("pg_indexes WHERE schemaname = $1" in t and "count" in t for t in texts)
    own = ("pg_stat_user_tables", "pg_stat_activity", "pg_stat_statements", "pg_database_size", "set_config",
           "pg_stat_clear_snapshot", "indexdef", "current_setting", "pg_extension")
    assert not [t for t in texts if any(o in t for o in own)], texts


def test_missing_pg_stat_statements_is_explained(scratch):
    monitor = DbMonitor(scratch, interval=60)
    monitor.start()
    result = monitor.stop()
    name = database_name(scratch)
    assert result["statements"] == {
        "available": False, "total_ms": 0.0, "calls": 0, "top": [],
        "note": f"pg_stat_statements is loaded but not installed in database {name}: "
                "run CREATE EXTENSION pg_stat_statements; there as a superuser."}
    assert result["connections"]["samples"] == 2  # the rest still works


def test_create_extension_when_asked(scratch):
    monitor = DbMonitor(scratch, interval=60, create_extension=True)
    monitor.start()
    with psycopg.connect(scratch, autocommit=True) as conn:
        conn.execute("SELECT count(*) FROM loan").fetchall()
        conn.execute("INSERT INTO loan SELECT gen_random_uuid(), jsonb_build_object('n', i) "
                     "FROM generate_series(1, 20000) i")
    result = monitor.stop()
    assert result["statements"]["available"]
    assert any(s["query"] == "SELECT count(*) FROM loan" for s in result["statements"]["top"])
    size = result["size"]
    assert size["growth_bytes"] > 500_000 and "note" not in size
    assert size["tables"][0]["table"] == "public.loan" and size["tables"][0]["growth_bytes"] > 500_000


def test_inside_a_gevent_patched_process(scratch):
    with psycopg.connect(scratch, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION pg_stat_statements")
    script = """
import gevent.monkey; gevent.monkey.patch_all()
import json, sys, gevent, psycopg
from folioperf.dbmon import DbMonitor
monitor = DbMonitor(sys.argv[1], interval=0.05)
monitor.start()
ticks = 0
def busy():  # a greenlet that must keep running while the monitor samples
    global ticks
    for _ in range(20):
        ticks += 1
        gevent.sleep(0.01)
g = gevent.spawn(busy)
with psycopg.connect(sys.argv[1], autocommit=True) as conn:
    for _ in range(3):
        conn.execute("SELECT count(*) FROM item WHERE holdingsrecordid IS NULL").fetchall()
g.join()
result = monitor.stop()
print(json.dumps({"ticks": ticks, "calls": [s["calls"] for s in result["statements"]["top"]
                  if "holdingsrecordid IS NULL" in s["query"]], "samples": result["connections"]["samples"]}))
"""
    out = subprocess.run([sys.executable, "-c", script, scratch], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result["ticks"] == 20 and result["calls"] == [3] and result["samples"] >= 2


def test_unreachable_database_is_one_line():
    monitor = DbMonitor("postgresql://postgres@127.0.0.1:1/nothing", interval=60)
    with pytest.raises(FolioperfError) as err:
        monitor.start()
    assert "cannot connect to PostgreSQL at postgresql://postgres@127.0.0.1:1/nothing" in str(err.value)
    assert "\n" not in str(err.value)


def test_running_statements_are_masked():
    assert mask_literals("SELECT jsonb FROM t WHERE jsonb->'status'->>'name' = 'Open' AND  x = 'some id'") == \
        "SELECT jsonb FROM t WHERE jsonb->'status'->>'name' = ? AND x = ?"
    assert mask_literals("ALTER ROLE diku_mod_users PASSWORD 'diku'") is None


def test_sandbox_queries_are_listed(folio_sandbox, admin_token):
    monitor = DbMonitor(folio_sandbox.dsn, interval=60, create_extension=True)
    monitor.start()
    headers = folio_sandbox.headers(admin_token)
    for barcode in ("no-such-1", "no-such-2", "no-such-3"):
        r = requests.get(f"{folio_sandbox.url}/users", params={"query": f'barcode=="{barcode}"'}, headers=headers,
                         timeout=30)
        assert r.status_code == 200
    result = monitor.stop()
    table = re.compile(rf'{folio_sandbox.tenant}_mod_users"?\."?users\b')
    users = [s for s in result["statements"]["top"] if table.search(s["query"])]
    assert users and sum(s["calls"] for s in users) >= 3
