"""The sandbox's mod-search, measured side by side in one run on this machine.

    python bench/search.py [--instances 50000] [--authorities 20000] [--rounds 30] [--db DSN]

Seeds a scratch database with N instances (titles of four words from a vocabulary that gives a word about five
instances, as the PTF's keyword files expect), one holdings record and two items each (HRIDs `ho…`, `it…`),
and M MARC authority records (an authorized heading and two see-from tracings each). Then, one request at a
time as each PTF group sends them, for random keywords and HRIDs:

1. the plans' searches: VB/VTT/ETT `keyword all … or isbn= or hrid== or id== sortby title`, VH's
   `… holdings.hrid==`, IRO's `… item.hrid==`, ETT's `items.hrid==`, VAR's `search/authorities/facets` by
   `id=*` and by `keyword==`, its `search/authorities` by keyword and by id;
2. side by side, a baseline: `GET /instance-storage/instances?query=hrid==X`, an indexed RMB look-up.

Prints the median and 95th percentile of each and its median over the baseline's. Then the cost of keeping
the search indexes: building each on the instance table beside rebuilding mod-inventory-storage's own title
index (the seeder rebuilds both after a COPY).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import uuid

BENCH_DB = "postgresql://postgres@127.0.0.1:5432/folioperf_bench_search"
MAIN_LIBRARY, FOLIO_SOURCE = "fcd64ce1-6995-48f0-840e-89ffa2288371", "f32d531e-df79-46b3-8932-cdd35f7a2264"
BOOK, CAN_CIRCULATE = "1a54b431-2e4f-452d-9cae-9cee66c9a892", "2b94c631-fca9-4892-a730-03ee529ffe27"
TEXT_TYPE, ISBN = "6312d172-f0cf-40f6-b27d-9fa8feaf332f", "8261054f-be78-422d-bd51-4ed9f33c3422"
LCNAF = "af045f2f-e851-4613-984c-4bc13430454a"
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "te", "vi", "do", "ba", "fe", "gu", "ha", "jo", "ki", "la", "mo",
             "nu", "pe", "ri", "so", "tu", "ve", "wa", "ye", "zo", "bi", "ce", "du", "fa", "ge", "hi", "ju", "ko"]


def vocabulary(size: int) -> list[str]:
    words = [a + b + c for a in SYLLABLES for b in SYLLABLES for c in SYLLABLES]
    random.Random(1).shuffle(words)
    return words[:size]


def seed(dsn: str, tenant: str, instances: int, authorities: int) -> tuple[list[str], list[str]]:
    """The seeded title words and authority surnames."""
    import psycopg
    from psycopg.types.json import Jsonb

    rnd = random.Random(2)
    words = vocabulary(max(instances * 4 // 5, 10))
    surnames = vocabulary(max(authorities // 2, 10))
    inv = f"{tenant}_mod_inventory_storage"
    with psycopg.connect(dsn) as conn:
        with conn.cursor().copy(f"COPY {inv}.instance (id, jsonb) FROM STDIN") as copy:
            for n in range(instances):
                title = " ".join(rnd.choice(words) for _ in range(4)).capitalize()
                copy.write_row((str(uuid.UUID(int=n + 1)), Jsonb({
                    "title": title, "indexTitle": title, "hrid": f"in{n:011d}", "source": "MARC",
                    "instanceTypeId": TEXT_TYPE,
                    "contributors": [{"name": f"{rnd.choice(surnames).capitalize()}, {rnd.choice(words).capitalize()}",
                                      "primary": True}],
                    "identifiers": [{"identifierTypeId": ISBN, "value": str(9780000000000 + n)}]})))
        with conn.cursor().copy(f"COPY {inv}.holdings_record (id, jsonb) FROM STDIN") as copy:
            for n in range(instances):
                copy.write_row((str(uuid.UUID(int=(1 << 64) + n)), Jsonb({
                    "instanceId": str(uuid.UUID(int=n + 1)), "hrid": f"ho{n:011d}", "permanentLocationId": MAIN_LIBRARY,
                    "sourceId": FOLIO_SOURCE, "callNumber": f"QA{n}"})))
        with conn.cursor().copy(f"COPY {inv}.item (id, jsonb) FROM STDIN") as copy:
            for n in range(instances * 2):
                copy.write_row((str(uuid.UUID(int=(2 << 64) + n)), Jsonb({
                    "holdingsRecordId": str(uuid.UUID(int=(1 << 64) + n // 2)), "hrid": f"it{n:08d}", "barcode": f"b{n}",
                    "status": {"name": "Available"}, "materialTypeId": BOOK, "permanentLoanTypeId": CAN_CIRCULATE,
                    "effectiveCallNumberComponents": {"callNumber": f"QA{n // 2}"}})))
        with conn.cursor().copy(f"COPY {tenant}_mod_entities_links.authority (id, jsonb) FROM STDIN") as copy:
            for n in range(authorities):
                surname, given = rnd.choice(surnames).capitalize(), rnd.choice(words).capitalize()
                copy.write_row((str(uuid.UUID(int=(3 << 64) + n)), Jsonb({
                    "source": "MARC", "naturalId": f"n{n}", "sourceFileId": LCNAF if n % 3 else None,
                    "personalName": f"{surname}, {given}", "sftPersonalName": [f"{surname}, {given[0]}.", f"{given} {surname}"],
                    "identifiers": [{"value": f"n {79000000 + n}", "identifierTypeId": str(uuid.UUID(int=9))}]})))
        for table in (f"{inv}.instance", f"{inv}.holdings_record", f"{inv}.item", f"{tenant}_mod_entities_links.authority"):
            conn.execute(f"ANALYZE {table}")
    return words, surnames


def timed(session, url: str, headers: dict, requests_: list[dict], path: str) -> list[float]:
    out = []
    for params in requests_:
        started = time.perf_counter()
        r = session.get(url + path, params=params, headers=headers)
        out.append((time.perf_counter() - started) * 1000)
        assert r.status_code == 200, r.text
    return out


def index_costs(dsn: str, tenant: str) -> list[tuple[str, float]]:
    """Seconds to build each search index on the instance table, beside rebuilding RMB's title index."""
    import psycopg

    inv = f"{tenant}_mod_inventory_storage"
    out = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name, ddl in conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s AND tablename = "
                                      "'instance' AND (indexname LIKE 'instance_search%%' OR indexname = 'instance_title_idx')",
                                      (inv,)).fetchall():
            conn.execute(f'DROP INDEX "{inv}"."{name}"')
            started = time.perf_counter()
            conn.execute(ddl)
            out.append((name, time.perf_counter() - started))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instances", type=int, default=50_000)
    ap.add_argument("--authorities", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--db", default=BENCH_DB)
    args = ap.parse_args()

    import requests

    from folioperf.db import drop_database, ensure_database
    from folioperf.sandbox.process import start_sandbox

    drop_database(args.db)
    ensure_database(args.db)
    sandbox = start_sandbox(args.db)
    try:
        started = time.perf_counter()
        words, surnames = seed(args.db, sandbox.tenant, args.instances, args.authorities)
        print(f"seeded {args.instances} instances, {args.instances} holdings, {2 * args.instances} items and "
              f"{args.authorities} authorities in {time.perf_counter() - started:.1f} s")
        headers = sandbox.headers(sandbox.login())
        rnd = random.Random(3)
        n = args.rounds

        def instances(template: str, values: list[str]) -> list[dict]:
            return [{"query": template.format(v=v), "limit": "100"} for v in values]

        def some(fmt: str, count: int) -> list[str]:
            return [fmt.format(rnd.randrange(count)) for _ in range(n)]

        keyword = '(keyword all "{v}" or isbn="{v}" or hrid=="{v}" or id=="{v}") sortby title'
        cases = [
            ("VB/VTT/ETT keyword", "/search/instances", instances(keyword, [f'{rnd.choice(words)}' for _ in range(n)])),
            ("VH holdings HRID", "/search/instances", instances(
                "(keyword all {v} or isbn={v} or holdings.hrid=={v} or holdings.id=={v}) sortby title",
                some("ho{:011d}", args.instances))),
            ("IRO item HRID", "/search/instances", instances(
                '(keyword all "{v}" or isbn="{v}" or item.hrid=="{v}" or item.id=="{v}") sortby title',
                some("it{:08d}", 2 * args.instances))),
            ("ETT items.hrid", "/search/instances", instances('(items.hrid=="{v}") sortby title',
                                                              some("it{:08d}", 2 * args.instances))),
            ("VAR facets id=*", "/search/authorities/facets", [{"query": "id=*", "facet": "sourceFileId"}] * n),
            ("VAR facets keyword", "/search/authorities/facets",
             [{"query": f'(keyword=="{rnd.choice(surnames)}")', "facet": "sourceFileId"} for _ in range(n)]),
            ("VAR search keyword", "/search/authorities",
             [{"offset": "0", "query": f'(keyword=="{rnd.choice(surnames)}")', "limit": "100"} for _ in range(n)]),
            ("VAR search id", "/search/authorities",
             [{"offset": "0", "query": f"(id=={uuid.UUID(int=(3 << 64) + rnd.randrange(args.authorities))})",
               "limit": "500"} for _ in range(n)]),
        ]
        baseline_requests = [{"query": f"hrid==in{rnd.randrange(args.instances):011d}"} for _ in range(n)]
        session = requests.Session()
        timed(session, sandbox.url, headers, baseline_requests[:5], "/instance-storage/instances")  # warm up
        print(f"{'request':24s} {'median ms':>10s} {'p95 ms':>8s} {'x baseline':>11s}")
        for name, path, reqs in cases:
            baseline = timed(session, sandbox.url, headers, baseline_requests, "/instance-storage/instances")
            took = timed(session, sandbox.url, headers, reqs, path)
            p95 = statistics.quantiles(took, n=20)[-1]
            print(f"{name:24s} {statistics.median(took):10.1f} {p95:8.1f} "
                  f"{statistics.median(took) / statistics.median(baseline):11.1f}   (baseline median "
                  f"{statistics.median(baseline):.1f} ms)")
        costs = index_costs(args.db, sandbox.tenant)
        title = next(seconds for name, seconds in costs if name == "instance_title_idx")
        for name, seconds in costs:
            print(f"build {name:36s} {seconds:6.2f} s  {seconds / title:5.1f} x instance_title_idx")
    finally:
        sandbox.stop()
        drop_database(args.db)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
