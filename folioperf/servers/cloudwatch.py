"""Server metrics from AWS CloudWatch, the PTF's own source: each ECS service's CPUUtilization and
MemoryUtilization (AWS/ECS, by ClusterName and ServiceName: the service is the FOLIO module), each RDS
instance's CPUUtilization, DatabaseConnections and FreeableMemory (AWS/RDS, by DBInstanceIdentifier), through
boto3's GetMetricData at the step's period (a multiple of CloudWatch's minute).

Credentials, region and endpoint come from AWS's own configuration (environment, ~/.aws, an instance or pod
role), never from folioperf's command line. boto3 is the optional extra folioperf[cloudwatch]."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from folioperf.errors import FolioperfError
from folioperf.servers.collector import Point, SourceError, grid

EXTRA = "folioperf[cloudwatch]"
DEFAULT_STEP_S = 60.0
SETTLE_S = 300.0  # CloudWatch publishes a minute or more late: the last five minutes are fetched again
MAX_QUERIES = 500  # GetMetricData's limit per call
ECS = (("CPUUtilization", "module_cpu", 1.0), ("MemoryUtilization", "module_memory_percent", 1.0))
RDS = (("CPUUtilization", "db_cpu", 1.0), ("DatabaseConnections", "db_connections", 1.0),
       ("FreeableMemory", "db_freeable_memory_mb", 1 / 1_048_576))


class CloudWatchSource:
    default_step_s = DEFAULT_STEP_S
    settle_s = SETTLE_S
    units = {"module_cpu": "% of the service's reserved CPU", "module_memory_percent": "% of the service's reserved "
             "memory", "db_cpu": "% of the instance's CPU", "db_connections": "connections",
             "db_freeable_memory_mb": "MB"}

    def __init__(self, cluster: str | None = None, services: str | None = None, db: str | None = None,
                 region: str | None = None) -> None:
        boto3, self._errors = boto3_or_error()
        self._session = boto3.Session(region_name=region)
        self.cluster = cluster
        self.services = services.split("+") if services else None
        self.db = db.split("+") if db else None
        self.name = "cloudwatch" + (f" {self._session.region_name}" if self._session.region_name else "")
        self._targets: list[tuple[str, str, dict[str, str], str, str, float]] | None = None

    def _client(self, service: str) -> Any:
        try:
            return self._session.client(service)
        except self._errors.NoRegionError:
            raise SourceError("CloudWatch: no AWS region is configured: set AWS_REGION (or AWS_DEFAULT_REGION) or "
                              "give cloudwatch:region=R") from None

    def _call(self, what: str, call: Any, **kwargs: Any) -> Any:
        try:
            return call(**kwargs)
        except self._errors.NoCredentialsError:
            raise SourceError("CloudWatch: no AWS credentials found (environment, ~/.aws or an instance role): "
                              "the run goes on without server metrics") from None
        except (self._errors.EndpointConnectionError, self._errors.ConnectTimeoutError) as exc:
            raise SourceError(f"CloudWatch cannot be reached ({exc}): the run goes on without server metrics") from None
        except self._errors.ClientError as exc:
            error = exc.response.get("Error", {})
            raise SourceError(f"CloudWatch: {what}: {error.get('Code', '')}: {error.get('Message', exc)}") from None
        except self._errors.BotoCoreError as exc:
            raise SourceError(f"CloudWatch: {what}: {exc}") from None

    def _pages(self, client: Any, operation: str, key: str, what: str, **kwargs: Any) -> list:
        found: list = []
        paginator = client.get_paginator(operation)
        pages = self._call(what, lambda **kw: list(paginator.paginate(**kw)), **kwargs)
        for page in pages:
            found += page.get(key, [])
        return found

    def _discover(self) -> list[str]:
        """The ECS services and RDS instances to ask for, and a line for each kind that has none."""
        problems = []
        ecs = self._client("ecs")
        clusters = [self.cluster] if self.cluster else [
            arn.rsplit("/", 1)[-1] for arn in self._pages(ecs, "list_clusters", "clusterArns", "listing ECS clusters")]
        targets = []
        for cluster in clusters:
            names = [arn.rsplit("/", 1)[-1] for arn in
                     self._pages(ecs, "list_services", "serviceArns", f"listing the services of ECS cluster {cluster}",
                                 cluster=cluster)]
            if self.services:
                missing = sorted(set(self.services) - set(names))
                if missing:
                    problems.append(f"ECS cluster {cluster} has no service {', '.join(missing)}")
                names = [n for n in names if n in self.services]
            for name in names:
                for metric, key, scale in ECS:
                    targets.append(("AWS/ECS", metric, {"ClusterName": cluster, "ServiceName": name}, key, name, scale))
        if not any(t[0] == "AWS/ECS" for t in targets):
            where = f"ECS cluster {self.cluster}" if self.cluster else "any ECS cluster"
            problems.append(f"CloudWatch: no ECS service in {where} of {self.name}: no module's CPU or memory")
        rds = self._client("rds")
        instances = self.db or [d["DBInstanceIdentifier"] for d in
                                self._pages(rds, "describe_db_instances", "DBInstances", "listing RDS instances")]
        for instance in instances:
            for metric, key, scale in RDS:
                targets.append(("AWS/RDS", metric, {"DBInstanceIdentifier": instance}, key, instance, scale))
        if not instances:
            problems.append(f"CloudWatch: no RDS instance in {self.name}: no database CPU or connections")
        self._targets = targets
        return problems

    def check(self, at: float) -> list[str]:
        try:
            problems = self._discover()
        except SourceError as exc:
            return [str(exc)]
        cloudwatch = self._client("cloudwatch")
        for namespace, dimension in (("AWS/ECS", "ServiceName"), ("AWS/RDS", "DBInstanceIdentifier")):
            wanted = {t[4] for t in self._targets or () if t[0] == namespace}
            if not wanted:
                continue
            try:
                listed = self._pages(cloudwatch, "list_metrics", "Metrics", f"listing {namespace} metrics",
                                     Namespace=namespace, MetricName="CPUUtilization")
            except SourceError as exc:
                return problems + [str(exc)]
            have = {d["Value"] for m in listed for d in m.get("Dimensions", ()) if d["Name"] == dimension}
            for subject in sorted(wanted - have):
                problems.append(f"CloudWatch holds no {namespace} CPUUtilization of {subject}: it returns nothing")
        return problems

    def fetch(self, start: float, end: float, step: float) -> Iterable[Point]:
        if self._targets is None:
            self._discover()
        period = max(60, round(step / 60) * 60)
        span = grid(start, end, period)
        if span is None or not self._targets:
            return []
        cloudwatch = self._client("cloudwatch")
        points: list[Point] = []
        for first in range(0, len(self._targets), MAX_QUERIES):
            batch = self._targets[first: first + MAX_QUERIES]
            queries = [{"Id": f"m{first + i}", "ReturnData": True, "MetricStat": {
                "Metric": {"Namespace": ns, "MetricName": metric,
                           "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()]},
                "Period": period, "Stat": "Average"}} for i, (ns, metric, dims, *_rest) in enumerate(batch)]
            results = self._pages(cloudwatch, "get_metric_data", "MetricDataResults", "reading metrics",
                                  MetricDataQueries=queries, ScanBy="TimestampAscending",
                                  StartTime=_utc(span[0]), EndTime=_utc(span[1] + 1))
            for result in results:
                _ns, _metric, _dims, key, subject, scale = self._targets[int(result["Id"][1:])]
                for at, value in zip(result.get("Timestamps", ()), result.get("Values", ())):
                    points.append((key, subject, at.timestamp(), value * scale))
        return points

    def close(self) -> None:
        pass


def boto3_or_error() -> tuple[Any, Any]:
    """boto3 and botocore's exceptions, or one line naming the extra that installs them."""
    try:
        import boto3  # noqa: PLC0415  (an optional extra, only for this source)
        import botocore.exceptions  # noqa: PLC0415
    except ImportError:
        raise FolioperfError(f"--server-metrics cloudwatch needs boto3: pip install '{EXTRA}'") from None
    return boto3, botocore.exceptions


def _utc(at: float) -> datetime:
    return datetime.fromtimestamp(at, timezone.utc)
