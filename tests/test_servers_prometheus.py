"""--server-metrics prometheus:URL against Debian's Prometheus.

1. A real Prometheus scraping a real node_exporter and a real postgres_exporter pointed at the run's PostgreSQL,
   during a `folioperf run` of the holds workflow: the report shows the database's CPU and connections over the
   run and the host's CPU.
2. A real Prometheus holding recorded series shaped as cAdvisor's for FOLIO modules on Kubernetes (backfilled with
   `promtool tsdb create-blocks-from openmetrics`): `folioperf server-metrics` over a finished run's window, and the
   report's per-module tables equal what Prometheus computes with the same queries over the same grid; the module
   whose memory grows is flagged, the one with a spike is not; `compare` gives each module's delta.
3. A Prometheus that does not answer, or a query that returns nothing, is one line at the start; the run goes on.
"""

from __future__ import annotations

import math
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest
import requests

from folioperf import results
from folioperf.report import markdown
from folioperf.report.compare import build_comparison, compare_runs, fmt_pct
from folioperf.report.runs import load_runs
from folioperf.report.servers import fmt_value
from folioperf.report.tables import build_report
from folioperf.servers.prometheus import load_queries
from tests.locust_process import SEEDS_FULL_HOLDS, WORKFLOWS, folioperf, free_port, only_results, wait_for
from tests.report.conftest import write_run
from tests.test_prometheus import PrometheusServer

STEP = 60
MIB = 1_048_576


def rows(table) -> dict[tuple[str, str], list[str]]:
    """A Servers table's rows by (users, subject)."""
    return {(r[0].text, r[1].text): [c.text for c in r[2:]] for r in table.rows}


# -- 2. cAdvisor-shaped series of FOLIO modules, backfilled -------------------------------------------------

def cpu_cores(pod: str, t: float, t0: float) -> float:
    """Each container's CPU use at time t (cores): mod-circulation's first pod busier in the second hour."""
    hour = (t - t0) // 3600
    return {"mod-circulation-7d9f8c6b5d-x2x7k": 0.30 + (0.2 if hour == 1 else 0.0),
            "mod-circulation-7d9f8c6b5d-b8q4z": 0.25,
            "mod-inventory-storage-6b7c8d9f5a-q1w2e": 1.1 + 0.4 * math.sin((t - t0) / 900),
            "okapi-0": 4.5, "mod-users-5f6d7c8b9a-abcde": 0.35, "coredns-5d78c9869d-zzzzz": 0.05}[pod]


def memory_mib(pod: str, t: float, t0: float, t1: float) -> float:
    """mod-inventory-storage grows from 500 to 800 MiB over the window; okapi spikes to 1,800 MiB for 40 minutes
    of its second hour and comes back."""
    if pod.startswith("mod-inventory-storage"):
        return 500 + 300 * (t - t0) / (t1 - t0)
    if pod == "okapi-0":
        return 1800 if 4200 <= t - t0 < 6600 else 1200
    return {"mod-circulation-7d9f8c6b5d-x2x7k": 600, "mod-circulation-7d9f8c6b5d-b8q4z": 650,
            "mod-users-5f6d7c8b9a-abcde": 300, "coredns-5d78c9869d-zzzzz": 20}[pod]


CONTAINERS = [  # (namespace, pod, container, memory limit MiB): the kubelet's cAdvisor labels
    ("folio", "mod-circulation-7d9f8c6b5d-x2x7k", "mod-circulation", 1024),
    ("folio", "mod-circulation-7d9f8c6b5d-b8q4z", "mod-circulation", 1024),
    ("folio", "mod-inventory-storage-6b7c8d9f5a-q1w2e", "mod-inventory-storage", 0),
    ("folio", "okapi-0", "okapi", 0),
    ("folio", "mod-users-5f6d7c8b9a-abcde", "app", 0),  # a container not named after its module: the pod is
    ("kube-system", "coredns-5d78c9869d-zzzzz", "coredns", 170),  # no FOLIO module
]


def openmetrics(t0: float, t1: float) -> str:
    """The series as cAdvisor exposes them, every 15 s from t0 to t1, plus the pause containers and the pods'
    own cgroups (container "", image ""), which the queries must leave out."""
    times = range(int(t0), int(t1) + 1, 15)
    lines = ["# TYPE container_cpu_usage_seconds counter"]
    for ns, pod, container, _ in CONTAINERS:
        labels = f'namespace="{ns}",pod="{pod}",container="{container}",image="registry/{container}:1"'
        total = 0.0
        for t in times:
            total += cpu_cores(pod, t, t0) * 15
            lines.append(f"container_cpu_usage_seconds_total{{{labels}}} {total:.3f} {t}")
        for other, image, share in (("POD", "registry/pause:3.9", 0.01), ("", "", 1.0)):
            labels = f'namespace="{ns}",pod="{pod}",container="{other}",image="{image}"'
            lines += [f"container_cpu_usage_seconds_total{{{labels}}} {share * (t - t0):.3f} {t}" for t in times]
    lines.append("# TYPE container_memory_working_set_bytes gauge")
    for ns, pod, container, _ in CONTAINERS:
        labels = f'namespace="{ns}",pod="{pod}",container="{container}",image="registry/{container}:1"'
        lines += [f"container_memory_working_set_bytes{{{labels}}} {memory_mib(pod, t, t0, t1) * MIB:.0f} {t}"
                  for t in times]
    lines.append("# TYPE container_spec_memory_limit_bytes gauge")
    for ns, pod, container, limit in CONTAINERS:
        labels = f'namespace="{ns}",pod="{pod}",container="{container}",image="registry/{container}:1"'
        lines += [f"container_spec_memory_limit_bytes{{{labels}}} {limit * MIB} {t}" for t in times]
    return "\n".join(lines + ["# EOF"]) + "\n"


@pytest.fixture(scope="module")
def recorded(prometheus, promtool, tmp_path_factory):
    """A Prometheus over 3 h 20 min of backfilled cAdvisor series ending ten minutes ago."""
    directory = tmp_path_factory.mktemp("recorded")
    t1 = (time.time() // STEP) * STEP - 600
    t0 = t1 - 3 * 3600 - 1200
    (directory / "series.om").write_text(openmetrics(t0, t1))
    made = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(directory / "series.om"),
                           str(directory / "tsdb")], capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-2000:]
    server = PrometheusServer(prometheus, {}, directory, tsdb=directory / "tsdb")
    yield server, t0, t1
    server.stop()


def run_over(root: Path, start: float, seconds: float, users: int = 20) -> Path:
    """A finished run's results directory (its time window is what matters here)."""
    return write_run(root, {("Transaction", "Check-in"): [500.0, 600.0]}, users=users,
                     start=datetime.fromtimestamp(start, timezone.utc), duration_s=seconds)


def over_grid(server: PrometheusServer, promql: str, start: float, end: float, fn: str) -> dict[str, float]:
    """`fn`_over_time of the query over the step grid folioperf asks for: the multiples of STEP in [start, end]."""
    first, last = math.ceil(start / STEP) * STEP, math.floor(end / STEP) * STEP
    window = int(last - first + STEP // 2)  # from first, whether the range's start is in it (Prometheus 2) or not (3)
    found = server.query(f"{fn}_over_time(({promql})[{window}s:{STEP}s])", at=last)
    return {r["metric"].get("module", ""): float(r["value"][1]) for r in found}


@pytest.mark.long_run(20)
def test_module_tables_equal_what_promql_gives_for_recorded_cadvisor_series(recorded, tmp_path):
    server, t0, t1 = recorded
    start = t0 + 600 + 7  # not on the grid: the first instant asked for is the next minute
    seconds = 3 * 3600 + 180
    run = run_over(tmp_path / "results", start, seconds)
    done = folioperf("server-metrics", str(run), "--server-metrics", f"prometheus:{server.url}",
                     "--server-metrics-step", f"{STEP}s", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    # the queries of series these recorded ones lack (node_exporter's, postgres_exporter's) said so, one line each
    said = done.stderr.splitlines()
    assert sorted(line.split("query ", 1)[1].split(" ")[0] for line in said) == [
        "db_connections", "db_cpu", "db_freeable_memory_mb", "host_cpu"], said
    assert all("returned nothing" in line for line in said)
    res = results.load(run)
    assert res.server is not None and res.server.step_s == STEP
    doc = build_report(load_runs([run]))
    queries = {q.metric: q.promql for q in load_queries(None).items}
    end = start + seconds
    for title, metric in (("Service CPU utilization (% of one core)", "module_cpu"),
                          ("Service memory (MB)", "module_memory_mb"),
                          ("Service memory utilization (% of the memory limit)", "module_memory_percent")):
        avg = over_grid(server, queries[metric], start, end, "avg")
        peak = over_grid(server, queries[metric], start, end, "max")
        table = rows(doc.table(title))
        assert table == {("20 users", m): [fmt_value(avg[m], metric), fmt_value(peak[m], metric)] for m in avg}, title
        for module in avg:  # the stored summary is Prometheus' own figure, not only its rounding
            summary = res.server.summary(metric, module)
            assert summary.avg == pytest.approx(avg[module], rel=1e-9)
            assert summary.max == pytest.approx(peak[module], rel=1e-9)
    # the FOLIO modules and nothing else, their replicas added up
    cpu = rows(doc.table("Service CPU utilization (% of one core)"))
    assert {m for _, m in cpu} == {"mod-circulation", "mod-inventory-storage", "okapi", "mod-users"}
    assert float(cpu[("20 users", "mod-circulation")][0]) == pytest.approx(55 + 20 / 3, abs=1.5)
    assert float(cpu[("20 users", "okapi")][0]) == pytest.approx(450, abs=1)
    assert rows(doc.table("Service memory utilization (% of the memory limit)")) == {
        ("20 users", "mod-circulation"): ["61", "61"]}  # 1,250 of 2,048 MiB: only its containers have a limit
    # three hours: memory per hour, the growing module flagged, the spike not
    trend = doc.table("Service memory hour by hour — 20 users (MB)")
    verdicts = {r[0].text: r[-1].text for r in trend.rows}
    assert verdicts == {"mod-inventory-storage": "grows", "okapi": "steady", "mod-circulation": "steady",
                        "mod-users": "steady"}
    html_charts = [c.title for s in doc.sections if s.title == "Servers" for c in s.charts]
    assert {"Service CPU utilization — 20 users", "Service memory — 20 users"} <= set(html_charts)
    assert "| 20 users | mod-inventory-storage |" in markdown.render(doc)


def test_compare_gives_each_modules_delta(recorded, tmp_path):
    server, t0, _ = recorded
    first = run_over(tmp_path / "base", t0 + 600, 1800)
    last = run_over(tmp_path / "new", t0 + 600 + 2 * 3600, 1800)
    for run in (first, last):
        done = folioperf("server-metrics", str(run), "--server-metrics", f"prometheus:{server.url}",
                         "--server-metrics-step", f"{STEP}s", timeout=120)
        assert done.returncode == 0, done.stderr
    doc = build_comparison(compare_runs(load_runs([first]), load_runs([last])))
    query = next(q.promql for q in load_queries(None).items if q.metric == "module_memory_mb")
    base = over_grid(server, query, t0 + 600, t0 + 2400, "avg")
    new = over_grid(server, query, t0 + 600 + 7200, t0 + 2400 + 7200, "avg")
    table = rows(doc.table("Service memory (MB)"))
    growing = table[("20 users", "mod-inventory-storage")]
    assert growing[:2] == [fmt_value(base["mod-inventory-storage"], "module_memory_mb"),
                           fmt_value(new["mod-inventory-storage"], "module_memory_mb")]
    expected = (base["mod-inventory-storage"] - new["mod-inventory-storage"]) / base["mod-inventory-storage"] * 100
    assert growing[2] == fmt_pct(expected) and expected < -5  # it uses more: a negative delta, beyond the margin
    assert table[("20 users", "mod-circulation")][2] == "0.00% ≈"


# -- 1. a run with node_exporter and postgres_exporter -------------------------------------------------------

class Exporter:
    """A Debian exporter on a free loopback port, until stopped."""

    def __init__(self, program: str, directory: Path, *args: str, **env: str) -> None:
        self.address = f"127.0.0.1:{free_port()}"
        self.log = directory / f"{Path(program).name}.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen([program, f"--web.listen-address={self.address}", *args],
                                            stdout=log, stderr=subprocess.STDOUT, env={"PATH": "/usr/bin:/bin", **env})
        wait_for(self.ready, f"{program} to answer")

    def ready(self) -> bool:
        assert self.process.poll() is None, self.log.read_text()[-2000:]
        try:
            return requests.get(f"http://{self.address}/metrics", timeout=5).status_code == 200
        except requests.ConnectionError:
            return False

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.mark.long_run(40)
@SEEDS_FULL_HOLDS
def test_a_run_reports_the_database_cpu_and_connections_and_the_hosts_cpu(
        prometheus, prometheus_node_exporter, prometheus_postgres_exporter, run_dsn, tmp_path):
    node = Exporter(prometheus_node_exporter, tmp_path, "--collector.disable-defaults", "--collector.cpu",
                    "--collector.meminfo")
    dsn = psycopg.conninfo.make_conninfo(run_dsn, sslmode="disable")
    pg = Exporter(prometheus_postgres_exporter, tmp_path, DATA_SOURCE_NAME=dsn)
    server = PrometheusServer(prometheus, {"node": node.address, "postgres": pg.address}, tmp_path)
    try:
        # two scrapes of each before the run, so that rate() has data from its first instant
        wait_for(lambda: server.values("count_over_time(up[1m]) >= 2 and up == 1", "job").keys() >= {("node",),
                                                                                                    ("postgres",)},
                 "Prometheus to scrape both exporters")
        proc = folioperf("run", "holds", "--users", "4", "--spawn-rate", "4", "--duration", "20s",
                         "--server-metrics", f"prometheus:{server.url}", "--server-metrics-step", "2s",
                         cwd=tmp_path, timeout=300, FOLIOPERF_DB=run_dsn)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
        res = only_results(tmp_path / "results")
        server_metrics = res.server
        assert server_metrics is not None and server_metrics.source == f"prometheus {server.url}"
        # every default query without cAdvisor's series said so, once, at the start
        said = [line for line in proc.stderr.splitlines() if "server metrics:" in line]
        assert len(said) == 3 and all("returned nothing" in line for line in said), said
        assert {line.split("query ", 1)[1].split(" ")[0] for line in said} == {
            "module_cpu", "module_memory_mb", "module_memory_percent"}
        # over the run: a point every 2 s from its start to its end
        for metric in ("db_cpu", "db_connections", "db_freeable_memory_mb", "host_cpu"):
            (subject,) = server_metrics.subjects(metric)
            assert subject == "127.0.0.1", metric
            times = [t for t, _ in server_metrics.series(metric, subject)]
            assert times[0] - res.run.start.timestamp() <= 2 and res.run.end.timestamp() - times[-1] <= 4, metric
            assert all(b - a == 2 for a, b in zip(times, times[1:])), metric
            assert len(times) >= 10
        connections = [v for _, v in server_metrics.series("db_connections", "127.0.0.1")]
        assert min(connections) >= 1  # the sandbox's pools, dbmon and the exporter's own
        assert all(0 <= v <= 100 for m in ("db_cpu", "host_cpu") for _, v in server_metrics.series(m, "127.0.0.1"))
        doc = build_report(load_runs([res.path]))
        database = rows(doc.table("Database"))
        (cells,) = database.values()
        summary = {m: server_metrics.summary(m, "127.0.0.1") for m in ("db_cpu", "db_connections")}
        assert cells[:4] == [fmt_value(summary["db_cpu"].avg, "db_cpu"), fmt_value(summary["db_cpu"].max, "db_cpu"),
                             fmt_value(summary["db_connections"].avg, "db_connections"),
                             fmt_value(summary["db_connections"].max, "db_connections")]
        assert list(rows(doc.table("Host CPU utilization (% of the host's CPUs)"))) == [("4 users", "127.0.0.1")]
        charts = {c.title for s in doc.sections if s.title == "Servers" for c in s.charts}
        assert {"Database CPU — 4 users", "Database connections — 4 users", "Host CPU utilization — 4 users"} <= charts
    finally:
        server.stop()
        pg.stop()
        node.stop()


# -- 3. nothing to ask ---------------------------------------------------------------------------------------

def test_a_prometheus_that_does_not_answer_is_one_line_and_the_run_goes_on(tmp_path):
    gone = f"http://127.0.0.1:{free_port()}"
    proc = folioperf("run", str(WORKFLOWS / "browse.py"), "--users", "2", "--duration", "4s",
                     "--server-metrics", f"prometheus:{gone}", cwd=tmp_path, timeout=150)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    said = [line for line in lines if "server metrics" in line]
    assert len(said) == 1 and said[0].endswith(f"WARNING/folioperf: server metrics: Prometheus at {gone} cannot be "
                                               "reached (ConnectionError): the run goes on without server metrics")
    assert lines.index(said[0]) < next(i for i, line in enumerate(lines) if "browse against" in line)  # at the start
    res = only_results(tmp_path / "results")
    assert res.entry("Transaction", "Browse").count > 0
    doc = build_report(load_runs([res.path]))
    servers = next(s for s in doc.sections if s.title == "Servers")
    assert f"Server metrics: Prometheus at {gone} cannot be reached (ConnectionError): the run goes on without " \
           "server metrics" in servers.paragraphs
