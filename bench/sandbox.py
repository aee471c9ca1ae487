"""Sandbox throughput, measured side by side in one run on this machine.

    python bench/sandbox.py [--processes 2] [--seconds 10] [--connections 32]

1. a bare "hello" WSGI app served exactly like the sandbox (same socket options, same gevent server,
   same number of forked processes): the ceiling of the serving stack itself;
2. the sandbox answering `GET /users?query=barcode==X` (token check, CQL, indexed jsonb lookup through
   the psycopg pool) for random seeded barcodes.

Prints requests/s of both and their ratio. The load comes from one separate process with
geventhttpclient keep-alive connections, so client, server and PostgreSQL share the machine's cores
the same way in both measurements.

3. check-out + check-in pairs per second in the same run: each connection takes its own seeded items
   and, item after item, checks one out to a random seeded patron (POST check-out-by-barcode) and checks
   it back in (POST check-in-by-barcode) with the PTF bodies; a pair counts when both succeed.
"""

from __future__ import annotations

import sys

if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] in ("hello-server", "load", "cico"):
    from gevent import monkey  # the helper processes serve and load with gevent: patch first

    monkey.patch_all()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402

BENCH_DB = "postgresql://postgres@127.0.0.1:5432/folioperf_bench"


def hello_server(processes: int) -> None:
    from gevent.pywsgi import WSGIServer

    from folioperf.sandbox.server import listen

    sock = listen("127.0.0.1", 0)
    print(sock.getsockname()[1], flush=True)

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"hello"]

    for _ in range(processes - 1):
        if os.fork() == 0:
            break
    WSGIServer(sock, app, log=None).serve_forever()


def load(url: str, paths: list[str], headers: dict, seconds: float, connections: int) -> None:
    import gevent
    from geventhttpclient import HTTPClient
    from geventhttpclient.url import URL

    base = URL(url)
    client = HTTPClient(base.host, base.port, concurrency=connections, connection_timeout=10, network_timeout=30)
    counts = {"ok": 0, "failed": 0}
    stop_at = time.perf_counter() + seconds

    def loop() -> None:
        rnd = random.Random()
        while time.perf_counter() < stop_at:
            resp = client.get(rnd.choice(paths), headers=headers)
            resp.read()
            counts["ok" if resp.status_code == 200 else "failed"] += 1

    started = time.perf_counter()
    gevent.joinall([gevent.spawn(loop) for _ in range(connections)])
    print(json.dumps({**counts, "elapsed": time.perf_counter() - started}), flush=True)


def cico(url: str, items: list[str], users: list[str], service_point: str, headers: dict, seconds: float,
         connections: int) -> None:
    """Check-out + check-in pairs, each connection cycling through its own slice of the items."""
    import gevent
    from geventhttpclient import HTTPClient
    from geventhttpclient.url import URL

    base = URL(url)
    client = HTTPClient(base.host, base.port, concurrency=connections, connection_timeout=10, network_timeout=30)
    counts = {"pairs": 0, "failed": 0}
    stop_at = time.perf_counter() + seconds

    def loop(mine: list[str]) -> None:
        rnd, n = random.Random(), 0
        while time.perf_counter() < stop_at:
            item = mine[n % len(mine)]
            n += 1
            stamp = time.strftime("%Y-%m-%dT%I:%M:%SZ", time.gmtime())
            out = client.post("/circulation/check-out-by-barcode", body=json.dumps({
                "itemBarcode": item, "userBarcode": rnd.choice(users), "loanDate": stamp, "id": str(uuid.uuid4()),
                "servicePointId": service_point}), headers=headers)
            out.read()
            back = client.post("/circulation/check-in-by-barcode", body=json.dumps({
                "servicePointId": service_point, "checkInDate": stamp, "itemBarcode": item, "id": str(uuid.uuid4())}),
                headers=headers)
            back.read()
            counts["pairs" if (out.status_code, back.status_code) == (201, 200) else "failed"] += 1

    started = time.perf_counter()
    gevent.joinall([gevent.spawn(loop, items[i::connections]) for i in range(connections)])
    print(json.dumps({**counts, "elapsed": time.perf_counter() - started}), flush=True)


def measure_cico(url: str, items: list[str], users: list[str], service_point: str, headers: dict, seconds: float,
                 connections: int) -> tuple[float, int]:
    spec = json.dumps({"url": url, "items": items, "users": users, "service_point": service_point, "headers": headers,
                       "seconds": seconds, "connections": connections})
    out = subprocess.run([sys.executable, __file__, "cico"], input=spec, capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["pairs"] / result["elapsed"], result["failed"]


def measure(url: str, paths: list[str], headers: dict, seconds: float, connections: int) -> tuple[float, int]:
    spec = json.dumps({"url": url, "paths": paths, "headers": headers, "seconds": seconds, "connections": connections})
    out = subprocess.run([sys.executable, __file__, "load"], input=spec, capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["ok"] / result["elapsed"], result["failed"]


UNDERGRAD = "bdc2b6d4-5ceb-4a12-ab46-249b9a68473e"  # sandbox reference data
MAIN_LIBRARY, CIRC_DESK_1 = "fcd64ce1-6995-48f0-840e-89ffa2288371", "3a40852d-49fd-4df2-a1f9-6e2641a6e91f"
BOOK, CAN_CIRCULATE = "1a54b431-2e4f-452d-9cae-9cee66c9a892", "2b94c631-fca9-4892-a730-03ee529ffe27"
TEXT_TYPE = "6312d172-f0cf-40f6-b27d-9fa8feaf332f"


def seed_users(dsn: str, tenant: str, n: int) -> list[str]:
    import psycopg
    from psycopg.types.json import Jsonb

    barcodes = [f"bench{i:07d}" for i in range(n)]
    with psycopg.connect(dsn) as conn:
        with conn.cursor().copy(f"COPY {tenant}_mod_users.users (id, jsonb) FROM STDIN") as copy:
            for b in barcodes:
                copy.write_row((str(uuid.uuid4()), Jsonb({"username": b, "barcode": b, "active": True, "patronGroup": UNDERGRAD,
                                                           "personal": {"lastName": "Bench", "firstName": b}})))
        conn.execute(f"ANALYZE {tenant}_mod_users.users")
    return barcodes


def seed_items(dsn: str, tenant: str, n: int) -> list[str]:
    """n Available items in the Main Library (served by Circ Desk 1), one instance and holdings each."""
    import psycopg
    from psycopg.types.json import Jsonb

    inv = f"{tenant}_mod_inventory_storage"
    barcodes = [f"benchitem{i:07d}" for i in range(n)]
    rows = [(str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4()), b) for b in barcodes]
    with psycopg.connect(dsn) as conn:
        with conn.cursor().copy(f"COPY {inv}.instance (id, jsonb) FROM STDIN") as copy:
            for inst, _, _, b in rows:
                copy.write_row((inst, Jsonb({"title": f"Bench title {b}", "source": "FOLIO", "instanceTypeId": TEXT_TYPE})))
        with conn.cursor().copy(f"COPY {inv}.holdings_record (id, jsonb) FROM STDIN") as copy:
            for inst, hold, _, _ in rows:
                copy.write_row((hold, Jsonb({"instanceId": inst, "permanentLocationId": MAIN_LIBRARY,
                                             "effectiveLocationId": MAIN_LIBRARY})))
        with conn.cursor().copy(f"COPY {inv}.item (id, jsonb) FROM STDIN") as copy:
            for _, hold, item, b in rows:
                copy.write_row((item, Jsonb({"barcode": b, "holdingsRecordId": hold, "status": {"name": "Available"},
                                             "materialTypeId": BOOK, "permanentLoanTypeId": CAN_CIRCULATE,
                                             "effectiveLocationId": MAIN_LIBRARY})))
        for table in ("instance", "holdings_record", "item"):
            conn.execute(f"ANALYZE {inv}.{table}")
    return barcodes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--users", type=int, default=5000)
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--db", default=BENCH_DB)
    args = ap.parse_args()

    import requests

    from folioperf.db import drop_database, ensure_database
    from folioperf.sandbox.process import start_sandbox

    drop_database(args.db)
    ensure_database(args.db)
    sandbox = start_sandbox(args.db, processes=args.processes, pool_size=16)
    hello = subprocess.Popen([sys.executable, __file__, "hello-server", str(args.processes)], stdout=subprocess.PIPE,
                             text=True, start_new_session=True)
    try:
        hello_url = f"http://127.0.0.1:{hello.stdout.readline().strip()}"
        barcodes = seed_users(args.db, sandbox.tenant, args.users)
        items = seed_items(args.db, sandbox.tenant, args.items)
        token = sandbox.login()
        headers = sandbox.headers(token)
        paths = [f"/users?query=barcode%3D%3D{b}" for b in random.sample(barcodes, min(2000, len(barcodes)))]
        measure(sandbox.url, paths, headers, 2, args.connections)  # warm-up: pools, prepared statements
        measure(hello_url, ["/"], {}, 1, args.connections)
        measure_cico(sandbox.url, items, barcodes, CIRC_DESK_1, headers, 2, args.connections)  # warm-up: reference cache

        hello_rps, _ = measure(hello_url, ["/"], {}, args.seconds, args.connections)
        users_rps, failed = measure(sandbox.url, paths, headers, args.seconds, args.connections)
        pairs_rps, pairs_failed = measure_cico(sandbox.url, items, barcodes, CIRC_DESK_1, headers, args.seconds, args.connections)
        check = requests.get(sandbox.url + paths[0], headers=headers).json()
        assert check["totalRecords"] == 1, check
        still_out = requests.get(sandbox.url + "/circulation/loans", params={"query": 'status.name=="Open"', "limit": 0},
                                 headers=headers).json()["totalRecords"]
        print(f"hello endpoint, same server stack:      {hello_rps:8.0f} requests/s")
        print(f"GET /users?query=barcode==X (sandbox):  {users_rps:8.0f} requests/s  ({failed} failed)")
        print(f"ratio sandbox/hello:                    {users_rps / hello_rps:8.3f}")
        print(f"check-out + check-in pairs (sandbox):   {pairs_rps:8.1f} pairs/s     ({pairs_failed} failed, "
              f"{still_out} loans left open)")
        print(json.dumps({"processes": args.processes, "connections": args.connections, "hello_rps": round(hello_rps),
                          "users_by_barcode_rps": round(users_rps), "users_failed": failed,
                          "ratio": round(users_rps / hello_rps, 3), "cico_pairs_per_s": round(pairs_rps, 1),
                          "cico_failed": pairs_failed}))
        return 0
    finally:
        sandbox.stop()
        os.killpg(hello.pid, signal.SIGTERM)
        hello.wait(10)
        drop_database(args.db)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "hello-server":
        hello_server(int(sys.argv[2]))
    elif len(sys.argv) > 1 and sys.argv[1] == "load":
        spec = json.loads(sys.stdin.read())
        load(spec["url"], spec["paths"], spec["headers"], spec["seconds"], spec["connections"])
    elif len(sys.argv) > 1 and sys.argv[1] == "cico":
        spec = json.loads(sys.stdin.read())
        cico(spec["url"], spec["items"], spec["users"], spec["service_point"], spec["headers"], spec["seconds"],
             spec["connections"])
    else:
        sys.exit(main())
