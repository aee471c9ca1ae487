"""deploy/: the Kubernetes manifests parse, their command lines are ones folioperf accepts, and the pieces fit
together (the worker key, the master's Service and ports, the scrape annotations, the NetworkPolicy's
selectors); the Grafana dashboard is a dashboard Grafana loads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tests.locust_process import folioperf

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"


def documents(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d is not None]


def kind(name: str, wanted: str) -> dict:
    (document,) = [d for d in documents(name) if d["kind"] == wanted]
    return document


def container(name: str, workload: str) -> dict:
    (only,) = kind(name, workload)["spec"]["template"]["spec"]["containers"]
    return only


def master_pod() -> dict:
    return kind("master.yaml", "Job")["spec"]["template"]


def worker_pod() -> dict:
    return kind("workers.yaml", "Deployment")["spec"]["template"]


def flag_value(args: list[str], flag: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in args if a.startswith(flag + "=")]
    return value


@pytest.mark.parametrize("path", sorted(DEPLOY.glob("*.yaml")), ids=lambda p: p.name)
def test_every_manifest_parses_into_named_kubernetes_objects(path):
    docs = documents(path.name)
    assert docs
    for doc in docs:
        assert doc["apiVersion"] and doc["kind"] and doc["metadata"]["name"], doc


def _help_flags(command: str) -> set[str]:
    proc = folioperf(command, "--help", timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", out))


@pytest.mark.parametrize("manifest, workload, command", [("master.yaml", "Job", "run"),
                                                         ("workers.yaml", "Deployment", "worker")])
def test_the_command_lines_are_folioperfs(manifest, workload, command):
    args = container(manifest, workload)["args"]
    assert args[0] == command
    flags = {a.split("=", 1)[0] for a in args[1:] if a.startswith("--")}
    assert flags <= _help_flags(command), flags - _help_flags(command)
    # the values parse too: $(VAR)s as the ConfigMap sets them, argparse checking every value before --help
    config = kind("configmap.yaml", "ConfigMap")["data"]
    resolved = [re.sub(r"\$\((\w+)\)", lambda m: config[m.group(1)], a) for a in args]
    proc = folioperf(*resolved, "--help", timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_workers_reach_the_master_through_its_service_and_prove_the_same_key():
    master, worker = container("master.yaml", "Job"), container("workers.yaml", "Deployment")
    service = kind("master.yaml", "Service")
    assert flag_value(worker["args"], "--master-host") == service["metadata"]["name"]
    assert service["spec"]["selector"] == master_pod()["metadata"]["labels"]
    assert flag_value(master["args"], "--master-bind-host") == "0.0.0.0"  # the default, 127.0.0.1, shuts them out
    key = [e["valueFrom"]["secretKeyRef"] for c in (master, worker) for e in c["env"] if e["name"] == "FOLIOPERF_WORKER_KEY"]
    assert len(key) == 2 and key[0] == key[1]


def test_the_metrics_port_is_served_annotated_and_on_the_service():
    master = container("master.yaml", "Job")
    host, port = flag_value(master["args"], "--prometheus").rsplit(":", 1)
    assert host == "0.0.0.0"
    annotations = master_pod()["metadata"]["annotations"]
    assert annotations == {"prometheus.io/scrape": "true", "prometheus.io/port": port, "prometheus.io/path": "/metrics"}
    (named,) = [p for p in master["ports"] if p["containerPort"] == int(port)]
    service_ports = {p["targetPort"]: p["port"] for p in kind("master.yaml", "Service")["spec"]["ports"]}
    assert service_ports[named["name"]] == int(port)


def test_the_network_policy_admits_workers_to_the_master_port_and_prometheus_to_the_metrics():
    policy = kind("networkpolicy.yaml", "NetworkPolicy")["spec"]
    assert policy["podSelector"]["matchLabels"] == master_pod()["metadata"]["labels"]
    assert policy["policyTypes"] == ["Ingress"]
    workers_rule, metrics_rule = policy["ingress"]
    assert workers_rule["from"] == [{"podSelector": {"matchLabels": worker_pod()["metadata"]["labels"]}}]
    master_ports = {p["containerPort"] for p in container("master.yaml", "Job")["ports"]}
    locust_port = next(p for p in container("master.yaml", "Job")["ports"] if p["name"] == "master")["containerPort"]
    assert [p["port"] for p in workers_rule["ports"]] == [locust_port]
    metrics_port = int(master_pod()["metadata"]["annotations"]["prometheus.io/port"])
    assert [p["port"] for p in metrics_rule["ports"]] == [metrics_port] and master_ports == {locust_port, metrics_port}
    (source,) = metrics_rule["from"]  # one entry: the namespace AND the pods' labels
    assert set(source) == {"namespaceSelector", "podSelector"}


def test_the_grafana_dashboard_is_one_grafana_loads():
    dashboard = json.loads((DEPLOY / "grafana" / "folioperf-dashboard.json").read_text())
    assert dashboard["schemaVersion"] >= 36 and dashboard["uid"] and dashboard["title"]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    titles = " | ".join(p["title"] for p in dashboard["panels"])
    for view in ("50th, 75th and 95th", "slower than 100 ms at the 75th", "Failures", "Users"):
        assert view in titles
    for panel in dashboard["panels"]:
        assert set(panel["gridPos"]) == {"h", "w", "x", "y"} and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        assert panel["type"] in ("timeseries", "table", "stat")
        for target in [panel, *panel["targets"]]:  # the Prometheus the user picks, not one of this machine
            assert target["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert all(t["expr"] and t["refId"] for t in panel["targets"])
