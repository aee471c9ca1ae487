"""Live metrics for Prometheus: with `--prometheus [HOST:]PORT` the master (or the one local process; never a
worker) serves Prometheus' exposition format at http://HOST:PORT/metrics from its start until it quits.

Every scrape reads the run as it is (`RunCollector`): the metrics merged from all workers so far
(`Metrics.totals()`), the users, the rate targets and the run's labels. Metric names:

    folioperf_api_requests_total{type, name}               API calls (type: the HTTP method; name: `GET /groups`)
    folioperf_api_failures_total{type, name}               ... that failed
    folioperf_api_expected_failures_total{type, name}      ... FOLIO refusals the workflow expects (not failures)
    folioperf_api_latency_seconds{type, name}              histogram of their response times
    folioperf_transactions_total{name}                     business transactions (`Check-out`), and likewise
    folioperf_transaction_failures_total{name}             their failures, expected failures and latency
    folioperf_transaction_expected_failures_total{name}
    folioperf_transaction_latency_seconds{name}
    folioperf_scheduled_iterations_total{name}             open model: iterations started on schedule, and their
    folioperf_scheduled_latency_seconds{name}              latency from the scheduled start (coordinated omission)
    folioperf_task_errors_total{name}                      tasks' exceptions outside any transaction
    folioperf_users{group}, folioperf_users_target{group}  users running (per user group) and asked for
    folioperf_rate_target_per_second{group}                open model: the target, the rate achieved so far in
    folioperf_rate_achieved_per_second{group}              this test, and whether it falls short (as the run's
    folioperf_rate_missed{group}                           `rate_missed` flag: below 95 % of the target)
    folioperf_test_running, folioperf_test_duration_seconds  a test under way; the seconds it has measured
    folioperf_workers, folioperf_worker_cpu_percent{worker}  master: workers connected, and their CPU
    folioperf_run_info{workflow, scenario, tag, platform, release, version}
    folioperf_scrape_cpu_seconds_total                     CPU spent producing these pages (their cost)
    process_*                                              the serving process (CPU seconds, memory)

In a scenario the group is part of the name (`CICO · Check-out`), as in the results. A new test (the web
UI's start) begins its counters at zero again, which Prometheus' rate() takes as a counter reset.

Latency buckets. The histograms' bounds are the ends of folioperf's own HdrHistogram buckets
(folioperf.histogram), so each cumulative count is exact: a bound is the last microsecond of an HDR bucket and
no HDR bucket straddles it. They form a geometric series of ratio at most 1.05 from 100 µs to 10 min (325
bounds). Why 1.05: histogram_quantile() interpolates within the bucket that holds the rank, and folioperf's
own percentile is a value of the HDR bucket holding the same rank, which lies inside that bucket; two values
in (b, 1.05·b] differ by less than 5 % of either, so histogram_quantile(0.95, ...) over a run's final counts
is within 5 % of folioperf's p95 whatever the distribution. Fewer, wider buckets would break that bound at
the top of a bucket; a finer series buys nothing the PTF's 5 % band can see and costs series.

A series shows the bounds from the one below its fastest sample (its count 0: nothing below it to
interpolate from) to the first at or above its slowest, then +Inf: an API answering in 1-400 ms has about
120, not 325. The range only widens during a test. Bounds that appear at its top when a slower sample comes
start at the full count, so a rate() window that spans their first scrape puts that sample in +Inf, whose
quantile is the highest bound: still within 5 % (bounds that appear at the bottom start at 0 and are exact).

The cost is the page: about 10 µs of the serving process's CPU per histogram line (prometheus_client's
text format, which Prometheus is always given: OpenMetrics costs a third more), so a check-in/check-out run
(35 series, ~4,000 lines) costs ~50 ms a scrape: 0.3 % of a core scraped every 15 s, 5 % every second. With
workers it is the master's CPU, not the load generators'. folioperf_scrape_cpu_seconds_total shows it.

The final counts. Locust quits soon after a test ends; a scrape a second later would find nobody. When a
scraper has been coming at a regular interval (`Exporter.scraper_interval`: at least 3 scrapes, most gaps
within half of their median, the last no more than two intervals ago), the process waits (at `quit`) until
one scrape that began after the end has been served, at most twice that interval plus a second
(at least LINGER_MIN_S, at most LINGER_MAX_S), so the last sample Prometheus holds is the results
directory's count. A scrape by hand (a curl or two) is no scraper: nothing waits for it to come back.
"""

from __future__ import annotations

import errno
import logging
import socket
import statistics
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from gevent.event import Event
from gevent.pywsgi import WSGIServer
from prometheus_client import CollectorRegistry, ProcessCollector, make_wsgi_app
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

from folioperf import __version__
from folioperf.errors import FolioperfError
from folioperf.histogram import SUB_BUCKET_BITS, bucket_of
from folioperf.metrics import ERROR, SCHEDULED, TRANSACTION, Tally, schedule_s
from folioperf.options import split_address
from folioperf.rates import RateStatus

if TYPE_CHECKING:
    from folioperf.folio_run import FolioRun

log = logging.getLogger("folioperf")

BOUND_RATIO = 1.05
LOWEST_BOUND_US = 100
HIGHEST_BOUND_US = 600_000_000
LINGER_MAX_S = 125.0  # a Prometheus scraping every minute gets its last scrape
LINGER_MIN_S = 5.0  # a scraper of every second or less, on a busy machine: its next scrape may come late
REGULAR_SCRAPES = 3  # fewer seen: scraped by hand, nobody to wait for
REGULAR_TOLERANCE = 0.5  # a gap within half of the median gap is on schedule (Prometheus jitters little)
_RECENT_SCRAPES = 6


def _bucket_end(us: int) -> int:
    """The last microsecond of the HDR bucket that holds `us`."""
    start = bucket_of(us)
    return start + (1 << max(start.bit_length() - SUB_BUCKET_BITS, 0)) - 1


def _bucket_end_at_or_below(us: int) -> int:
    """The largest last-microsecond of an HDR bucket that is ≤ `us`."""
    return us if _bucket_end(us) == us else bucket_of(us) - 1


def latency_bounds_us(lowest: int = LOWEST_BOUND_US, highest: int = HIGHEST_BOUND_US,
                      ratio: float = BOUND_RATIO) -> tuple[int, ...]:
    """The histograms' upper bounds in µs: HDR bucket ends, each at most `ratio` times the one before."""
    bounds = [lowest]
    while bounds[-1] < highest:
        bounds.append(_bucket_end_at_or_below(int(bounds[-1] * ratio)))
    return tuple(bounds)


BOUNDS_US = latency_bounds_us()
_BOUNDS = np.array(BOUNDS_US, dtype=np.int64)
_LE = tuple(floatToGoString(us / 1e6) for us in BOUNDS_US)


def histogram_buckets(buckets: Mapping[int, int]) -> list[tuple[str, int]]:
    """Prometheus' (le, cumulative count) pairs of an HDR-layout histogram {bucket's lowest µs: count}, +Inf
    last: exact, since every bound ends an HDR bucket; from the bound below its fastest sample to the first
    at or above its slowest (see the module docstring). numpy: a busy API has thousands of HDR buckets."""
    if not buckets:
        return [("+Inf", 0)]
    size = len(buckets)
    keys = np.fromiter(buckets, np.int64, size)  # a Histogram iterates its keys in C (its keys() view would not)
    index = np.searchsorted(_BOUNDS, keys)  # the first bound ≥ a bucket's lowest value is ≥ all of it
    per_bound = np.bincount(index, weights=np.fromiter(buckets.values(), np.float64, size),
                            minlength=len(_BOUNDS) + 1)  # float64 sums whole numbers exactly below 2**53
    cumulative = per_bound.cumsum().astype(np.int64).tolist()
    first, last = max(int(index.min()) - 1, 0), min(int(index.max()), len(_BOUNDS) - 1)
    return [*zip(_LE[first:last + 1], cumulative[first:last + 1]), ("+Inf", cumulative[-1])]


class _Kind:
    """The metric families of one kind of record (API calls, transactions, ...), filled entry by entry."""

    def __init__(self, prefix: str, count: str, what: str, labels: tuple[str, ...], failures: bool = True) -> None:
        self.count = CounterMetricFamily(count, f"{what} so far in this test", labels=labels)
        self.failures = self.expected = None
        if failures:
            self.failures = CounterMetricFamily(f"{prefix}_failures", f"{what} that failed", labels=labels)
            self.expected = CounterMetricFamily(f"{prefix}_expected_failures", f"{what} that ended in a FOLIO "
                                                "refusal the workflow expects (not failures)", labels=labels)
        self.latency = HistogramMetricFamily(f"{prefix}_latency_seconds", f"response times of {what}",
                                             labels=labels, unit="seconds")

    def add(self, values: list[str], tally: Tally) -> None:
        self.count.add_metric(values, tally.count)
        if self.failures is not None and self.expected is not None:
            self.failures.add_metric(values, tally.failures)
            self.expected.add_metric(values, tally.expected)
        self.latency.add_metric(values, histogram_buckets(tally.buckets), tally.sum_us / 1e6)

    def families(self) -> Iterator[Metric]:
        yield from (f for f in (self.count, self.failures, self.expected, self.latency) if f is not None)


class RunCollector:
    """A prometheus_client collector reading one FolioRun at each scrape."""

    def __init__(self, run: FolioRun, scrape_cpu: Callable[[], float] = lambda: 0.0) -> None:
        self.run = run
        self.scrape_cpu = scrape_cpu

    def collect(self) -> Iterator[Metric]:
        run = self.run
        metrics = run.metrics
        duration = metrics.duration_s()
        totals = metrics.totals()
        apis = _Kind("folioperf_api", "folioperf_api_requests", "API calls", ("type", "name"))
        transactions = _Kind("folioperf_transaction", "folioperf_transactions", "transactions", ("name",))
        scheduled = _Kind("folioperf_scheduled", "folioperf_scheduled_iterations", "open-model iterations from "
                          "their scheduled start", ("name",), failures=False)
        errors = CounterMetricFamily("folioperf_task_errors", "tasks' exceptions outside any transaction",
                                     labels=("name",))
        for (request_type, name), tally in sorted(totals.items()):
            if request_type == TRANSACTION:
                transactions.add([name], tally)
            elif request_type == SCHEDULED:
                scheduled.add([name], tally)
            elif request_type == ERROR:
                errors.add_metric([name], tally.count)
            else:
                apis.add([request_type, name], tally)
        yield from apis.families()
        yield from transactions.families()
        yield from scheduled.families()
        yield errors
        yield from self._users()
        yield from self._rates(totals, duration, metrics.scheduled_from())
        runner = run.environment.runner
        running = runner.state in ("spawning", "running") and run.test is not None and not run.test.ended
        yield GaugeMetricFamily("folioperf_test_running", "1 while a test runs", value=int(running))
        yield GaugeMetricFamily("folioperf_test_duration_seconds", "seconds this test has measured so far (its "
                                "requests/s and achieved rates are over these)", value=round(duration, 3))
        yield from self._workers()
        yield self._info()
        yield CounterMetricFamily("folioperf_scrape_cpu_seconds", "CPU seconds this process has spent producing "
                                  "these metrics (rate(): the share of a core they cost)", value=self.scrape_cpu())

    def _users(self) -> Iterator[Metric]:
        run = self.run
        runner = run.environment.runner
        master = getattr(runner, "clients", None) is not None
        by_class = runner.reported_user_classes_count if master else runner.user_classes_count
        groups = {cls.__name__: group.key for cls, group in run.groups.items()}
        users = GaugeMetricFamily("folioperf_users", "virtual users running", labels=("group",))
        per_group: dict[str, int] = {}
        for cls_name, count in by_class.items():
            key = groups.get(cls_name, cls_name)
            per_group[key] = per_group.get(key, 0) + count
        for key, count in sorted(per_group.items()):
            users.add_metric([key], count)
        yield users
        target = run.test.users_target if run.test is not None else getattr(runner, "target_user_count", 0) or 0
        targets = GaugeMetricFamily("folioperf_users_target", "virtual users asked for", labels=("group",))
        for key, count in sorted(_per_group(run.environment.user_classes, groups, target).items()):
            targets.add_metric([key], count)
        yield targets

    def _rates(self, totals: Mapping[tuple[str, str], Tally], duration: float,
               scheduled_from: Mapping[str, float]) -> Iterator[Metric]:
        target = GaugeMetricFamily("folioperf_rate_target_per_second", "open model: the target in iterations/s "
                                   "(whole run)", labels=("group",))
        achieved = GaugeMetricFamily("folioperf_rate_achieved_per_second", "open model: iterations/s started "
                                     "so far in this test", labels=("group",))
        missed = GaugeMetricFamily("folioperf_rate_missed", "open model: 1 when the rate so far is below 95 % of "
                                   "the target", labels=("group",))
        for group in self.run.groups.values():
            per_s = group.target_per_s()
            if per_s is None:
                continue
            prefix = group.label("")
            iterations = sum(t.count for (kind, name), t in totals.items() if kind == SCHEDULED and name.startswith(prefix))
            seconds = schedule_s(duration, scheduled_from, prefix)
            users = self.run.test.users_per_group.get(group.key, 0) if self.run.test is not None else 0
            status = (RateStatus.of(per_s, round(iterations / seconds, 3), users / seconds) if seconds > 0
                      else RateStatus.of(per_s, 0.0))
            target.add_metric([group.key], status.target_per_s)
            achieved.add_metric([group.key], status.achieved_per_s)
            missed.add_metric([group.key], int(status.missed))
        yield from (target, achieved, missed)

    def _workers(self) -> Iterator[Metric]:
        """On the master; declared without samples elsewhere, so every process serves the same families."""
        clients = getattr(self.run.environment.runner, "clients", None)
        present = [c for c in clients.values() if c.state != "missing"] if clients is not None else []  # STATE_MISSING
        workers = GaugeMetricFamily("folioperf_workers", "workers connected to the master")
        cpu = GaugeMetricFamily("folioperf_worker_cpu_percent", "each worker's CPU use as it last reported it",
                                labels=("worker",))
        if clients is not None:
            workers.add_metric([], len(present))
        for client in present:
            cpu.add_metric([client.id], client.cpu_usage)
        yield from (workers, cpu)

    def _info(self) -> Metric:
        run = self.run
        target = run.test.target if run.test is not None else None
        info = InfoMetricFamily("folioperf_run", "what runs: workflow (or scenario), tag, the target's platform "
                                "and FOLIO release")
        info.add_metric([], {
            "workflow": run.workflow_name, "scenario": run.scenario_name or "", "tag": run.settings.tag or "",
            "platform": target.platform if target else "", "release": (target.release or "") if target else "",
            "version": __version__,
        })
        return info


def listen(address: str) -> socket.socket:
    """A listening socket at a `prometheus_address`; a taken port or a foreign address is one clear line."""
    host, port = split_address(address)
    try:
        family, kind, proto, _, where = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                           flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise FolioperfError(f"--prometheus {address}: unknown host {host!r} ({exc.strerror})") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # not for a port in use: only TIME_WAIT
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no delayed-ACK stalls on keep-alive scrapes
        sock.bind(where)
        sock.listen(64)
    except OSError as exc:
        sock.close()
        reason = {errno.EADDRINUSE: f"port {port} is already in use",
                  errno.EADDRNOTAVAIL: f"{host} is not an address of this machine",
                  errno.EACCES: f"no permission to listen on port {port}"}.get(exc.errno or 0, exc.strerror or str(exc))
        raise FolioperfError(f"--prometheus {address}: cannot serve metrics there: {reason}") from None
    return sock


def _per_group(classes: Iterable[Any], groups: Mapping[str, str], target: int) -> dict[str, int]:
    """`target` users as Locust's dispatcher shares them out: a fixed count per class that has one (a scenario's
    groups), the rest by weight."""
    classes = list(classes)
    fixed = {cls.__name__: cls.fixed_count for cls in classes if getattr(cls, "fixed_count", 0)}
    weighted = [cls for cls in classes if cls.__name__ not in fixed]
    rest = max(target - sum(fixed.values()), 0)
    weights = sum(getattr(cls, "weight", 1) for cls in weighted) or 1
    per_class = {**fixed, **{cls.__name__: round(rest * getattr(cls, "weight", 1) / weights) for cls in weighted}}
    per_group: dict[str, int] = {}
    for name, count in per_class.items():
        key = groups.get(name, name)
        per_group[key] = per_group.get(key, 0) + count
    return per_group


class _Served:
    """A response body that reports when the server has written it all (pywsgi calls close())."""

    def __init__(self, body: Iterable[bytes], done: Callable[[], None]) -> None:
        self.body, self.done = body, done

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.body)

    def close(self) -> None:
        self.done()


class Exporter:
    """The HTTP server of the metrics, from `start` until the process ends (see the module docstring)."""

    def __init__(self, run: FolioRun, address: str) -> None:
        self.address = address
        self.registry = CollectorRegistry()
        self.scrape_cpu_s = 0.0
        self.registry.register(RunCollector(run, lambda: round(self.scrape_cpu_s, 6)))
        ProcessCollector(registry=self.registry)
        self._app = make_wsgi_app(self.registry, disable_compression=True)  # CPU is the generator's; bytes are cheap
        self._server: WSGIServer | None = None
        self._scrapes: deque[float] = deque(maxlen=_RECENT_SCRAPES)  # when recent scrapes began (monotonic)
        self._served = Event()
        self._last_served = float("-inf")  # when the last scrape served in full began

    def start(self) -> None:
        self._server = WSGIServer(listen(self.address), self._handle, log=None, error_log=log)
        self._server.start()
        log.info("Prometheus metrics at http://%s/metrics", self.address)

    def _handle(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        began = time.monotonic()
        # Prometheus' text format whatever it asks for: it reads it as well as OpenMetrics, which costs more
        environ.pop("HTTP_ACCEPT", None)
        cpu = time.process_time()
        body = self._app(environ, start_response)
        self.scrape_cpu_s += time.process_time() - cpu
        if environ.get("REQUEST_METHOD") != "GET":
            return body
        self._scrapes.append(began)

        def done() -> None:
            self._last_served = max(self._last_served, began)
            self._served.set()

        return _Served(body, done)

    def scraper_interval(self, now: float) -> float | None:
        """The interval of a scraper still coming at a regular one (see the module docstring), else None."""
        scrapes = list(self._scrapes)
        if len(scrapes) < REGULAR_SCRAPES:
            return None
        gaps = [b - a for a, b in zip(scrapes, scrapes[1:])]
        interval = statistics.median(gaps)
        on_schedule = sum(abs(gap - interval) <= REGULAR_TOLERANCE * interval for gap in gaps)
        if 2 * on_schedule <= len(gaps) or now - scrapes[-1] > 2 * interval + 1:
            return None
        return interval

    def linger(self) -> None:
        """At the end of the process: let a Prometheus that has been scraping take the final counts."""
        if self._server is None:
            return
        end = time.monotonic()
        interval = self.scraper_interval(end)
        if interval is None:
            return
        deadline = end + min(max(2 * interval + 1, LINGER_MIN_S), LINGER_MAX_S)
        if deadline - end > 5:
            log.warning("waiting up to %.0f s for Prometheus (scraping every %.0f s) to scrape the final counts",
                        deadline - end, interval)
        while self._last_served < end:
            self._served.clear()
            if not self._served.wait(timeout=max(deadline - time.monotonic(), 0)):
                log.warning("Prometheus did not scrape the final counts within %.1f s", deadline - end)
                break
        self.stop()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(timeout=1)
            self._server = None

