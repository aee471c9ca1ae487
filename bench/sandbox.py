"""Sandbox throughput, measured side by side in one run on this machine.

    python bench/sandbox.py [--processes 2] [--seconds 10] [--connections 32]

1. a bare "hello" WSGI app served exactly like the sandbox (same socket options, same gevent server,
   same number of forked processes): the ceiling of the serving stack itself;
2. the sandbox answering `GET /users?query=barcode==X` (token check, CQL, indexed jsonb lookup through
   the psycopg pool) for random seeded barcodes.

Prints requests/s of both and their ratio. The load comes from one separate process with
geventhttpclient keep-alive connections, so client, server and PostgreSQL share the machine's cores
the same way in both measurements.
"""

from __future__ import annotations

import sys

if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] in ("hello-server", "load"):
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


def measure(url: str, paths: list[str], headers: dict, seconds: float, connections: int) -> tuple[float, int]:
    spec = json.dumps({"url": url, "paths": paths, "headers": headers, "seconds": seconds, "connections": connections})
    out = subprocess.run([sys.executable, __file__, "load"], input=spec, capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["ok"] / result["elapsed"], result["failed"]


def seed_users(dsn: str, tenant: str, n: int) -> list[str]:
    import psycopg
    from psycopg.types.json import Jsonb

    barcodes = [f"bench{i:07d}" for i in range(n)]
    with psycopg.connect(dsn) as conn:
        with conn.cursor().copy(f"COPY {tenant}_mod_users.users (id, jsonb) FROM STDIN") as copy:
            for b in barcodes:
                copy.write_row((str(uuid.uuid4()), Jsonb({"username": b, "barcode": b, "active": True,
                                                           "personal": {"lastName": "Bench", "firstName": b}})))
        conn.execute(f"ANALYZE {tenant}_mod_users.users")
    return barcodes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--users", type=int, default=5000)
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
        token = sandbox.login()
        headers = sandbox.headers(token)
        paths = [f"/users?query=barcode%3D%3D{b}" for b in random.sample(barcodes, min(2000, len(barcodes)))]
        measure(sandbox.url, paths, headers, 2, args.connections)  # warm-up: pools, prepared statements
        measure(hello_url, ["/"], {}, 1, args.connections)

        hello_rps, _ = measure(hello_url, ["/"], {}, args.seconds, args.connections)
        users_rps, failed = measure(sandbox.url, paths, headers, args.seconds, args.connections)
        check = requests.get(sandbox.url + paths[0], headers=headers).json()
        assert check["totalRecords"] == 1, check
        print(f"hello endpoint, same server stack:      {hello_rps:8.0f} requests/s")
        print(f"GET /users?query=barcode==X (sandbox):  {users_rps:8.0f} requests/s  ({failed} failed)")
        print(f"ratio sandbox/hello:                    {users_rps / hello_rps:8.3f}")
        print(json.dumps({"processes": args.processes, "connections": args.connections, "hello_rps": round(hello_rps),
                          "users_by_barcode_rps": round(users_rps), "users_failed": failed,
                          "ratio": round(users_rps / hello_rps, 3)}))
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
    else:
        sys.exit(main())
