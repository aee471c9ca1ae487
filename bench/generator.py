"""Load generator speed and measurement overhead, measured side by side in one run on this machine.

    python bench/generator.py [--rounds 3] [--seconds 5] [--users 32] [--overhead-seconds 20] [--overhead-users 20]
                              [--prometheus] [--trace]

1. Requests per core. The same GET, back to back from --users users, by one Locust process running a
   bare FastHttpUser loop (bench/locust_bare.py) and one running it through folioperf
   (bench/locust_folio.py: a FolioUser whose task calls `self.okapi.get` inside `with
   self.transaction(...)`, with folioperf's plugin and metrics listener), against one tiny server that
   answers like Okapi (canned answers, TCP_NODELAY) pinned to its own CPU. The server counts the GETs it
   answers per client connection, so each process's count is known; divided by the process's CPU
   seconds it gives requests per core.
   a. alternately, --rounds times each, each process alone on one CPU: requests/s of a whole core;
   b. side by side, --rounds times: both processes at once on the same CPU. This machine's CPU speed
      drifts by tens of percent from one second to the next (other tenants), which alternating windows
      of a few seconds cannot cancel; two processes sharing one CPU see the same speed, so their ratio
      is steady. The verdict (goal >= 0.9) is the median ratio of these rounds.
   c. with --prometheus, side by side as in b., --rounds times: folioperf, and folioperf serving
      `--prometheus` to a Prometheus that scrapes it every second (Debian's `prometheus` when installed,
      else a loop that GETs /metrics each second). The verdict (goal >= 0.97: the metrics cost at most 3 %
      of requests per core) is the median ratio of these rounds.
   d. with --trace, the same for folioperf and folioperf --trace (the server's answers carry Okapi's
      X-Okapi-Trace lines of an auth filter and the serving module, which --trace reads into each module's
      time). Goal >= 0.97, as in c.
   e. with --trace, d. again with a new id in every request's path (GET /groups/<a new UUID>, its trace lines
      naming that path, as Okapi's do): every line then differs from all before it, as in a workflow that
      fetches records by id (GET /inventory/instances/{id}); the reader keeps nothing per line, so this should
      cost what d. does. Shown next to d., no goal of its own.
   Each ratio is printed as the median of the rounds and their spread (lowest-highest).

2. Measurement overhead. A sandbox whose latency profile gives `GET /groups/{id}` a fixed 50 ms delay
   (after a short unmeasured warm-up). First --overhead-users users GET it through folioperf for
   --overhead-seconds: folioperf's own p50 and p99 minus 50 ms are the verdict (goal <= 2 ms at p99).
   Then, for the same time, half as many users through folioperf and half through the bare loop at once,
   so both see the same machine. Each run also shows what the sandbox (with --trace-headers) reports per
   request in its X-Okapi-Trace lines (auth filter and serving module, the delay included) and, per request,
   the client's time minus the sandbox's (the generator, the loopback and the scheduler). The sandbox's
   request counter is printed next to folioperf's count; and, for scale, this machine's floor with no
   generator at all: how late a 50 ms sleep wakes up, and a loopback round trip to the tiny server
   after 50 ms idle. With --trace, a third run: folioperf --trace alone with --overhead-users users, its
   figures next to folioperf alone's (what reading the trace lines does to the latencies it measures).
"""

from __future__ import annotations

import sys

if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "okapi-server":
    from gevent import monkey  # the helper process serves with gevent: patch first

    monkey.patch_all()

import argparse  # noqa: E402
import base64  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import urllib.parse  # noqa: E402
import urllib.request  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

from trace_pairs import GET_NAME, GROUP  # noqa: E402  (beside this script)

BENCH = Path(__file__).resolve().parent
BARE, FOLIO = BENCH / "locust_bare.py", BENCH / "locust_folio.py"
SIDES = {"bare": BARE, "folioperf": FOLIO}
PROMETHEUS_SIDE = "folioperf --prometheus"  # folioperf serving live metrics, scraped every second
TRACE_SIDE = "folioperf --trace"  # folioperf reading each answer's X-Okapi-Trace lines
SCRAPE_INTERVAL_S = 1.0
BENCH_DB = "postgresql://postgres@127.0.0.1:5432/folioperf_bench_generator"
DELAY_MS = 50.0
WARM_REQUESTS = 2000  # GETs of each process before a window opens: users spawned, logged in, connected
WARM_UP_SECONDS = 3.0  # the sandbox's first requests (caches, prepared statements) are not measured
START_TIMEOUT = 60.0


# -- a tiny server answering like Okapi ---------------------------------------------------------------

def _token() -> str:
    """An unsigned JWT shaped like FOLIO's, valid for a day (the server never checks it)."""
    def part(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    now = int(time.time())
    return ".".join((part({"alg": "HS256"}), part({"sub": "diku_admin", "tenant": "diku", "iat": now,
                                                    "exp": now + 86400}), "c2lnbmF0dXJl"))


def _answer(status: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    head = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers), f"Content-Length: {len(body)}", "", ""]
    return "\r\n".join(head).encode() + body


def okapi_server() -> None:
    """Canned Okapi answers over keep-alive connections: the two logins, GET /groups/{id} (any id: its trace
    lines name the path asked for), and
    GET /_/count (GETs of /groups answered so far, in all and by client port). Prints its port, then
    serves until SIGTERM."""
    import gevent
    from gevent.server import StreamServer

    from folioperf.sandbox.server import listen

    token = _token()
    group = json.dumps({"group": "undergrad", "desc": "Undergraduate Student", "id": GROUP,
                        "expirationOffsetInDays": 0, "metadata": {"createdDate": "2024-01-01T00:00:00.000+00:00",
                                                                  "updatedDate": "2024-01-01T00:00:00.000+00:00"}}).encode()
    json_type = ("Content-Type", "application/json")

    def group_answer(target: str) -> bytes:  # Okapi with trace_headers=true: the auth filter, the serving module
        return _answer("200 OK", [json_type,
                                  ("X-Okapi-Trace", f"GET mod-authtoken-2.16.0 http://10.0.0.5:9131{target} : 202 310us"),
                                  ("X-Okapi-Trace", f"GET mod-users-19.5.4 http://10.0.0.5:9132{target} : 200 1200us")],
                       group)

    the_group_target = f"/groups/{GROUP}".encode()
    the_group = group_answer(the_group_target.decode())
    expiry = _answer("201 Created", [json_type, ("Set-Cookie", f"folioAccessToken={token}; Max-Age=86400; Path=/; Secure; HttpOnly"),
                                     ("Set-Cookie", f"folioRefreshToken={token}; Max-Age=604800; Path=/authn; Secure; HttpOnly")],
                     b'{"accessTokenExpiration":"2099-01-01T00:00:00Z","refreshTokenExpiration":"2099-01-01T00:00:00Z"}')
    legacy = _answer("201 Created", [json_type, ("x-okapi-token", token)], json.dumps({"okapiToken": token}).encode())
    not_found = _answer("404 Not Found", [("Content-Type", "text/plain")], b"No suitable module found")
    by_port: dict[int, int] = {}  # GETs of /groups answered, by client port (which process sent them)

    def respond(method: bytes, target: bytes, port: int) -> bytes:
        if method == b"GET" and target.startswith(b"/groups/"):
            by_port[port] = by_port.get(port, 0) + 1
            return the_group if target == the_group_target else group_answer(target.decode())
        if method == b"POST" and target == b"/authn/login-with-expiry":
            return expiry
        if method == b"POST" and target == b"/authn/login":
            return legacy
        if method == b"GET" and target == b"/_/count":
            return _answer("200 OK", [json_type], json.dumps({"groups": sum(by_port.values()), "by_port": by_port}).encode())
        return not_found

    def handle(conn, address) -> None:
        try:
            serve_connection(conn, address[1])
        except OSError:  # a Locust process stopped mid-request
            pass

    def serve_connection(conn, port: int) -> None:
        buf = b""
        while True:
            end = buf.find(b"\r\n\r\n")
            while end < 0:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
                end = buf.find(b"\r\n\r\n")
            head, rest = buf[:end], buf[end + 4:]
            method, target, _ = head[:head.find(b"\r\n") if b"\r\n" in head else len(head)].split(b" ", 2)
            lower = head.lower()
            length, at = 0, lower.find(b"\r\ncontent-length:")
            if at >= 0:
                stop = lower.find(b"\r\n", at + 2)
                length = int(lower[at + 17:stop if stop >= 0 else len(lower)])
            while len(rest) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                rest += chunk
            buf = rest[length:]
            conn.sendall(respond(method, target, port))

    sock = listen("127.0.0.1", 0)  # the sandbox's listening socket: TCP_NODELAY, inherited by connections
    server = StreamServer(sock, handle)
    print(sock.getsockname()[1], flush=True)
    gevent.signal_handler(signal.SIGTERM, server.stop)
    server.serve_forever()


class OkapiServer:
    """The tiny server as a child process (optionally pinned to one CPU)."""

    def __init__(self, cpu: int | None) -> None:
        self.process = subprocess.Popen([sys.executable, __file__, "okapi-server"], stdout=subprocess.PIPE, text=True,
                                        start_new_session=True)
        if cpu is not None:
            os.sched_setaffinity(self.process.pid, {cpu})
        self.port = int(self.process.stdout.readline().strip())
        self.url = f"http://127.0.0.1:{self.port}"

    def login(self) -> str:
        request = urllib.request.Request(self.url + "/authn/login", data=b"{}", method="POST")
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.headers["x-okapi-token"]

    def counts(self) -> dict[int, int]:
        """GETs answered so far, by client port."""
        with urllib.request.urlopen(self.url + "/_/count", timeout=10) as r:
            return {int(port): n for port, n in json.load(r)["by_port"].items()}

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


# -- Locust processes ---------------------------------------------------------------------------------

def clean_env(**extra: str) -> dict[str, str]:
    """The environment without the caller's FOLIOPERF_*/LOCUST_* settings, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FOLIOPERF_", "LOCUST_", "GENERATOR_BENCH_"))}
    env.update(extra)
    return env


@dataclass
class Locust:
    side: str
    process: subprocess.Popen
    workdir: Path

    @property
    def out(self) -> Path:
        return self.workdir / "out.json"

    def log_tail(self, chars: int = 1500) -> str:
        log = self.workdir / "locust.log"
        return log.read_text(errors="replace")[-chars:] if log.exists() else ""

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM (Locust then stops its users and writes its results), SIGKILL if it hangs."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def result(self) -> dict:
        if not self.out.exists():
            raise SystemExit(f"generator bench: the {self.side} Locust process wrote no results; its log ends:\n"
                             f"{self.log_tail()}")
        result = json.loads(self.out.read_text())
        entries = result.get("entries")
        result["failed"] = result["failures"] if entries is None else sum(e["failures"] for e in entries.values())
        return result


def start_locust(side: str, host: str, users: int, run_time: float, workdir: Path, cpu: int | None,
                 extra: tuple[str, ...] = (), **env: str) -> Locust:
    """One side's Locust process: its locustfile (bare or folioperf's) and its own flag (--trace), plus `extra`."""
    workdir.mkdir(parents=True)
    cmd = [sys.executable, "-m", "locust", "-f", str(SIDES.get(side, FOLIO)), "--headless", "--only-summary",
           "-u", str(users), "-r", str(users), "-t", f"{math.ceil(run_time)}s", "--host", host,
           "--stop-timeout", "0", "--loglevel", "WARNING", *(("--trace",) if side == TRACE_SIDE else ()), *extra]
    env = clean_env(GENERATOR_BENCH_OUT=str(workdir / "out.json"), **env)
    with open(workdir / "locust.log", "ab") as log:
        proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    if cpu is not None:
        os.sched_setaffinity(proc.pid, {cpu})
    return Locust(side, proc, workdir)


# -- 1. requests per core -----------------------------------------------------------------------------

def client_ports(pid: int, server_port: int) -> set[int]:
    import psutil

    return {c.laddr.port for c in psutil.Process(pid).net_connections("tcp") if c.raddr and c.raddr.port == server_port}


def cpu_seconds(pid: int) -> float:
    import psutil

    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


class Scraper:
    """Scrapes 127.0.0.1:`port`/metrics every second: Debian's Prometheus when installed, else a loop here."""

    def __init__(self, port: int, workdir: Path) -> None:
        self.port = port
        self.program = shutil.which("prometheus")
        self.kind = "Prometheus" if self.program else "a loop GETting /metrics"
        self.process: subprocess.Popen | None = None
        self.loop_scrapes = 0
        self._stop = threading.Event()
        if self.program:
            workdir.mkdir(parents=True)
            (workdir / "prometheus.yml").write_text(
                f"global:\n  scrape_interval: {SCRAPE_INTERVAL_S:g}s\n  scrape_timeout: {SCRAPE_INTERVAL_S:g}s\n"
                f"scrape_configs:\n  - job_name: bench\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n")
            self.url = f"http://127.0.0.1:{free_port()}"
            with open(workdir / "prometheus.log", "wb") as log:
                self.process = subprocess.Popen(
                    [self.program, f"--config.file={workdir / 'prometheus.yml'}", f"--storage.tsdb.path={workdir / 'tsdb'}",
                     f"--web.listen-address={self.url[7:]}"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        else:
            threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while not self._stop.wait(SCRAPE_INTERVAL_S):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
                    r.read()
                self.loop_scrapes += 1
            except OSError:
                pass  # between rounds nobody serves

    def scrapes(self, seconds: float) -> int:
        """Successful scrapes over the last `seconds` (Prometheus), or in all (the loop)."""
        if self.process is None:
            return self.loop_scrapes
        query = urllib.parse.urlencode({"query": f'sum_over_time(up{{job="bench"}}[{math.ceil(seconds)}s])'})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{query}", timeout=10) as r:
            result = json.load(r)["data"]["result"]
        return int(float(result[0]["value"][1])) if result else 0

    def stop(self) -> None:
        self._stop.set()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def throughput(sides: list[str], server: OkapiServer, token: str, users: int, seconds: float, workdir: Path,
               cpu: int | None, scraper: Scraper | None = None, new_ids: bool = False) -> dict[str, dict]:
    """Run the given sides at once (each its own Locust process on `cpu`); figures of each over one window.
    `new_ids`: folioperf's users GET a new id each time (section 1e)."""
    procs = [start_locust(side, server.url, users, START_TIMEOUT + seconds + 30, workdir / side, cpu,
                          ("--prometheus", str(scraper.port)) if side == PROMETHEUS_SIDE and scraper else (),
                          GENERATOR_BENCH_TOKEN=token, FOLIOPERF_PASSWORD="bench",
                          **({"GENERATOR_BENCH_NEW_IDS": "1"} if new_ids else {})) for side in sides]
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:  # every process warmed up: spawned, logged in, connections open
            counts = server.counts()
            ports = {p.side: client_ports(p.process.pid, server.port) for p in procs}
            if all(sum(counts.get(q, 0) for q in ports[p.side]) >= WARM_REQUESTS for p in procs):
                break
            for p in procs:
                if p.process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"generator bench: the {p.side} Locust process never got going; its log ends:\n"
                                     f"{p.log_tail()}")
            time.sleep(0.1)
        before, t0 = server.counts(), time.perf_counter()
        cpu0 = {p.side: cpu_seconds(p.process.pid) for p in procs}
        server0 = cpu_seconds(server.process.pid)
        scrapes0 = scraper.scrapes(seconds) if scraper and scraper.process is None else 0
        time.sleep(seconds)  # the measurement window
        after, t1 = server.counts(), time.perf_counter()
        cpu1 = {p.side: cpu_seconds(p.process.pid) for p in procs}
        server1 = cpu_seconds(server.process.pid)
        scraped = scraper.scrapes(seconds) - scrapes0 if scraper else 0
    finally:
        for p in procs:
            p.stop()
    elapsed, figures = t1 - t0, {}
    for p in procs:
        served = sum(after.get(q, 0) - before.get(q, 0) for q in ports[p.side])
        used = cpu1[p.side] - cpu0[p.side]
        figures[p.side] = {"rps": served / elapsed, "per_core": served / used, "cpu": used / elapsed,
                           "server_cpu": (server1 - server0) / elapsed, "failures": p.result()["failed"],
                           "scrapes": scraped if p.side == PROMETHEUS_SIDE else 0}
    return figures


# -- 2. measurement overhead --------------------------------------------------------------------------

def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, math.ceil(round(q * len(ordered), 9)))) - 1]


def latency_figures(result: dict) -> dict:
    """p50/p99 of the client's times, the sandbox's trace times and their difference, per request."""
    client = [ms for ms, _ in result["pairs"]]
    sandbox = [us / 1000 for _, us in result["pairs"]]
    outside = [c - s for c, s in zip(client, sandbox)]
    figures = {"traced": len(client)}
    for label, values in (("client", client), ("sandbox", sandbox), ("outside", outside)):
        figures[label] = (nearest_rank(values, 0.50), nearest_rank(values, 0.99)) if values else (math.nan, math.nan)
    return figures


def idle_floor(server: OkapiServer, samples: int = 100) -> dict[str, tuple[float, float]]:
    """What this machine adds to any 50 ms wait, generator or not: how late a 50 ms sleep wakes up, and a
    loopback round trip to the tiny server after 50 ms idle (ms, p50 and p99)."""
    import socket

    late, trips = [], []
    request = b"GET /groups/floor HTTP/1.1\r\nHost: bench\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(samples):
            started = time.perf_counter()
            time.sleep(DELAY_MS / 1000)
            woke = time.perf_counter()
            sock.sendall(request)
            sock.recv(65536)  # the canned answer fits one read
            late.append((woke - started) * 1000 - DELAY_MS)
            trips.append((time.perf_counter() - woke) * 1000)
    return {"sleep_late": (nearest_rank(late, 0.5), nearest_rank(late, 0.99)),
            "round_trip": (nearest_rank(trips, 0.5), nearest_rank(trips, 0.99))}


def side_figures(result: dict) -> dict:
    """A latency run's figures: folioperf's own p50/p99 (its histograms) or the bare loop's exact ones."""
    figures = latency_figures(result)
    entries = result.get("entries")
    if entries is None:
        return {**figures, "count": result["requests"], "failures": result["failed"], "p50": figures["client"][0],
                "p99": figures["client"][1]}
    entry = entries.get(f"GET {GET_NAME}")  # keys are "<request type> <name>"
    if entry is None or not entry["count"]:
        raise SystemExit(f"generator bench: folioperf recorded no {GET_NAME}")
    return {**figures, "count": entry["count"], "failures": entry["failures"], "p50": entry["p50"], "p99": entry["p99"]}


def overhead(users: int, seconds: float, workdir: Path, trace: bool = False) -> dict:
    """folioperf alone with `users` users; then bare and folioperf side by side with half as many each; with
    `trace`, then folioperf --trace alone with `users` users."""
    import requests

    from folioperf.config import DEFAULT_ADMIN_PASSWORD
    from folioperf.db import drop_database, ensure_database
    from folioperf.sandbox.process import start_sandbox

    workdir.mkdir(parents=True)
    profile = workdir / "fixed-50ms.toml"
    profile.write_text(f'description = "bench/generator.py: a fixed delay on one endpoint"\n\n[endpoints]\n'
                       f'"{GET_NAME}" = {{ fixed = {DELAY_MS:g} }}\n')
    drop_database(BENCH_DB)
    ensure_database(BENCH_DB)
    sandbox = start_sandbox(BENCH_DB, log_path=str(workdir / "sandbox.log"), latency_profile=str(profile),
                            trace_headers=True)
    try:
        env = {"GENERATOR_BENCH_TRACE": "1", "GENERATOR_BENCH_TOKEN": sandbox.login(),
               "FOLIOPERF_PASSWORD": DEFAULT_ADMIN_PASSWORD}
        half = max(users // 2, 1)
        stages = {"warm-up": [("bare", users, WARM_UP_SECONDS)], "alone": [("folioperf", users, seconds)],
                  "paired": [("bare", half, seconds), ("folioperf", half, seconds)]}
        if trace:
            stages["traced"] = [(TRACE_SIDE, users, seconds)]
        results: dict[str, dict] = {}
        for stage, runs in stages.items():
            requests.post(sandbox.url + "/_/sandbox/counters/reset", timeout=10).raise_for_status()
            procs = [start_locust(side, sandbox.url, n, run_time, workdir / f"{stage}-{side}", None, **env)
                     for side, n, run_time in runs]
            deadline = time.monotonic() + seconds + START_TIMEOUT
            for p in procs:
                try:
                    p.process.wait(max(deadline - time.monotonic(), 0))
                except subprocess.TimeoutExpired:
                    p.stop()
            results[stage] = {p.side: p.result() for p in procs}
            results[stage]["sandbox_count"] = sandbox.counters()["requests"].get(GET_NAME, {}).get("total", 0)
    finally:
        sandbox.stop()
        drop_database(BENCH_DB)
    alone, paired = results["alone"], results["paired"]
    figures = {"alone": {**side_figures(alone["folioperf"]), "sandbox_count": alone["sandbox_count"], "users": users},
               "paired": {side: side_figures(paired[side]) for side in SIDES}, "paired_users": half}
    if trace:
        figures["traced"] = side_figures(results["traced"][TRACE_SIDE])
    return figures


# -- main ---------------------------------------------------------------------------------------------

def side_by_side(rounds: list[dict[str, dict]], base: str, other: str) -> list[float]:
    """Prints a line per side-by-side round (each side's requests/s and per CPU-second, the scrapes `other`
    served, other's requests per core / base's); returns the ratios."""
    b_head, o_head = f"{base} req/s", f"{other} req/s"
    print(f"      round  {b_head}  req/CPU-s  {o_head}  req/CPU-s  scrapes  ratio  failures")
    ratios = []
    for n, f in enumerate(rounds, 1):
        b, o = f[base], f[other]
        ratios.append(o["per_core"] / b["per_core"])
        print(f"      {n:5}  {b['rps']:{len(b_head)}.0f} {b['per_core']:10.0f}  {o['rps']:{len(o_head)}.0f} "
              f"{o['per_core']:10.0f} {o['scrapes']:8} {ratios[-1]:6.3f} {b['failures'] + o['failures']:9}")
    return ratios


def spread(ratios: list[float]) -> str:
    """The rounds' median ratio and their spread."""
    return f"{statistics.median(ratios):.3f} (median of {len(ratios)} rounds; {min(ratios):.3f}-{max(ratios):.3f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of each kind (default 3)")
    ap.add_argument("--seconds", type=float, default=5, help="measurement window of each round (default 5)")
    ap.add_argument("--users", type=int, default=32, help="users of each throughput round (default 32)")
    ap.add_argument("--overhead-seconds", type=float, default=20, help="run time of each overhead run (default 20)")
    ap.add_argument("--overhead-users", type=int, default=20, help="users of the overhead runs (default 20)")
    ap.add_argument("--prometheus", action="store_true",
                    help="also measure folioperf serving --prometheus, scraped every second, against folioperf (1c)")
    ap.add_argument("--trace", action="store_true", help="also measure folioperf --trace against folioperf (1d)")
    args = ap.parse_args()
    if min(args.rounds, args.users, args.overhead_users) < 1 or min(args.seconds, args.overhead_seconds) <= 0:
        ap.error("rounds, users and seconds must be positive")

    available = sorted(os.sched_getaffinity(0))
    locust_cpu, server_cpu = (available[0], available[1]) if len(available) >= 2 else (None, None)
    alternating: list[tuple[str, dict]] = []
    paired: list[dict[str, dict]] = []
    with_metrics: list[dict[str, dict]] = []
    with_trace: list[dict[str, dict]] = []
    with_trace_new_ids: list[dict[str, dict]] = []
    scraper = None
    with tempfile.TemporaryDirectory(prefix="folioperf-generator-bench-") as tmp:
        work = Path(tmp)
        server = OkapiServer(server_cpu)
        try:
            token = server.login()
            for n in range(args.rounds):
                for side in ("bare", "folioperf") if n % 2 == 0 else ("folioperf", "bare"):
                    figures = throughput([side], server, token, args.users, args.seconds, work / f"alone-{n}-{side}", locust_cpu)
                    alternating.append((side, figures[side]))
                paired.append(throughput(["bare", "folioperf"], server, token, args.users, args.seconds,
                                         work / f"paired-{n}", locust_cpu))
            if args.prometheus:
                scraper = Scraper(free_port(), work / "prometheus")
                for n in range(args.rounds):
                    sides = ["folioperf", PROMETHEUS_SIDE] if n % 2 == 0 else [PROMETHEUS_SIDE, "folioperf"]
                    with_metrics.append(throughput(sides, server, token, args.users, args.seconds,
                                                   work / f"metrics-{n}", locust_cpu, scraper))
            if args.trace:
                for n in range(args.rounds):
                    sides = ["folioperf", TRACE_SIDE] if n % 2 == 0 else [TRACE_SIDE, "folioperf"]
                    with_trace.append(throughput(sides, server, token, args.users, args.seconds, work / f"trace-{n}",
                                                 locust_cpu))
                    with_trace_new_ids.append(throughput(sides, server, token, args.users, args.seconds,
                                                         work / f"trace-new-ids-{n}", locust_cpu, new_ids=True))
            floor = idle_floor(server)
        finally:
            server.stop()
            if scraper is not None:
                scraper.stop()
        over = overhead(args.overhead_users, args.overhead_seconds, work / "overhead", args.trace)

    where = f"Locust on CPU {locust_cpu}, server on CPU {server_cpu}" if locust_cpu is not None else "one CPU: not pinned"
    print(f"1. GET /groups/{{id}} back to back from {args.users} users per Locust process, {args.seconds:g} s windows ({where})")
    print("   a. alternately, each process alone on its CPU")
    print("      side        requests/s  CPU   requests/CPU-s  server CPU  failures")
    for side, f in alternating:
        print(f"      {side:10} {f['rps']:11.0f} {f['cpu']:5.0%} {f['per_core']:16.0f} {f['server_cpu']:11.0%} {f['failures']:9}")
    best = {side: max(f["rps"] for s, f in alternating if s == side) for side in SIDES}
    print(f"      best requests/s: bare {best['bare']:.0f}, folioperf {best['folioperf']:.0f}, "
          f"ratio {best['folioperf'] / best['bare']:.3f}")
    print("   b. side by side, both processes at once on the same CPU")
    ratios = side_by_side(paired, "bare", "folioperf")
    ratio = statistics.median(ratios)
    print(f"   requests per core, folioperf/bare: {spread(ratios)}; goal >= 0.9: {'met' if ratio >= 0.9 else 'NOT met'}")
    metrics_ratio = None
    if with_metrics:
        assert scraper is not None
        print(f"   c. side by side on the same CPU: folioperf, and folioperf --prometheus scraped every "
              f"{SCRAPE_INTERVAL_S:g} s by {scraper.kind}")
        metrics_ratios = side_by_side(with_metrics, "folioperf", PROMETHEUS_SIDE)
        metrics_ratio = statistics.median(metrics_ratios)
        print(f"   requests per core, folioperf --prometheus / folioperf: {spread(metrics_ratios)}; goal >= 0.97: "
              f"{'met' if metrics_ratio >= 0.97 else 'NOT met'}")
    trace_ratios: list[float] = []
    new_ids_ratios: list[float] = []
    if with_trace:
        print("   d. side by side on the same CPU: folioperf, and folioperf --trace")
        trace_ratios = side_by_side(with_trace, "folioperf", TRACE_SIDE)
        trace_ratio = statistics.median(trace_ratios)
        print(f"   requests per core, folioperf --trace / folioperf: {spread(trace_ratios)}; goal >= 0.97: "
              f"{'met' if trace_ratio >= 0.97 else 'NOT met'}")
        print("   e. as d., with a new id in every request's path (each trace line unlike all before it)")
        new_ids_ratios = side_by_side(with_trace_new_ids, "folioperf", TRACE_SIDE)
        print(f"   requests per core, folioperf --trace / folioperf, a new id each request: {spread(new_ids_ratios)}")

    alone, pair = over["alone"], over["paired"]
    print(f"2. {GET_NAME} delayed {DELAY_MS:g} ms by the sandbox, {args.overhead_seconds:g} s per run; "
          "milliseconds over 50 ms, p50 / p99")
    print("      run                              requests  failures  client's figures   sandbox's trace   client - trace")
    rows = [(f"folioperf alone, {alone['users']} users", alone)]
    rows += [(f"{side}, side by side, {over['paired_users']} users", pair[side]) for side in SIDES]
    if "traced" in over:
        rows.append((f"{TRACE_SIDE} alone, {alone['users']} users", over["traced"]))
    for label, f in rows:
        print(f"      {label:33} {f['count']:8} {f['failures']:9}   {f['p50'] - DELAY_MS:6.2f} / {f['p99'] - DELAY_MS:6.2f}"
              f"   {f['sandbox'][0] - DELAY_MS:6.2f} / {f['sandbox'][1] - DELAY_MS:6.2f}   "
              f"{f['outside'][0]:6.2f} / {f['outside'][1]:6.2f}")
    print(f"   client's figures: folioperf's own (its histograms), the bare loop's exact from its samples; "
          f"folioperf alone, exact: {alone['client'][0] - DELAY_MS:.2f} / {alone['client'][1] - DELAY_MS:.2f}")
    print(f"   requests of the folioperf-alone run: the sandbox counted {alone['sandbox_count']}, folioperf {alone['count']} "
          "(the difference: requests cut off by the stop)")
    print(f"   this machine's floor, no generator involved: a 50 ms sleep wakes {floor['sleep_late'][0]:.2f} / "
          f"{floor['sleep_late'][1]:.2f} ms late; a loopback round trip after 50 ms idle takes "
          f"{floor['round_trip'][0]:.2f} / {floor['round_trip'][1]:.2f} ms")
    verdict = alone["p99"] - DELAY_MS
    print(f"   folioperf p99 - 50 ms = {verdict:.2f} ms (goal <= 2 ms: {'met' if verdict <= 2 else 'NOT met'}); "
          f"side by side: folioperf {pair['folioperf']['p99'] - DELAY_MS:.2f} ms, bare Locust "
          f"{pair['bare']['p99'] - DELAY_MS:.2f} ms")
    print(json.dumps({
        "bare_rps": round(best["bare"]), "folioperf_rps": round(best["folioperf"]),
        "ratio_per_core": round(ratio, 3), "ratios": [round(r, 3) for r in ratios],
        "folioperf_p50_over_ms": round(alone["p50"] - DELAY_MS, 2), "folioperf_p99_over_ms": round(verdict, 2),
        "sandbox_p99_over_ms": round(alone["sandbox"][1] - DELAY_MS, 2),
        "side_by_side_p99_over_ms": {side: round(pair[side]["p99"] - DELAY_MS, 2) for side in SIDES},
        "floor_sleep_late_p99_ms": round(floor["sleep_late"][1], 2),
        "floor_round_trip_p99_ms": round(floor["round_trip"][1], 2),
        "folioperf_requests": alone["count"], "sandbox_requests": alone["sandbox_count"],
        **({"prometheus_ratio_per_core": round(metrics_ratio, 3)} if metrics_ratio is not None else {}),
        **({"trace_ratio_per_core": round(statistics.median(trace_ratios), 3),
            "trace_ratios": [round(r, 3) for r in trace_ratios],
            "trace_new_ids_ratio_per_core": round(statistics.median(new_ids_ratios), 3),
            "trace_new_ids_ratios": [round(r, 3) for r in new_ids_ratios]} if trace_ratios else {}),
        **({"trace_p50_p99_over_ms": [round(over["traced"][q] - DELAY_MS, 2) for q in ("p50", "p99")]}
           if "traced" in over else {}),
    }))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "okapi-server":
        okapi_server()
    else:
        sys.exit(main())
