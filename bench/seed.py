"""Seeding speed, measured side by side in one run on this machine.

    python bench/seed.py [--items 200000] [--sample 0.05]

Into three empty tenants of one scratch database (same layout, same tables):
(a) `folioperf seed`: items with their instances, holdings and SRS records (records_lb, raw and parsed
    MARC), end to end — generator process, COPY, index rebuilds, ANALYZE, marker;
(b) the raw COPY limit: the same rows, generated beforehand into memory, COPYed into the same tables
    with the same plan (triggers, index rebuilds, ANALYZE) — what the database alone can take;
(c) row by row: a sample of the same records, one INSERT statement per row as a FOLIO module writes
    them (`INSERT ... (id, jsonb)`, FOLIO's triggers and foreign-key checks firing), all in one
    transaction — the fastest row-by-row loader;
(c') a fifth of that sample committing every row, as records created through FOLIO's APIs are (context).
Prints rows/s of each and the ratios a/b (goal >= 0.7) and a/c (goal >= 10).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import time
import uuid

BASE_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"


def _tenant(dsn: str, tenant: str) -> None:
    from folioperf import db
    from folioperf.sandbox import reference, schema

    with db.connect(dsn) as conn:
        with conn.transaction():
            schema.install_extensions(conn)
            reference.init_tenant(conn, tenant, "diku_admin", "admin")


def _unescape(field: str) -> str | None:
    if field == "\\N":
        return None
    out, i = [], 0
    while i < len(field):
        c = field[i]
        if c == "\\" and i + 1 < len(field):
            out.append({"t": "\t", "n": "\n", "r": "\r"}.get(field[i + 1], field[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--sample", type=float, default=0.05, help="share of the rows inserted row by row in (c)")
    args = parser.parse_args()

    from psycopg import sql

    from folioperf import db
    from folioperf.seed import dataset, generate, layout, load, seeding
    from folioperf.seed.dataset import Counts

    dsn = db.with_database(BASE_DSN, f"folioperf_bench_seed_{uuid.uuid4().hex[:8]}")
    db.ensure_database(dsn)
    try:
        for tenant in ("bencha", "benchb", "benchc"):
            _tenant(dsn, tenant)
        ds = dataclasses.replace(dataset.load("cico"), counts=Counts(users=0, instances=args.items))
        counts = ds.scaled(1)

        # (a) folioperf seed, end to end
        started = time.perf_counter()
        outcome = seeding.seed(dsn, "bencha", ds, 1, False, None)
        a_seconds = time.perf_counter() - started
        rows = sum(s.rows for s in outcome.stats)
        plan_note = ", ".join(f"{s.key}: {'bypass' if s.bypass_triggers else 'triggers'}"
                              f"{'+rebuild' if s.indexes_rebuilt else ''}" for s in outcome.stats)

        # (b) the same rows from memory, the same plan
        with seeding.connect(dsn) as conn:
            lay = layout.inspect(conn, "benchb", "bench")
            keys = seeding.table_keys(lay, counts, seeding.SEED_TABLES, [])
            plans = seeding.plans_for(lay, counts, keys)
            job = generate.Job(ds, counts, tuple((k, tuple(p.columns)) for k, p in plans.items()), seeding.now_iso())
            messages = list(generate.messages(job))
            started = time.perf_counter()
            with conn.transaction():
                load.copy_tables(conn, plans, messages, None)
                load.analyze(conn, plans)
            b_seconds = time.perf_counter() - started
            del messages

        # (c) row by row, FOLIO's way, on a sample
        with seeding.connect(dsn) as conn:
            lay = layout.inspect(conn, "benchc", "bench")
            plans = {key: dataclasses.replace(lay.plan(key, 0), bypass_triggers=False,
                                              columns=["id", "jsonb"] if key not in layout.SRS_COLUMNS else lay.plan(key, 0).columns)
                     for key in keys}
            job = generate.Job(ds, counts, tuple((k, tuple(p.columns)) for k, p in plans.items()), seeding.now_iso())
            sample: dict[str, list[list[str | None]]] = {}
            for msg in generate.messages(job):
                if msg[0] == "rows":
                    lines = msg[3].decode().split("\n")[:-1]  # not splitlines(): MARC separators are line breaks to it
                    wanted = max(1, int(generate.row_count(msg[1], counts) * args.sample))
                    have = sample.setdefault(msg[1], [])
                    have += [[_unescape(f) for f in line.split("\t")] for line in lines[: wanted - len(have)]]
            c_rows = sum(len(v) for v in sample.values())

            def insert_rows(rows_of: dict[str, list], per_row_commit: bool) -> float:
                started = time.perf_counter()
                with conn.transaction() if not per_row_commit else contextlib.nullcontext():
                    for key, values in rows_of.items():
                        info, columns = plans[key].info, plans[key].columns
                        statement = sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
                            info.ident, sql.SQL(", ").join(map(sql.Identifier, columns)),
                            sql.SQL(", ").join(sql.Placeholder() * len(columns)))
                        for row in values:
                            conn.execute(statement, row)  # autocommit connection: a transaction per row in (c')
                return time.perf_counter() - started

            c_seconds = insert_rows(sample, per_row_commit=False)
            with conn.transaction():
                for key in reversed(list(sample)):
                    conn.execute(sql.SQL("DELETE FROM {}").format(plans[key].info.ident))
            fifth = {key: values[: max(1, len(values) // 5)] for key, values in sample.items()}  # commits are slow
            c1_rows = sum(len(v) for v in fifth.values())
            c1_seconds = insert_rows(fifth, per_row_commit=True)
    finally:
        db.drop_database(dsn)

    a, b, c, c1 = rows / a_seconds, rows / b_seconds, c_rows / c_seconds, c1_rows / c1_seconds
    print(f"seeding {args.items:,} items with their instances, holdings and SRS records: {rows:,} rows")
    print(f"  plan: {plan_note}")
    print(f"(a) folioperf seed, end to end      {a:>10,.0f} rows/s  ({a_seconds:.1f} s)")
    print(f"(b) raw COPY of pre-generated rows  {b:>10,.0f} rows/s  ({b_seconds:.1f} s)")
    print(f"(c) row-by-row INSERT, {c_rows:,} rows  {c:>10,.0f} rows/s  ({c_seconds:.1f} s, one transaction)")
    print(f"(c') {c1_rows:,} of them, committing each row  {c1:>10,.0f} rows/s  ({c1_seconds:.1f} s)")
    print(f"a/b = {a / b:.2f}  (goal >= 0.7)")
    print(f"a/c = {a / c:.1f}  (goal >= 10)")
    print(f"a/c' = {a / c1:.1f}")


if __name__ == "__main__":
    main()
