"""--prometheus: the master (or the one local process) serves live metrics in Prometheus' format.

Real Locust runs (plain `locust -f`, with --processes, in the web UI) of users that fire known samples: the
counts and every cumulative bucket scraped equal what was fired, during the run and at its end; a real
Prometheus server (Debian's) scrapes a 2-worker `folioperf run` of a real workflow against the sandbox, and
what it holds at the end is the results directory's; bad addresses and a port in use are one line."""

from __future__ import annotations

import importlib.util
import json
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from folioperf import results
from folioperf.histogram import bucket_of
from folioperf.metrics import PERCENTILES, Metrics
from folioperf.prometheus import BOUND_RATIO, BOUNDS_US, histogram_buckets
from tests.locust_process import SEEDS_FULL_HOLDS, WORKFLOWS, clean_env, folioperf, folioperf_command, free_port, results_in, wait_for

FIXTURES = Path(__file__).parent / "fixtures" / "metrics"
SYNTHETIC = FIXTURES / "synthetic_locustfile.py"
DASHBOARD = Path(__file__).resolve().parents[1] / "deploy" / "grafana" / "folioperf-dashboard.json"
_spec = importlib.util.spec_from_file_location("metrics_samples", FIXTURES / "metrics_samples.py")
samples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(samples)
USERS = 10
# panels a closed-model run without failures or slow APIs fills (the others are checked as valid PromQL)
DASHBOARD_PANELS_WITH_DATA = {"Run", "Users", "Throughput", "Transactions: 50th, 75th and 95th percentile",
                              "Transactions (whole test)", "Load generators' CPU"}


def recorded_us(ms: float) -> int:
    """A response time as folioperf records it (whole µs)."""
    return max(int(ms * 1000.0 + 0.5), 0)


# -- the bounds and the exact cumulative counts -----------------------------------------------------------

def test_bounds_end_hdr_buckets_and_grow_by_at_most_5_percent():
    assert BOUNDS_US[0] <= 100 and BOUNDS_US[-1] >= 600_000_000
    for low, high in zip(BOUNDS_US, BOUNDS_US[1:]):
        assert low < high <= low * BOUND_RATIO
    for bound in BOUNDS_US:  # the next microsecond starts an HDR bucket: none straddles a bound
        assert bucket_of(bound + 1) == bound + 1 and bucket_of(bound) <= bound


@pytest.mark.parametrize("name", sorted(samples.distributions()))
def test_cumulative_counts_are_exact_and_put_each_percentile_in_a_5_percent_bucket(name):
    values = samples.distributions()[name]
    metrics = Metrics()
    for value in values:
        metrics.record("GET", name, value)
    (tally,) = metrics.totals().values()
    pairs = histogram_buckets(tally.buckets)
    recorded = sorted(recorded_us(v) for v in values)
    assert pairs[-1] == ("+Inf", len(values))
    bounds = [round(float(le) * 1e6) for le, _ in pairs[:-1]]
    counts = [count for _, count in pairs[:-1]]
    for bound, count in zip(bounds, counts):
        assert count == sum(1 for us in recorded if us <= bound), bound
    # from the bound below the fastest sample (none there: nothing below it to interpolate from) to the
    # first at or above the slowest, consecutive bounds of the whole series
    assert counts[0] == 0 or bounds[0] == BOUNDS_US[0]
    assert counts[-1] == len(values) and (len(counts) < 2 or counts[-2] < len(values))
    start = BOUNDS_US.index(bounds[0])
    assert bounds == list(BOUNDS_US[start:start + len(bounds)])
    # histogram_quantile interpolates inside the first bucket whose count reaches q·n: folioperf's own
    # percentile lies in that bucket, (b_prev, b], so the two differ by at most b/b_prev - 1 <= 5 %
    entry = metrics.snapshot().entry("GET", name)
    for q in PERCENTILES:
        ours_us = entry.percentile(q) * 1000
        index = next(i for i, c in enumerate(counts) if c >= q * len(values))
        if index:
            assert bounds[index - 1] < ours_us <= bounds[index] + 0.5, (q, ours_us, bounds[index - 1], bounds[index])


# -- real Locust runs of known samples ----------------------------------------------------------------------

Series = dict[tuple[str, frozenset], float]


def parse(text: str) -> Series:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(series: Series, metric: str, **labels: str) -> float | None:
    return series.get((metric, frozenset(labels.items())))


def family_names(text: str) -> set[str]:
    """Every sample name the exposition declares, with or without samples (a histogram's _bucket/_sum/_count)."""
    names = set()
    for family in text_string_to_metric_families(text):
        suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "info": ("_info",)}
        names |= {family.name + s for s in suffixes.get(family.type, ("",))}
        names |= {s.name for s in family.samples}
    return names


@dataclass
class Scraped:
    returncode: int
    output: str
    mode: str = "local"
    scrapes: list[Series] = field(default_factory=list)
    last_text: str = ""


def logged(cmd: list[str], log: Path, **kwargs) -> subprocess.Popen:
    """A process whose output goes to `log` (a pipe nobody reads while it runs could fill up and stall it)."""
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, **kwargs)
    proc.log = log
    return proc


def output_of(proc: subprocess.Popen, timeout: float = 60.0) -> str:
    """What the process said, once it has ended."""
    proc.wait(timeout=timeout)
    return proc.log.read_text()


def scrape_until_exit(proc: subprocess.Popen, port: int, timeout: float = 60.0) -> Scraped:
    """GET /metrics every 0.2 s, on a fixed schedule as Prometheus scrapes (a busy machine's slow answer does not
    shift the next scrape, which the process would not take for a regular scraper), until the process has ended
    (it waits for one scrape after its test's end)."""
    done = Scraped(0, "")
    start = time.monotonic()
    deadline = start + timeout
    with requests.Session() as http:
        while proc.poll() is None:
            assert time.monotonic() < deadline, "the Locust process did not end"
            try:
                text = http.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            except requests.ConnectionError:
                pass  # not listening yet, or gone
            else:
                done.scrapes.append(parse(text))
                done.last_text = text
            time.sleep(0.2 - (time.monotonic() - start) % 0.2)
    done.output = output_of(proc)
    done.returncode = proc.returncode
    return done


def expected_totals() -> dict[tuple[str, str], dict]:
    totals: dict[tuple[str, str], dict] = {}
    for request_type, name, ms, outcome in samples.USER_EVENTS * USERS + [samples.STOP_EVENT] * USERS:
        t = totals.setdefault((request_type, name), {"us": [], "failures": 0, "expected": 0})
        t["us"].append(recorded_us(ms))
        t["failures"] += outcome == "failure"
        t["expected"] += outcome == "expected"
    return totals


def assert_counts_and_buckets(series: Series) -> None:
    """Every API's and transaction's counters and histogram in a scrape are exactly the known samples."""
    for (request_type, name), want in expected_totals().items():
        if request_type == "Transaction":
            prefix, labels, count = "folioperf_transaction", {"name": name}, "folioperf_transactions_total"
        else:
            prefix, labels, count = "folioperf_api", {"type": request_type, "name": name}, "folioperf_api_requests_total"
        n = len(want["us"])
        assert value(series, count, **labels) == n, (name, value(series, count, **labels), n)
        assert value(series, f"{prefix}_failures_total", **labels) == want["failures"], name
        assert value(series, f"{prefix}_expected_failures_total", **labels) == want["expected"], name
        assert value(series, f"{prefix}_latency_seconds_count", **labels) == n
        assert value(series, f"{prefix}_latency_seconds_sum", **labels) == pytest.approx(sum(want["us"]) / 1e6, abs=1e-6)
        buckets = {labels_["le"]: v for (sample, labels_set), v in series.items() if sample == f"{prefix}_latency_seconds_bucket"
                   for labels_ in [dict(labels_set)] if all(labels_.get(k) == x for k, x in labels.items())}
        assert buckets["+Inf"] == n
        lowest = min((le for le in buckets if le != "+Inf"), key=float)
        assert buckets[lowest] == 0 or round(float(lowest) * 1e6) == BOUNDS_US[0]  # nothing below to interpolate from
        for le, cumulative in buckets.items():
            if le != "+Inf":
                bound = round(float(le) * 1e6)
                assert cumulative == sum(1 for us in want["us"] if us <= bound), (name, le)


def synthetic_locust(tmp_path: Path, *args: str) -> subprocess.Popen:
    env = clean_env(FOLIOPERF_TEST_SNAPSHOT=str(tmp_path / "snapshots.jsonl"))
    return logged([sys.executable, "-m", "locust", "-f", str(SYNTHETIC), *args], tmp_path / "locust.log", cwd=FIXTURES,
                  env=env)


@pytest.fixture(scope="module", params=["local", "--processes 2"])
def synthetic_run(request, tmp_path_factory) -> Scraped:
    tmp_path = tmp_path_factory.mktemp("synthetic")
    port = free_port()
    extra = []
    if request.param != "local":  # a master port of its own: other tests' Locust masters run at the same time
        master = str(free_port())
        extra = [*request.param.split(), "--master-bind-port", master, "--master-port", master]
    proc = synthetic_locust(tmp_path, "--headless", "-u", str(USERS), "-r", "100", "-t", "3s", "--only-summary",
                            "--prometheus", str(port), *extra)
    try:
        scraped = scrape_until_exit(proc, port)
    finally:
        proc.kill()
    scraped.mode = request.param
    return scraped


def test_plain_locust_serves_live_metrics_that_end_at_the_exact_counts(synthetic_run):
    run = synthetic_run
    assert run.returncode == 1, run.output  # the known samples hold failures
    assert "Traceback" not in run.output
    running = [s for s in run.scrapes if value(s, "folioperf_test_running") == 1]
    assert running, "scraped while the test ran"
    final = run.scrapes[-1]
    assert value(final, "folioperf_test_running") == 0
    assert_counts_and_buckets(final)  # the last scrape, served after the test ended, has every sample
    # the STOP event is fired while the users stop: scrapes during the test saw less
    assert value(running[0], "folioperf_transactions_total", name="Stop") in (None, 0.0)
    assert max(sum(v for (n, _), v in s.items() if n == "folioperf_users") for s in run.scrapes) == USERS
    targets = {dict(labels)["group"]: v for (name, labels), v in final.items() if name == "folioperf_users_target"}
    users = {dict(labels)["group"] for s in run.scrapes for (name, labels), _ in s.items() if name == "folioperf_users"}
    assert sum(targets.values()) == USERS and set(targets) == users, targets  # per group, as folioperf_users
    (info,) = [dict(labels) for (name, labels), v in final.items() if name == "folioperf_run_info" and v == 1]
    assert info["workflow"] == "locust" and info["version"]
    if run.mode != "local":  # only the master serves (a worker listening too would have failed: port in use)
        assert max(value(s, "folioperf_workers") or 0 for s in run.scrapes) == 2
        assert "already in use" not in run.output


def test_the_dashboard_uses_only_metrics_the_exporter_serves(synthetic_run):
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", ())]
    exprs += [v["query"]["query"] if isinstance(v.get("query"), dict) else v.get("query", "")
              for v in dashboard["templating"]["list"] if v["type"] == "query"]
    used = {name for expr in exprs for name in _metric_names(expr)}
    assert used, "the dashboard queries folioperf's metrics"
    served = family_names(synthetic_run.last_text)
    assert used <= served, sorted(used - served)


def _metric_names(expr: str) -> set[str]:
    import re

    return set(re.findall(r"\b(?:folioperf|process)_[a-z_]+\b", expr))


def test_the_web_ui_run_is_served_before_during_and_after_its_test(tmp_path):
    port, web = free_port(), free_port()
    proc = synthetic_locust(tmp_path, "--web-host", "127.0.0.1", "--web-port", str(web), "--prometheus", str(port))
    metrics = f"http://127.0.0.1:{port}/metrics"
    try:
        with requests.Session() as http:
            def scrape() -> Series | None:
                try:
                    return parse(http.get(metrics, timeout=5).text)
                except requests.ConnectionError:
                    assert proc.poll() is None, output_of(proc)
                    return None

            before = wait_for(scrape, "the metrics before any test")
            assert value(before, "folioperf_test_running") == 0
            assert not [n for n, _ in before if n == "folioperf_api_requests_total"]
            started = http.post(f"http://127.0.0.1:{web}/swarm", data={"user_count": USERS, "spawn_rate": 100,
                                                                      "host": "http://127.0.0.1:9"}, timeout=10)
            assert started.json()["success"], started.text
            posts = sum(1 for e in samples.USER_EVENTS if e[0] == "POST") * USERS
            wait_for(lambda: (s := scrape()) and value(s, "folioperf_api_requests_total", type="POST",
                                                       name="POST /circulation/check-out-by-barcode") == posts,
                     "every user's samples, live")
            assert http.post(f"http://127.0.0.1:{web}/stop", timeout=10).json()["success"]
            final = wait_for(lambda: (s := scrape()) and value(s, "folioperf_test_running") == 0 and
                             value(s, "folioperf_transactions_total", name="Stop") == USERS and s, "the test's end")
            assert_counts_and_buckets(final)
            assert_counts_and_buckets(scrape())  # still served after the test's end
    finally:
        proc.send_signal(signal.SIGTERM)
        output = output_of(proc, timeout=30)
    assert "Traceback" not in output, output


def test_a_scrape_by_hand_is_not_waited_for(tmp_path):
    """One curl of /metrics is no Prometheus: before, the process waited 121 s at its end for it to come back."""
    port = free_port()
    proc = synthetic_locust(tmp_path, "--headless", "-u", str(USERS), "-r", "100", "-t", "2s", "--only-summary",
                            "--prometheus", str(port))
    try:
        def scrape() -> bool:
            try:
                return requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).ok
            except requests.ConnectionError:
                assert proc.poll() is None, output_of(proc)
                return False

        wait_for(scrape, "one scrape by hand")
        output = output_of(proc, timeout=60)  # a process that waited for a scraper would run into this deadline
    finally:
        proc.kill()
    assert proc.returncode == 1, output  # the known samples hold failures
    assert "for Prometheus" not in output and "Traceback" not in output, output


@pytest.mark.parametrize("rate, missed", [("5/s", False), ("200/s", True)])
def test_the_rate_status_is_the_runs(rate, missed, folio_sandbox, tmp_path):
    port = free_port()
    proc = logged(folioperf_command("run", str(WORKFLOWS / "browse.py"), "--users", "2", "--duration", "6s", "--rate", rate,
                            "--okapi-url", folio_sandbox.url, "--results", "out", "--prometheus", str(port)),
                  tmp_path / "run.log", cwd=tmp_path, env=clean_env(FOLIOPERF_PASSWORD="admin"))
    try:
        run = scrape_until_exit(proc, port, timeout=120)
    finally:
        proc.kill()
    (path,) = results_in(tmp_path / "out")
    res = results.load(path)
    assert res.run.flags.rate_missed is missed and run.returncode == (4 if missed else 0), run.output[-3000:]
    final = run.scrapes[-1]
    (scheduled,) = res.scheduled()
    assert value(final, "folioperf_rate_target_per_second", group="browse") == float(rate[:-2])
    assert value(final, "folioperf_rate_achieved_per_second", group="browse") == scheduled.rps
    assert value(final, "folioperf_rate_missed", group="browse") == int(missed)
    assert value(final, "folioperf_scheduled_iterations_total", name=scheduled.name) == scheduled.count


# -- a real Prometheus scraping a 2-worker run of a real workflow -----------------------------------------------

class PrometheusServer:
    """Debian's Prometheus, started here with a config of our own: every 1 s it scrapes `target` (job folioperf),
    or each job's target of a {job: target} mapping, or nothing; its TSDB in `tsdb` (default: directory/tsdb)."""

    def __init__(self, program: str, target: str | dict[str, str], directory: Path, tsdb: Path | None = None) -> None:
        jobs = {"folioperf": target} if isinstance(target, str) else target
        config = directory / "prometheus.yml"
        config.write_text("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n" + "".join(
            f"  - job_name: {job}\n    static_configs:\n      - targets: ['{address}']\n"
            for job, address in jobs.items()) if jobs else "global:\n  scrape_interval: 1s\n")
        self.url = f"http://127.0.0.1:{free_port()}"
        self.log = directory / "prometheus.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [program, f"--config.file={config}", f"--storage.tsdb.path={tsdb or directory / 'tsdb'}",
                 f"--web.listen-address={self.url.removeprefix('http://')}"], stdout=log, stderr=subprocess.STDOUT)
        wait_for(self.ready, "Prometheus to be ready", timeout=60)

    def ready(self) -> bool:
        assert self.process.poll() is None, self.log.read_text()[-2000:]
        try:
            return requests.get(self.url + "/-/ready", timeout=5).status_code == 200
        except requests.ConnectionError:
            return False

    def query(self, promql: str, at: float | None = None) -> list[dict]:
        params = {"query": promql, **({"time": at} if at is not None else {})}
        answer = requests.get(self.url + "/api/v1/query", params=params, timeout=10).json()
        assert answer["status"] == "success", (promql, answer)
        return answer["data"]["result"]

    def values(self, promql: str, *labels: str) -> dict[tuple[str, ...], float]:
        return {tuple(r["metric"].get(label, "") for label in labels): float(r["value"][1]) for r in self.query(promql)}

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.mark.long_run(35)
@SEEDS_FULL_HOLDS
def test_prometheus_holds_the_results_counts_of_a_two_worker_run(prometheus, run_dsn, tmp_path):
    port = free_port()
    server = PrometheusServer(prometheus, f"127.0.0.1:{port}", tmp_path)
    try:
        # holds at the PTF's think times finishes dozens of transactions in 20 s; a check-out takes 15-25 s, so a
        # 20 s check-in/check-out run may finish none and leave the transaction panels without data
        run = subprocess.run(folioperf_command("run", "holds", "--users", "8", "--workers", "2", "--duration", "20s",
                                               "--spawn-rate", "8", "--prometheus", str(port)),
                             cwd=tmp_path, capture_output=True, text=True, timeout=300,
                             env=clean_env(FOLIOPERF_PASSWORD="admin", FOLIOPERF_DB=run_dsn))
        assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
        # the master has gone: once a scrape failed, the one before it (of the final counts) is stored
        wait_for(lambda: server.values('up{job="folioperf"}') == {(): 0.0}, "Prometheus to see the master gone")
        (path,) = results_in(tmp_path / "results")
        res = results.load(path)
        assert sum(e.count for e in res.transactions()) >= 10, "too few transactions to check the transaction panels"
        last = "last_over_time({}[10m])"
        requests_ = server.values(last.format("folioperf_api_requests_total"), "type", "name")
        assert requests_ == {(e.type, e.name): e.count for e in res.apis()}
        failures = server.values(last.format("folioperf_api_failures_total"), "type", "name")
        assert failures == {(e.type, e.name): e.failures for e in res.apis()}
        assert server.values(last.format("folioperf_transactions_total"), "name") == \
            {(e.name,): e.count for e in res.transactions()}
        # scraped as it ran, not only at the end
        busiest = sorted(res.apis(), key=lambda e: -e.count)[:3]
        name = busiest[0].name
        assert server.values(f'count_over_time(folioperf_api_requests_total{{name="{name}"}}[10m])')[()] >= 10
        assert server.values(f'min_over_time(folioperf_api_requests_total{{name="{name}"}}[10m])')[()] < busiest[0].count
        # histogram_quantile over the final buckets: within 5 % of folioperf's own p95
        p95 = server.values("histogram_quantile(0.95, " + last.format("folioperf_api_latency_seconds_bucket") + ")",
                            "type", "name")
        for entry in busiest:
            assert p95[(entry.type, entry.name)] * 1000 == pytest.approx(entry.p95, rel=0.05), entry.name
        p95 = server.values("histogram_quantile(0.95, " + last.format("folioperf_transaction_latency_seconds_bucket")
                            + ")", "name")
        for entry in res.transactions():
            assert p95[(entry.name,)] * 1000 == pytest.approx(entry.p95, rel=0.05), entry.name
        assert server.values("max_over_time(folioperf_users[10m])", "group") == {("holds",): 8.0}
        assert server.values(last.format("folioperf_users_target"), "group") == {("holds",): 8.0}
        scraped_last = server.values("max_over_time(timestamp(folioperf_users_target)[10m:1s])")[()]
        info = server.query("folioperf_run_info", at=scraped_last)  # the labels as the last scrape had them
        assert [r["metric"]["workflow"] for r in info] == ["holds"]
        assert info[0]["metric"]["platform"] == res.run.target.platform
        assert info[0]["metric"]["release"] == (res.run.target.release or "")
        assert server.values("max_over_time(folioperf_workers[10m])") == {(): 2.0}
        # every query of the dashboard is valid PromQL to this Prometheus, and its main panels have data
        for panel in json.loads(DASHBOARD.read_text())["panels"]:
            for target in panel.get("targets", ()):
                expr = target["expr"].replace("$__rate_interval", "1m").replace("$__range", "10m")
                expr = expr.replace("$instance", ".*")
                answer = server.query(f"last_over_time(({expr})[10m:1s])")  # the run is over: its last values
                if panel["title"] in DASHBOARD_PANELS_WITH_DATA:
                    assert answer, (panel["title"], expr)
    finally:
        server.stop()


# -- bad input -----------------------------------------------------------------------------------------------

def folioperf_run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """`folioperf run` refusing its command line: it must not reach for a database, so it is given none that answers."""
    return folioperf("run", *args, cwd=cwd, timeout=60, FOLIOPERF_DB="postgresql://postgres@127.0.0.1:9/never")


@pytest.fixture()
def busy_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield sock.getsockname()[1]


@pytest.mark.parametrize("address, says", [
    ("99999", "argument --prometheus: '99999' is not a port number 1-65535"),
    ("host:", "argument --prometheus: 'host:' is not PORT or HOST:PORT"),
    ("host:http", "argument --prometheus: 'http' is not a port number 1-65535"),
    (":9646", "argument --prometheus: ':9646' is not PORT or HOST:PORT"),
    ("::1:9646", "argument --prometheus: '::1:9646': write an IPv6 address in brackets, e.g. [::1]:9646"),
    ("192.0.2.1:9646", "--prometheus 192.0.2.1:9646: cannot serve metrics there: 192.0.2.1 is not an address of "
                       "this machine"),
])
def test_a_bad_address_is_one_line_before_anything_starts(address, says, tmp_path):
    proc = folioperf_run(["holds", "-u", "2", "--prometheus", address], tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], proc.stderr


def test_a_port_in_use_is_one_line_before_anything_starts(busy_port, tmp_path):
    proc = folioperf_run(["holds", "-u", "2", "--prometheus", str(busy_port)], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"folioperf: error: --prometheus 127.0.0.1:{busy_port}: cannot serve metrics "
                                   f"there: port {busy_port} is already in use")


def test_the_web_ui_port_is_not_the_metrics_port(tmp_path):
    proc = folioperf_run(["holds", "-u", "2", "--web", "--web-port", "18089", "--prometheus", "18089"], tmp_path)
    assert proc.returncode == 2
    assert "--prometheus 127.0.0.1:18089: port 18089 is also the --web-port" in proc.stderr


def test_plain_locust_with_a_port_in_use_says_so_in_one_line(busy_port, tmp_path):
    proc = synthetic_locust(tmp_path, "--headless", "-u", "1", "-t", "2s", "--prometheus", f"127.0.0.1:{busy_port}")
    output = output_of(proc)
    assert proc.returncode == 2, output
    assert "Traceback" not in output
    said = [line for line in output.splitlines() if "--prometheus" in line]
    assert len(said) == 1 and said[0].endswith(f"cannot serve metrics there: port {busy_port} is already in use")
