"""Where a run's server metrics come from: `--server-metrics SOURCE`, one of

    sandbox                      the built-in sandbox's processes and its PostgreSQL (the default with the sandbox)
    prometheus:URL               a Prometheus: cAdvisor, node_exporter and postgres_exporter series, through the
                                 queries of --server-metrics-queries FILE (default: folioperf's, prometheus.toml)
    cloudwatch[:KEY=VALUE,...]   AWS CloudWatch: ECS services and RDS instances; keys cluster=NAME (default: every
                                 cluster's services), services=A+B, db=ID+ID (default: every instance), region=R
                                 (default: AWS's own configuration); credentials the AWS way, never here
    none                         nothing (the default against your FOLIO)
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from folioperf.errors import FolioperfError
from folioperf.servers.collector import Source

NONE, SANDBOX, PROMETHEUS, CLOUDWATCH = "none", "sandbox", "prometheus", "cloudwatch"
CLOUDWATCH_KEYS = ("cluster", "services", "db", "region")
EXAMPLES = "sandbox, prometheus:http://127.0.0.1:9090, cloudwatch, cloudwatch:cluster=NAME,db=ID or none"


@dataclass(frozen=True)
class Choice:
    kind: str
    url: str | None = None  # Prometheus
    params: dict[str, str] = field(default_factory=dict)  # CloudWatch


def parse(text: str) -> Choice:
    """The source a --server-metrics value names; ValueError with the reason when it names none."""
    raw = str(text).strip()
    kind, _, rest = raw.partition(":")
    kind = kind.lower()
    if kind in (NONE, SANDBOX) and not rest:
        return Choice(kind)
    if kind == PROMETHEUS:
        parts = urlsplit(rest)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{raw!r}: give Prometheus' address as prometheus:http://HOST:PORT")
        try:
            parts.port  # noqa: B018  (raises on a port that is no number)
        except ValueError:
            raise ValueError(f"{raw!r}: the port of Prometheus' address is not a number") from None
        return Choice(PROMETHEUS, url=rest.rstrip("/"))
    if kind == CLOUDWATCH:
        params: dict[str, str] = {}
        for item in filter(None, (p.strip() for p in rest.split(","))):
            key, eq, value = item.partition("=")
            if not eq or key not in CLOUDWATCH_KEYS or not value:
                raise ValueError(f"{raw!r}: {item!r} is not KEY=VALUE with KEY one of {', '.join(CLOUDWATCH_KEYS)}")
            params[key] = value
        return Choice(CLOUDWATCH, params=params)
    raise ValueError(f"{raw!r} is no source of server metrics: give {EXAMPLES}")


def source_option(text: str) -> str:
    """--server-metrics's type: the text, once it names a source (it travels as text)."""
    try:
        parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return str(text).strip()


def check(text: str | None, queries: str | None, sandbox: bool) -> None:
    """Before anything starts: the choice fits the target, its extra is installed, its queries file reads."""
    choice = parse(text) if text else Choice(SANDBOX if sandbox else NONE)
    if choice.kind == SANDBOX and not sandbox:
        raise FolioperfError("--server-metrics sandbox measures the built-in sandbox; against your FOLIO give "
                             "prometheus:URL or cloudwatch")
    if queries and choice.kind != PROMETHEUS:
        raise FolioperfError("--server-metrics-queries is for --server-metrics prometheus:URL")
    if choice.kind == CLOUDWATCH:
        from folioperf.servers.cloudwatch import boto3_or_error  # noqa: PLC0415  (boto3: only for this source)

        boto3_or_error()
    if choice.kind == PROMETHEUS:
        from folioperf.servers.prometheus import load_queries  # noqa: PLC0415

        load_queries(queries)


def make_source(text: str | None, *, queries: str | None = None, dsn: str | None = None,
                sandbox_pid: int | None = None) -> Source | None:
    """The source a run's options choose (None: no server metrics); FolioperfError for a choice that cannot be."""
    choice = parse(text) if text else Choice(SANDBOX if sandbox_pid else NONE)
    check(text, queries, bool(sandbox_pid))
    if choice.kind == SANDBOX:
        from folioperf.servers.sandbox import SandboxSource  # noqa: PLC0415

        assert sandbox_pid is not None
        return SandboxSource(sandbox_pid, dsn)
    if choice.kind == PROMETHEUS:
        from folioperf.servers.prometheus import PrometheusSource  # noqa: PLC0415

        assert choice.url is not None
        return PrometheusSource(choice.url, queries)
    if choice.kind == CLOUDWATCH:
        from folioperf.servers.cloudwatch import CloudWatchSource  # noqa: PLC0415

        return CloudWatchSource(**choice.params)
    return None
