"""Server metrics from a Prometheus: each query of the queries file (folioperf's prometheus.toml, or the user's
--server-metrics-queries FILE) asked over Prometheus' HTTP API (/api/v1/query_range), on a grid of multiples of
the step, so the same window gives the same points whoever asks and when."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import requests

from folioperf.errors import FolioperfError
from folioperf.servers.collector import Point, SourceError, grid
from folioperf.servers.series import METRICS

DEFAULT_QUERIES = "prometheus.toml"
TIMEOUT_S = 10.0
DEFAULT_STEP_S = 15.0


@dataclass(frozen=True)
class Query:
    metric: str
    promql: str
    unit: str
    by: str | None


@dataclass(frozen=True)
class Queries:
    path: str  # as the user named it ("folioperf's" for the default)
    rate: str
    items: tuple[Query, ...]


def default_queries() -> str:
    """folioperf's queries file, as shipped."""
    return files("folioperf.servers").joinpath(DEFAULT_QUERIES).read_text(encoding="utf-8")


def load_queries(path: str | None) -> Queries:
    """The queries file; a missing or malformed one is one FolioperfError line naming what is wrong."""
    if path is None:
        text, name = default_queries(), "folioperf's"
    else:
        name = path
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise FolioperfError(f"cannot read the queries file {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FolioperfError(f"queries file {name} is not valid TOML: {exc}") from None
    rate = data.pop("rate", "1m")
    items = []
    for metric, entry in data.items():
        if metric not in METRICS:
            raise FolioperfError(f"queries file {name}: {metric!r} is no metric folioperf reports "
                                 f"(they are {', '.join(METRICS)})")
        if not isinstance(entry, dict) or not str(entry.get("query", "")).strip() or not entry.get("unit"):
            raise FolioperfError(f"queries file {name}: [{metric}] needs `query` and `unit`")
        promql = str(entry["query"]).strip().replace("$rate", str(rate))
        items.append(Query(metric, promql, str(entry["unit"]), entry.get("by")))
    if not items:
        raise FolioperfError(f"queries file {name} holds no query")
    return Queries(name, str(rate), tuple(items))


def without_credentials(url: str) -> str:
    """A URL as the results may show it: no user or password."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))



class PrometheusSource:
    default_step_s = DEFAULT_STEP_S
    settle_s = 0.0

    def __init__(self, url: str, queries: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.queries = load_queries(queries)
        self.name = f"prometheus {without_credentials(self.url)}"
        self.units = {q.metric: q.unit for q in self.queries.items}
        self._session = requests.Session()

    def check(self, at: float) -> list[str]:
        """Each query asked once, at `at`: one line for an unreachable Prometheus, else one per failing or empty
        query."""
        problems = []
        for q in self.queries.items:
            try:
                found = self._ask("query", {"query": q.promql, "time": at})
            except SourceError as exc:
                if isinstance(exc.__cause__, requests.RequestException):
                    return [str(exc)]
                problems.append(str(exc))
                continue
            if not found:
                problems.append(f"query {q.metric} of the queries file {self.queries.path} returned nothing from "
                                f"{without_credentials(self.url)}: the report has no {q.metric}")
        return problems

    def fetch(self, start: float, end: float, step: float) -> Iterable[Point]:
        span = grid(start, end, step)
        if span is None:
            return []
        points = []
        for q in self.queries.items:
            for series in self._ask("query_range", {"query": q.promql, "start": span[0], "end": span[1],
                                                    "step": step}):
                subject = series["metric"].get(q.by or "", METRICS[q.metric].kind)
                points += [(q.metric, subject, float(at), float(value)) for at, value in series["values"]]
        return points

    def _ask(self, path: str, params: dict) -> list[dict]:
        where = without_credentials(self.url)
        try:
            response = self._session.get(f"{self.url}/api/v1/{path}", params=params, timeout=TIMEOUT_S)
        except requests.RequestException as exc:
            raise SourceError(f"Prometheus at {where} cannot be reached ({type(exc).__name__}): "
                              "the run goes on without server metrics") from exc
        try:
            answer = response.json()
        except ValueError:
            raise SourceError(f"{where} answered HTTP {response.status_code} without Prometheus' JSON: is it "
                              "Prometheus' address?") from None
        if answer.get("status") != "success":
            query = params.get("query", "")
            metric = next((q.metric for q in self.queries.items if q.promql == query), query)
            raise SourceError(f"query {metric} of the queries file {self.queries.path}: Prometheus says "
                              f"{answer.get('errorType', '')}: {answer.get('error', response.status_code)}")
        return answer["data"]["result"]

    def close(self) -> None:
        self._session.close()
