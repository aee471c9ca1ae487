"""--server-metrics cloudwatch against moto's server mode (AWS's APIs on loopback, over real HTTP): ECS services
and an RDS instance with metrics put in minute by minute; `folioperf server-metrics` over a finished run's window
and the report's tables hold exactly those minutes' figures. boto3 missing is one line naming the extra."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta, timezone

import boto3
import pytest
import requests

from folioperf.errors import FolioperfError
from folioperf.report.compare import build_comparison, compare_runs
from folioperf.report.runs import load_runs
from folioperf.report.servers import fmt_value
from folioperf.report.tables import build_report
from folioperf.servers import sources
from tests.locust_process import folioperf, free_port, wait_for
from tests.report.conftest import write_run

CLUSTER, DB = "fse-lotus", "db-lotus-1"
SERVICES = ("mod-circulation", "mod-inventory-storage", "okapi-b")
MINUTES = 40
MIB = 1_048_576


def ecs_cpu(service: str, minute: int) -> float:
    return {"mod-circulation": 40.0 + minute % 5, "mod-inventory-storage": 100.0 + 2 * minute,
            "okapi-b": 456.0}[service]


def ecs_memory(service: str, minute: int) -> float:
    return {"mod-circulation": 62.0, "mod-inventory-storage": 118.0 + minute / 10, "okapi-b": 64.0}[service]


def rds(metric: str, minute: int) -> float:
    return {"CPUUtilization": 16.0 + minute * 0.25, "DatabaseConnections": 344.0 + minute,
            "FreeableMemory": (8192.0 - 10 * minute) * MIB}[metric]


@pytest.fixture(scope="module")
def aws(tmp_path_factory):
    """moto's server on a free loopback port, with a cluster of three FOLIO services, an RDS instance, another
    cluster's service, and MINUTES of their metrics from `t0`; the environment AWS's clients read."""
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with open(log, "wb") as out:
        server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                  stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert server.poll() is None, log.read_text()[-2000:]
        try:
            return requests.get(f"{url}/moto-api/", timeout=2).ok
        except requests.ConnectionError:
            return False

    wait_for(up, "moto's server")
    env = {"AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "eu-west-1", "AWS_CONFIG_FILE": "/dev/null",
           "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}
    session = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name="eu-west-1")
    ecs = session.client("ecs", endpoint_url=url)
    for cluster, names in ((CLUSTER, SERVICES), ("other", ("mod-search",))):
        ecs.create_cluster(clusterName=cluster)
        ecs.register_task_definition(family=f"{cluster}-task",
                                     containerDefinitions=[{"name": "app", "image": "folio", "memory": 512}])
        for name in names:
            ecs.create_service(cluster=cluster, serviceName=name, taskDefinition=f"{cluster}-task", desiredCount=0)
    session.client("rds", endpoint_url=url).create_db_instance(
        DBInstanceIdentifier=DB, DBInstanceClass="db.r6g.xlarge", Engine="postgres", MasterUsername="folio",
        MasterUserPassword="not-a-secret", AllocatedStorage=100)
    cloudwatch = session.client("cloudwatch", endpoint_url=url)
    t0 = (datetime.now(timezone.utc) - timedelta(hours=2)).replace(second=0, microsecond=0)
    data = []
    for minute in range(MINUTES):
        at = t0 + timedelta(minutes=minute)
        for name in (*SERVICES, "mod-search"):
            dims = [{"Name": "ClusterName", "Value": "other" if name == "mod-search" else CLUSTER},
                    {"Name": "ServiceName", "Value": name}]
            cpu = 5.0 if name == "mod-search" else ecs_cpu(name, minute)
            memory = 5.0 if name == "mod-search" else ecs_memory(name, minute)
            data.append(("AWS/ECS", {"MetricName": "CPUUtilization", "Dimensions": dims, "Timestamp": at,
                                     "Value": cpu}))
            data.append(("AWS/ECS", {"MetricName": "MemoryUtilization", "Dimensions": dims,
                                     "Timestamp": at, "Value": memory}))
        for metric in ("CPUUtilization", "DatabaseConnections", "FreeableMemory"):
            data.append(("AWS/RDS", {"MetricName": metric, "Timestamp": at, "Value": rds(metric, minute),
                                     "Dimensions": [{"Name": "DBInstanceIdentifier", "Value": DB}]}))
    for namespace in ("AWS/ECS", "AWS/RDS"):
        items = [d for ns, d in data if ns == namespace]
        for first in range(0, len(items), 20):
            cloudwatch.put_metric_data(Namespace=namespace, MetricData=items[first: first + 20])
    yield env, t0
    server.terminate()
    server.wait(timeout=30)


def rows(table) -> dict[tuple[str, str], list[str]]:
    return {(r[0].text, r[1].text): [c.text for c in r[2:]] for r in table.rows}


def collect(run, env, spec=f"cloudwatch:cluster={CLUSTER},db={DB}"):
    return folioperf("server-metrics", str(run), "--server-metrics", spec, timeout=120, **env)


def test_ecs_services_and_the_rds_instance_as_the_ptfs_tables(aws, tmp_path):
    env, t0 = aws
    start = t0 + timedelta(minutes=5, seconds=20)  # its minutes: 6 to 35 (the grid of whole minutes inside it)
    run = write_run(tmp_path / "results", {("Transaction", "Check-in"): [500.0]}, users=20, start=start,
                    duration_s=30 * 60)
    done = collect(run, env)
    assert done.returncode == 0 and done.stderr == "", done.stdout + done.stderr
    minutes = range(6, 36)
    doc = build_report(load_runs([run]))

    def avg_max(values: list[float], metric: str) -> list[str]:
        return [fmt_value(sum(values) / len(values), metric), fmt_value(max(values), metric)]

    assert rows(doc.table("Service CPU utilization (% of the service's reserved CPU)")) == {
        ("20 users", s): avg_max([ecs_cpu(s, m) for m in minutes], "module_cpu") for s in SERVICES}
    assert rows(doc.table("Service memory utilization (% of the service's reserved memory)")) == {
        ("20 users", s): avg_max([ecs_memory(s, m) for m in minutes], "module_memory_percent") for s in SERVICES}
    assert rows(doc.table("Database")) == {("20 users", DB): [
        *avg_max([rds("CPUUtilization", m) for m in minutes], "db_cpu"),
        *avg_max([rds("DatabaseConnections", m) for m in minutes], "db_connections"),
        fmt_value(rds("FreeableMemory", 35) / MIB, "db_freeable_memory_mb"),
        fmt_value((rds("FreeableMemory", 6) - rds("FreeableMemory", 35)) / MIB, "db_freeable_memory_mb")]}
    # as seed 004's connections "from 344 to 383"
    assert rows(doc.table("Database"))[("20 users", DB)][2:4] == ["364.5", "379"]


def test_every_cluster_and_instance_by_default_and_compare_per_module(aws, tmp_path):
    env, t0 = aws
    base = write_run(tmp_path / "base", {("Transaction", "Check-in"): [500.0]}, users=8, start=t0, duration_s=600)
    new = write_run(tmp_path / "new", {("Transaction", "Check-in"): [500.0]}, users=8,
                    start=t0 + timedelta(minutes=20), duration_s=600)
    for run in (base, new):
        done = collect(run, env, "cloudwatch")
        assert done.returncode == 0 and done.stderr == "", done.stderr
    report = rows(build_report(load_runs([base])).table("Service CPU utilization (% of the service's reserved CPU)"))
    assert {s for _, s in report} == {*SERVICES, "mod-search"}  # the other cluster's service too
    doc = build_comparison(compare_runs(load_runs([base]), load_runs([new])))
    table = rows(doc.table("Service CPU utilization (% of the service's reserved CPU)"))
    b, n = (sum(100.0 + 2 * m for m in range(k, k + 11)) / 11 for k in (0, 20))
    assert table[("8 users", "mod-inventory-storage")] == [fmt_value(b, "module_cpu"), fmt_value(n, "module_cpu"),
                                                         f"{(b - n) / b * 100:.2f}%"]
    assert table[("8 users", "okapi-b")][2] == "0.00% ≈"


def test_a_cluster_without_the_service_asked_for_is_one_line(aws, tmp_path):
    env, t0 = aws
    run = write_run(tmp_path / "results", {("Transaction", "Check-in"): [500.0]}, start=t0, duration_s=300)
    done = collect(run, env, f"cloudwatch:cluster={CLUSTER},services=mod-circulation+mod-users,db={DB}")
    assert done.returncode == 0
    assert done.stderr.splitlines() == [f"folioperf: {run.name}: ECS cluster {CLUSTER} has no service mod-users"]
    modules = rows(build_report(load_runs([run])).table("Service CPU utilization (% of the service's reserved CPU)"))
    assert {s for _, s in modules} == {"mod-circulation"}


def test_without_boto3_cloudwatch_is_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "boto3", None)  # as where folioperf was installed without the extra
    with pytest.raises(FolioperfError) as caught:
        sources.check("cloudwatch", None, sandbox=False)
    assert str(caught.value) == "--server-metrics cloudwatch needs boto3: pip install 'folioperf[cloudwatch]'"
    with pytest.raises(FolioperfError, match=r"pip install 'folioperf\[cloudwatch\]'"):
        sources.make_source("cloudwatch:region=eu-west-1")
