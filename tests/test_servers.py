"""Server metrics (folioperf.servers): the sandbox's source against a real sandbox and its PostgreSQL, the
default of a `folioperf run` with workers (collected by the master alone), CPU time of processes that come and
go, the memory growth rule, and bad choices as one line."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
import requests

from folioperf.db import database_name
from folioperf.errors import FolioperfError
from folioperf.report.runs import load_runs
from folioperf.report.tables import build_report
from folioperf.servers.collector import Collector
from folioperf.servers.prometheus import load_queries
from folioperf.servers.sandbox import ProcessTree, SandboxSource
from folioperf.servers.series import ServerMetrics
from tests.locust_process import WORKFLOWS, folioperf, only_results, start_run

BROWSE = str(WORKFLOWS / "browse.py")


# -- the memory growth rule ---------------------------------------------------------------------------------

def hourly(values_per_hour: list[float]) -> ServerMetrics:
    """A module's memory at one value per hour (every minute), over as many hours."""
    start = datetime(2026, 11, 23, tzinfo=timezone.utc)
    server = ServerMetrics("test", 60, start, start + timedelta(hours=len(values_per_hour)))
    for hour, value in enumerate(values_per_hour):
        for minute in range(60):
            server.add("module_memory_mb", "mod-x", start.timestamp() + hour * 3600 + minute * 60, value)
    return server


@pytest.mark.parametrize("hours, grows", [
    ([500, 540, 580, 620], True),  # +24 %, never falling: it keeps growing
    ([500, 520, 530, 545], False),  # +9 %: below the flag
    ([500, 800, 505, 560], False),  # +12 %, but a spike that came back: not prolonged
    ([500, 560, 552, 600], True),  # a dip of 1.4 % is within the tolerance
    ([500, 560, 540, 600], False),  # a fall of 3.6 %: it bounced back
])
def test_memory_grows_when_the_last_hour_is_10_percent_up_and_no_hour_fell_back(hours, grows):
    (trend,) = hourly(hours).trends()
    assert trend.hours == tuple(float(h) for h in hours)
    assert trend.grows is grows
    assert trend.growth_pct == pytest.approx((hours[-1] - hours[0]) / hours[0] * 100)


def test_runs_under_two_hours_get_no_hourly_trend():
    assert hourly([500, 700]).trends() != [] and hourly([500]).trends() == []
    short = hourly([500, 700])
    short.end = short.start + timedelta(hours=1, minutes=29)  # the second hour is under half there
    assert short.trends() == []


# -- CPU time of a process tree -----------------------------------------------------------------------------

def test_a_process_tree_counts_the_cpu_of_children_that_ended():
    tree = ProcessTree(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]).pid)
    try:
        before, _ = tree.sample()
        # a grandchild that burns a CPU-second and ends (its parent reaps it) between two samples
        burner = "import time\nend = time.process_time() + 1\nwhile time.process_time() < end: pass"
        child = subprocess.Popen([sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, "
                                  f"'-c', {burner!r}]); import time; time.sleep(60)"])
        try:
            tree_of_child = ProcessTree(child.pid)
            deadline = time.monotonic() + 60
            while not tree_of_child.root.children() and time.monotonic() < deadline:
                time.sleep(0.05)
            while tree_of_child.root.children() and time.monotonic() < deadline:
                time.sleep(0.05)
            cpu, rss = tree_of_child.sample()
            assert cpu >= 0.95 and rss > 5
        finally:
            child.kill()
        after, _ = tree.sample()
        assert after - before < 0.5  # an idle tree
    finally:
        tree.root.kill()


# -- the sandbox's source ----------------------------------------------------------------------------------

def test_the_sandbox_source_measures_the_sandbox_and_its_postgresql(folio_sandbox, admin_token):
    collector = Collector(SandboxSource(folio_sandbox.process.pid, folio_sandbox.dsn), step_s=0.5)
    said: list[str] = []
    collector._say = said.append
    sandbox = ProcessTree(folio_sandbox.process.pid)  # the same CPU seconds, read here around the collection
    before, began = sandbox.sample()[0], time.monotonic()
    collector.start(datetime.now(timezone.utc))
    headers = folio_sandbox.headers(admin_token)
    with requests.Session() as http:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            assert http.get(f"{folio_sandbox.url}/users", params={"query": 'barcode=="none"'}, headers=headers,
                            timeout=30).status_code == 200
    data = collector.stop(datetime.now(timezone.utc))
    spent, took = sandbox.sample()[0] - before, time.monotonic() - began
    assert said == [] and data.notes == []
    assert data.metrics() == ["module_cpu", "module_memory_mb", "db_cpu", "db_connections"]
    assert data.subjects("module_cpu") == ["sandbox"] and data.subjects("db_cpu") == ["postgresql"]
    cpu = data.summary("module_cpu", "sandbox")
    assert cpu.samples >= 4 and cpu.max > 0
    # the average share of a core over the collection is the CPU time the sandbox's processes spent in it
    assert cpu.avg == pytest.approx(100 * spent / took, rel=0.3, abs=1.0)
    assert data.summary("db_cpu", "postgresql").max > 0  # its queries ran in PostgreSQL's backends
    assert data.summary("module_memory_mb", "sandbox").max > 20
    assert data.summary("db_connections", "postgresql").max >= 1


def test_a_sandbox_whose_process_is_gone_is_one_line(folio_sandbox):
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    collector = Collector(SandboxSource(ended.pid, folio_sandbox.dsn), step_s=60)
    said: list[str] = []
    collector._say = said.append
    collector.start(datetime.now(timezone.utc))
    data = collector.stop(datetime.now(timezone.utc))
    assert said == [f"server metrics: the sandbox's process {ended.pid} is not running: its CPU and memory are not "
                    "measured"]
    assert data.subjects("db_connections") == ["postgresql"]  # the rest is measured all the same


@pytest.mark.long_run(25)
def test_a_run_with_workers_collects_the_sandboxs_metrics_on_the_master_alone(run_dsn, tmp_path):
    proc = start_run([BROWSE, "--users", "4", "--spawn-rate", "4", "--duration", "10s", "--workers", "2",
                      "--server-metrics-step", "1s"], tmp_path, FOLIOPERF_DB=run_dsn)
    seen = set()
    with psycopg.connect(run_dsn, autocommit=True) as conn:
        while proc.poll() is None:  # the collector's connections to the sandbox's database, while the run goes
            seen.add(conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name = "
                                  "'folioperf-server-metrics'", (database_name(run_dsn),)).fetchone()[0])
            time.sleep(0.2)
    output = proc.stdout.read()
    assert proc.returncode == 0, output[-3000:]
    assert seen == {0, 1}  # one collector, the master's: none on the two workers
    res = only_results(tmp_path / "results")
    assert res.run.workers == 2 and res.server is not None and res.server.source == "sandbox"
    assert res.server.notes == []
    assert res.server.summary("module_cpu", "sandbox").max > 0
    assert res.server.summary("db_cpu", "postgresql").max > 0
    assert res.server.summary("module_cpu", "sandbox").samples >= 8
    doc = build_report(load_runs([res.path]))
    assert [r[1].text for r in doc.table("Service CPU utilization (% of one core)").rows] == ["sandbox"]
    assert [r[1].text for r in doc.table("Database").rows] == ["postgresql"]


# -- bad choices ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--server-metrics", "prom:9090"], "argument --server-metrics: 'prom:9090' is no source of server metrics: give "
                                        "sandbox, prometheus:http://127.0.0.1:9090, cloudwatch, "
                                        "cloudwatch:cluster=NAME,db=ID or none"),
    (["--server-metrics", "prometheus:127.0.0.1:9090"], "give Prometheus' address as prometheus:http://HOST:PORT"),
    (["--server-metrics", "cloudwatch:cluster"], "'cluster' is not KEY=VALUE with KEY one of cluster, services, db, "
                                                 "region"),
    (["--server-metrics", "sandbox", "--okapi-url", "http://127.0.0.1:9"],
     "--server-metrics sandbox measures the built-in sandbox; against your FOLIO give prometheus:URL or cloudwatch"),
    (["--server-metrics-queries", "queries.toml"], "--server-metrics-queries is for --server-metrics prometheus:URL"),
    (["--server-metrics", "prometheus:http://127.0.0.1:9", "--server-metrics-queries", "missing.toml"],
     "cannot read the queries file missing.toml: No such file or directory"),
    (["--server-metrics-step", "0s"], "invalid duration '0s': it must be longer than 0 s"),
])
def test_bad_choices_are_one_line_and_exit_2(args, message, tmp_path):
    proc = folioperf("run", BROWSE, "--users", "1", *args, cwd=tmp_path, timeout=60,
                     FOLIOPERF_DB="postgresql://postgres@127.0.0.1:9/never")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("text, message", [
    ("rate = '1m'\n[module_cpu]\nquery = 'up'\n", "queries file q.toml: [module_cpu] needs `query` and `unit`"),
    ("[module_cpus]\nquery = 'up'\nunit = '%'\n", "queries file q.toml: 'module_cpus' is no metric folioperf reports"),
    ("[module_cpu\n", "queries file q.toml is not valid TOML"),
    ("rate = '1m'\n", "queries file q.toml holds no query"),
])
def test_a_bad_queries_file_is_one_line(text, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.toml").write_text(text)
    with pytest.raises(FolioperfError) as caught:
        load_queries("q.toml")
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_the_default_queries_cover_every_metric_and_say_their_units():
    queries = load_queries(None)
    assert queries.path == "folioperf's" and queries.rate == "1m"
    assert {q.metric: q.unit for q in queries.items} == {
        "module_cpu": "% of one core", "module_memory_mb": "MB", "module_memory_percent": "% of the memory limit",
        "db_cpu": "% of the server's CPUs", "db_connections": "connections", "db_freeable_memory_mb": "MB",
        "host_cpu": "% of the host's CPUs"}
    assert all("$rate" not in q.promql for q in queries.items)


def test_a_prometheus_password_never_reaches_the_results():
    from folioperf.servers.prometheus import PrometheusSource

    source = PrometheusSource("https://folio:s3cret@prometheus.example.org:9090")
    assert source.name == "prometheus https://prometheus.example.org:9090"


def test_run_help_names_the_sources():
    proc = folioperf("run", "--help", timeout=60)
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "--server-metrics SOURCE" in text and "--server-metrics-step TIME" in text
    assert "--server-metrics-queries FILE" in text
    for source in ("sandbox (the default with the sandbox", "prometheus:URL", "cloudwatch[:cluster=NAME,db=ID]",
                   "none (the default against your FOLIO)"):
        assert source in text, source


def test_the_default_queries_print_as_a_file_to_adapt(tmp_path):
    proc = folioperf("server-metrics", "--default-queries", cwd=tmp_path, timeout=60)
    assert proc.returncode == 0 and proc.stderr == ""
    (tmp_path / "mine.toml").write_text(proc.stdout)
    assert load_queries(str(tmp_path / "mine.toml")).items == load_queries(None).items
