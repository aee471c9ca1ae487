"""folioperf.metrics: percentiles within max(1 ms, 0.5 %) of the exact nearest-rank ones, also after merging
workers over Locust's wire format; 10-second windows; failures; a real distributed Locust run."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from folioperf import okapi_trace
from folioperf.histogram import bucket_of, decode_histogram
from folioperf.locust_stats import row_name
from folioperf.metrics import ERROR_MESSAGE_LIMIT, PERCENTILES, Metrics, locust_bucket
from folioperf.rates import RateStatus
from tests.locust_process import clean_env, free_port

FIXTURES = Path(__file__).parent / "fixtures" / "metrics"
_spec = importlib.util.spec_from_file_location("metrics_samples", FIXTURES / "metrics_samples.py")
samples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(samples)
DISTRIBUTIONS = samples.distributions()
T0 = 1_763_800_000  # a window boundary (multiple of 10 s)


def tolerance(exact: float) -> float:
    return max(1.0, 0.005 * exact)


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _locust_source(module: str) -> Path:
    """A file of the installed Locust, found without importing Locust (which gevent-patches on import,
    too late in a pytest process that has imported ssl already)."""
    (package,) = importlib.util.find_spec("locust").submodule_search_locations
    return Path(package, *module.split(".")).with_suffix(".py")


_protocol_spec = importlib.util.spec_from_file_location("locust_rpc_protocol", _locust_source("rpc.protocol"))
locust_protocol = importlib.util.module_from_spec(_protocol_spec)
_protocol_spec.loader.exec_module(locust_protocol)


def over_the_wire(report: dict, client_id: str = "worker-1") -> dict:
    """What the master receives: the report inside a Locust stats message, serialised and back."""
    Message = locust_protocol.Message
    sent = Message("stats", {"stats": [], "folioperf": report}, client_id).serialize()
    return Message.unserialize(sent).data["folioperf"]


def fire(metrics: Metrics, values, request_type="GET", name="GET /inventory/items", **kwargs) -> None:
    for value in values:
        metrics.record(request_type, name, value, 0, **kwargs)


def merged_from_workers(values: list[float], workers: int, clock: Clock) -> Metrics:
    """Spread values over worker recorders, ship every delta as Locust would, merge on a master."""
    master = Metrics(clock=clock)
    recorders = [Metrics(settle=False, clock=clock) for _ in range(workers)]
    half = len(values) // 2
    for part in (values[:half], values[half:]):  # two report intervals
        for i, value in enumerate(part):
            fire(recorders[(i * 7) % workers], [value])
        for n, recorder in enumerate(recorders):
            master.merge_report(f"worker-{n}", over_the_wire(recorder.take_report(), f"worker-{n}"))
    return master


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("workers", [2, 3])
def test_percentiles_merged_from_workers_are_within_tolerance(distribution, workers):
    values = DISTRIBUTIONS[distribution]
    entry = merged_from_workers(values, workers, Clock()).snapshot().entry("GET", "GET /inventory/items")

    assert entry.count == len(values)
    assert entry.min == pytest.approx(min(values), abs=0.0006)
    assert entry.max == pytest.approx(max(values), abs=0.0006)
    assert entry.avg == pytest.approx(sum(values) / len(values), abs=0.001)
    for q in PERCENTILES:
        exact = samples.nearest_rank(values, q)
        got = getattr(entry, f"p{round(q * 100)}")
        assert abs(got - exact) <= tolerance(exact), (distribution, q, got, exact)
    for q in (0.001, 0.999, 1.0):
        exact = samples.nearest_rank(values, q)
        assert abs(entry.percentile(q) - exact) <= tolerance(exact), (distribution, q)


def test_merging_workers_changes_nothing():
    values = DISTRIBUTIONS["lognormal-long-tail"]
    single = Metrics(clock=Clock())
    fire(single, values)
    one = single.snapshot().entries[0]
    merged = merged_from_workers(values, 3, Clock()).snapshot().entries[0]
    assert merged == one
    assert dict(merged.buckets) == dict(one.buckets)


def test_histogram_encoding_is_hdrhistogram_and_lossless():
    from hdrh.histogram import HdrHistogram

    values = DISTRIBUTIONS["multi-second"] + DISTRIBUTIONS["sub-millisecond"]
    metrics = Metrics(clock=Clock())
    fire(metrics, values)
    entry = metrics.snapshot().entries[0]
    assert decode_histogram(entry.histogram) == dict(entry.buckets)

    hdr = HdrHistogram.decode(entry.histogram)  # any HdrHistogram reader can use it
    assert hdr.get_total_count() == len(values)
    assert (hdr.lowest_trackable_value, hdr.significant_figures) == (1, 3)
    assert hdr.highest_trackable_value >= 3_600_000_000
    for us in (0, 1, 999, 2047, 2048, 123_456, 3_599_999_999):
        assert bucket_of(us) == hdr.get_lowest_equivalent_value(us)


def _locust_default_bucketing():
    """Locust's own bucket_response_time, compiled from its source (attach() replaces the live one)."""
    path = _locust_source("stats")
    tree = ast.parse(path.read_text())
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "bucket_response_time")
    namespace: dict = {}
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec"), namespace)
    return namespace["bucket_response_time"]


def _bucketing_errors(bucket, values) -> list[tuple[float, float, float]]:
    bucketed = [bucket(v) for v in values]
    return [(q, samples.nearest_rank(bucketed, q), samples.nearest_rank(values, q)) for q in PERCENTILES
            if abs(samples.nearest_rank(bucketed, q) - samples.nearest_rank(values, q))
            > tolerance(samples.nearest_rank(values, q))]


def test_locust_default_bucketing_fails_the_check_that_folioperfs_passes():
    default = _locust_default_bucketing()
    failing = {name: _bucketing_errors(default, values) for name, values in DISTRIBUTIONS.items()}
    assert failing["decade-bottoms"] and failing["ties"]  # e.g. 104 ms is kept as 100 ms: 3.8 % off
    assert {name: _bucketing_errors(locust_bucket, values) for name, values in DISTRIBUTIONS.items()} == {
        name: [] for name in DISTRIBUTIONS}


def test_locust_stats_agree_with_folioperf_once_attached():
    """In a real Locust environment with metrics attached, Locust's own table (web UI, HTML report) is
    within tolerance of the exact percentiles and of folioperf's, and both saw every request."""
    names = ["decade-bottoms", "ties", "multi-second", "sub-millisecond", "lognormal-long-tail"]
    run = subprocess.run([sys.executable, str(FIXTURES / "local_locust_run.py"), *names], cwd=FIXTURES,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert (result["attached_once"], result["bucketing_replaced"], result["incomplete"]) == (True, True, [])
    for name in names:
        values = DISTRIBUTIONS[name]
        assert result["entries"][name]["count"] == [len(values), len(values)]
        for q, (theirs, ours) in result["entries"][name]["percentiles"].items():
            exact = samples.nearest_rank(values, float(q))
            assert abs(ours - exact) <= tolerance(exact), (name, q, ours, exact)
            if not (float(q) * len(values)).is_integer():  # else Locust takes rank q·n + 1, not q·n
                assert abs(theirs - exact) <= tolerance(exact), (name, q, theirs, exact)


def test_locust_bucket_keeps_three_significant_digits():
    assert [locust_bucket(t) for t in (0.4, 99.5, 104.0, 999.4, 1049.0, 3432.0, 58_760.0, 147_449.0)] == [
        0, 100, 104, 999, 1050, 3430, 58_800, 147_000]


def test_windows_are_wall_clock_aligned_with_correct_figures():
    clock = Clock(T0 + 3)
    metrics = Metrics(clock=clock)
    fire(metrics, range(1, 101), name="GET /a")  # 1..100 ms
    clock.now = T0 + 12
    fire(metrics, [5.0] * 19 + [1000.0], name="GET /a")
    metrics.record("GET", "GET /a", 7.0, 0, exception=RuntimeError("boom"))
    clock.now = T0 + 29.999
    fire(metrics, [2.5], name="GET /b")

    snapshot = metrics.snapshot()
    rows = [(w.start, w.name, w.count, w.failures, w.avg, w.p50, w.p95) for w in snapshot.windows]
    start = datetime.fromtimestamp(T0, timezone.utc)
    assert rows == [
        (start, "GET /a", 100, 0, 50.5, 50.0, 95.0),
        (start + timedelta(seconds=10), "GET /a", 21, 1, pytest.approx((95 + 1000 + 7) / 21, abs=0.0005), 5.0, 7.0),
        (start + timedelta(seconds=20), "GET /b", 1, 0, 2.5, 2.5, 2.5),
    ]
    for entry in snapshot.entries:
        assert entry.count == sum(w.count for w in snapshot.windows if w.name == entry.name)
        assert entry.failures == sum(w.failures for w in snapshot.windows if w.name == entry.name)


def test_windows_merge_across_workers_and_settle_without_losing_counts():
    clock = Clock(T0 + 1)
    master = Metrics(clock=clock)
    first, second = Metrics(settle=False, clock=clock), Metrics(settle=False, clock=clock)
    fire(first, [10.0] * 30)
    fire(second, [20.0] * 10)
    master.merge_report("w1", over_the_wire(first.take_report(), "w1"))
    master.merge_report("w2", over_the_wire(second.take_report(), "w2"))
    (window,) = master.snapshot().windows
    assert (window.count, window.p50, window.p95) == (40, 10.0, 20.0)

    # Two minutes later the window is reduced to its figures; a report that straggles in still counts.
    clock.now = T0 + 121
    fire(first, [30.0])
    master.merge_report("w1", over_the_wire(first.take_report(), "w1"))
    late = Metrics(settle=False, clock=Clock(T0 + 2))
    fire(late, [500.0] * 2)
    master.merge_report("w3", over_the_wire(late.take_report(), "w3"))

    snapshot = master.snapshot()
    assert [(w.count, w.p50) for w in snapshot.windows] == [(42, 10.0), (1, 30.0)]
    entry = snapshot.entries[0]
    assert (entry.count, entry.max) == (43, 500.0)
    assert entry.count == sum(w.count for w in snapshot.windows)


def test_failures_grouped_expected_counted_and_messages_safe():
    clock = Clock()
    worker, master = Metrics(settle=False, clock=clock), Metrics(clock=clock)
    token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkaWt1X2FkbWluIn0.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
    for _ in range(3):
        worker.record("POST", "POST /circulation/check-out-by-barcode", 12.0, 0,
                      exception=RuntimeError("422 Item is already checked out\n  (barcode 123)"))
    worker.record("POST", "POST /circulation/check-out-by-barcode", 30.0, 0, context={"expected": True})
    worker.record("GET", "GET /users", 3.0, 0, exception=ValueError(f"rejected token {token} <Foo object at 0x7f3a>"))
    worker.record("GET", "GET /users", 3.0, 0, exception=ConnectionError("x" * 1000))
    worker.record("GET", "GET /users", None, 0, exception="timed out")
    master.merge_report("w", over_the_wire(worker.take_report()))
    for _ in range(2):
        worker.record("POST", "POST /circulation/check-out-by-barcode", 14.0, 0,
                      exception=RuntimeError("422 Item is already checked out (barcode 123)"))
    master.merge_report("w", over_the_wire(worker.take_report()))

    snapshot = master.snapshot()
    failures = [(f.type, f.name, f.error, f.occurrences) for f in snapshot.failures]
    assert failures[0] == ("POST", "POST /circulation/check-out-by-barcode",
                           "422 Item is already checked out (barcode 123)", 5)
    errors = {f.error for f in snapshot.failures}
    assert "rejected token <token> <Foo object>" in errors
    assert "timed out" in errors
    assert all(len(e) <= ERROR_MESSAGE_LIMIT and "\n" not in e and token not in e for e in errors)
    assert f"{'x' * (ERROR_MESSAGE_LIMIT - 1)}…" in errors

    post = snapshot.entry("POST", "POST /circulation/check-out-by-barcode")
    assert (post.count, post.failures, post.expected, post.max) == (6, 5, 1, 30.0)  # expected stays in latency
    users = snapshot.entry("GET", "GET /users")
    assert (users.count, users.failures, users.avg) == (3, 3, 3.0)  # an untimed request is counted, not timed


def test_rps_is_over_the_measured_duration_and_reset_starts_over():
    clock = Clock()
    metrics = Metrics(clock=clock)
    clock.now += 4
    fire(metrics, [10.0] * 50)
    clock.now += 6
    metrics.stop()
    clock.now += 100  # after the stop: the duration no longer grows
    snapshot = metrics.snapshot()
    assert (snapshot.duration_s, snapshot.entries[0].rps) == (10.0, 5.0)

    metrics.reset()
    clock.now += 2
    fire(metrics, [1.0] * 4)
    snapshot = metrics.snapshot()
    assert [(e.count, e.rps) for e in snapshot.entries] == [(4, 2.0)]
    assert len(snapshot.windows) == 1 and not snapshot.failures


def test_the_achieved_rate_counts_from_the_first_slot_on_every_worker():
    """Workers hear of a test after the master has started it, and users log in before their first slot:
    the rate is over the seconds from the earliest slot of any worker to the stop, and the Scheduled rows'
    requests/s with it. Over the test's whole duration, 8 s of iterations at 10/s would read 8/s: missed."""
    clock = Clock()
    master, workers = Metrics(clock=clock), [Metrics(settle=False, clock=clock) for _ in range(2)]
    first = clock.now + 2.0  # the workers' users took their first slots 2 s into the test
    for k, worker in enumerate(workers):
        for i in range(40):  # 5/s each, the later worker's first slot 0.1 s after the other's
            slot = first + 0.1 * k + i / 5
            worker.record("Transaction", "Browse", 12.0, 0, start_time=slot + 0.001)
            worker.record("Scheduled", "Browse", 13.0, 0, start_time=slot)
    clock.now += 10
    master.stop()
    for k, worker in enumerate(workers):
        master.merge_report(f"w{k}", over_the_wire(worker.take_report(), f"w{k}"))
    snapshot = master.snapshot()
    assert snapshot.scheduled_from == {"Browse": 2.0} and snapshot.schedule_s() == 8.0
    assert snapshot.entry("Scheduled", "Browse").rps == 10.0
    assert snapshot.entry("Transaction", "Browse").rps == 8.0  # other rows keep the test's duration
    status = RateStatus.of_snapshot(10.0, snapshot)
    assert (status.achieved_per_s, status.missed) == (10.0, False)


def test_master_counts_worker_reports_that_never_arrived():
    master = Metrics()
    worker = Metrics(settle=False)
    worker.record("GET", "/a", 5.0)
    master.merge_report("w1", over_the_wire(worker.take_report(), "w1"))
    worker.record("GET", "/a", 6.0)
    worker.take_report()  # lost on the way (e.g. a reconnect): w1's data has a hole
    worker.record("GET", "/a", 7.0)
    master.merge_report("w1", over_the_wire(worker.take_report(), "w1"))
    assert master.lost_reports == {"w1": 1}
    assert master.snapshot().entries[0].count == 2
    master.merge_report("w1", over_the_wire({"seq": 1, "windows": [], "failures": []}, "w1"))  # a replay: ignored
    assert master.snapshot().entries[0].count == 2
    master.start_test()
    assert master.lost_reports == {}


# ---------------------------------------------------------------------------------------------------
# A real distributed run: a master and 2 workers as processes


def _expected_totals() -> dict[tuple[str, str], dict]:
    users = 10
    totals: dict[tuple[str, str], dict] = {}
    for request_type, name, value, outcome in samples.USER_EVENTS * users + [samples.STOP_EVENT] * users:
        t = totals.setdefault((request_type, name), {"values": [], "failures": 0, "expected": 0})
        t["values"].append(value)
        t["failures"] += outcome == "failure"
        t["expected"] += outcome == "expected"
    return totals


@pytest.mark.long_run(10)
@pytest.mark.parametrize("ending, spawn_delay", [("run-time quit", 0), ("stop then quit", 0), ("run-time quit", 4)])
def test_distributed_run_merges_every_workers_data(ending, spawn_delay, tmp_path):
    """Each of 10 users fires a known sequence; on_stop fires one more request 1.5 s into the stop, after
    Locust's master stopped listening ("run-time quit") or while it waits ("stop then quit", the path of
    the web UI's Stop button). The master's merged metrics hold all of it, and it quits once: Locust's
    master quits up to three times, sleeping 0.5 s each time, and the process ended 1 s late.
    `spawn_delay`: the master starts the users that many seconds after it sent the workers their setup, so each worker
    reports (every 3 s) in between; a worker that numbered its reports afresh at the spawn sent numbers the
    master had seen, its first seconds of data were dropped and the run flagged a lost worker."""
    out = tmp_path / "snapshots.jsonl"
    port = free_port()
    env = clean_env(FOLIOPERF_TEST_SNAPSHOT=str(out), FOLIOPERF_TEST_STOP_DELAY="1.5",
                    FOLIOPERF_TEST_SPAWN_DELAY=str(spawn_delay))
    locust = [sys.executable, "-m", "locust", "-f", str(FIXTURES / "synthetic_locustfile.py")]
    if ending == "run-time quit":
        mode = ["--headless"]
    else:
        mode = ["--autostart", "--autoquit", "0", "--web-host", "127.0.0.1", "--web-port", str(free_port())]
    master = subprocess.Popen(
        [*locust, "--master", *mode, "-u", "10", "-r", "100", "-t", f"{2 + spawn_delay}s", "--expect-workers", "2",
         *(["--allow-partial-ramp"] if spawn_delay else []),  # users run 2 s of the test's 6: held back on purpose
         "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port), "--only-summary", "--loglevel", "DEBUG"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    workers = [subprocess.Popen([*locust, "--worker", "--master-port", str(port)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(2)]
    try:
        log, _ = master.communicate(timeout=30)
        for worker in workers:
            worker.wait(timeout=10)
    finally:
        for process in (master, *workers):
            if process.poll() is None:
                process.kill()
                process.wait()

    lines = out.read_text().splitlines() if out.exists() else []
    assert len(lines) == 1, log
    assert log.count("Quitting...") == 1, log
    result = json.loads(lines[0])
    assert result["incomplete"] == [], log
    expected = _expected_totals()
    entries = {(e["type"], e["name"]): e for e in result["entries"]}
    assert set(entries) == set(expected), log
    for key, want in expected.items():
        entry, values = entries[key], want["values"]
        assert (entry["count"], entry["failures"], entry["expected"]) == (len(values), want["failures"],
                                                                         want["expected"]), key
        assert entry["max"] == pytest.approx(max(values), abs=0.0006)
        for q in PERCENTILES:
            exact = samples.nearest_rank(values, q)
            assert abs(entry[f"p{round(q * 100)}"] - exact) <= tolerance(exact), (key, q)
        assert sum(w[3] for w in result["windows"] if (w[1], w[2]) == key) == entry["count"]
        # Locust's own table (web UI, HTML report) got the late reports as well
        # ... a call's row named by its path under its method (folioperf.locust_stats)
        assert result["locust"][f"{key[0]} {row_name(*key)}"] == [entry["count"], entry["failures"]]
    failures = sum(w["failures"] for w in expected.values())
    assert result["failures"] == [["Transaction", "Check-out", samples.FAILURE_MESSAGE, failures]]


def field(*lines: str) -> list[tuple[str, str]]:
    """A response's X-Okapi-Trace field as a --trace call keeps it (geventhttpclient's storage)."""
    return [(okapi_trace.HEADER, line) for line in lines]


def test_module_times_merge_from_workers_as_one_recorder_has_them():
    """--trace: each response's time per module, shipped by two workers, adds up on the master to what one
    process recording everything holds; its share is of the API's own summed time."""
    one, master = Metrics(clock=Clock()), Metrics(clock=Clock())
    workers = [Metrics(settle=False, clock=Clock()), Metrics(settle=False, clock=Clock())]
    for k in range(400):
        users_us, circ_us = 1000 + 37 * k, 9000 + 11 * k
        total_ms = (users_us + circ_us + 500) / 1000
        half = users_us // 2  # mod-circulation calls mod-users twice
        lines = [f"GET mod-users-19.5.4 http://10.0.0.5:9132/users/{k} : 200 {half}us",
                 f"GET mod-users-19.5.4 http://10.0.0.5:9132/users/{k + 1} : 200 {users_us - half}us",
                 f"POST mod-circulation-24.0.0 http://10.0.0.5:9134/circulation/check-out-by-barcode : 201 "
                 f"{circ_us + users_us}us"]
        for recorder in (one, workers[k % 2]):
            recorder.record("POST", "POST /circulation/check-out-by-barcode", total_ms)
            recorder.trace_call(("POST", "POST /circulation/check-out-by-barcode", total_ms, field(*lines)))
        workers[k % 2].trace_call(("GET", "GET /circulation/loans", 0.3, []))  # an answer without trace lines
    for k, worker in enumerate(workers):
        master.merge_report(f"w{k}", worker.take_report())
    expected, merged = one.snapshot(), master.snapshot()
    assert merged.modules == expected.modules and len(merged.modules) == 3
    assert (merged.traced, merged.untraced) == (400, 400)
    users = next(m for m in merged.modules if m.module == "mod-users")
    assert (users.count, users.calls) == (400, 800)
    assert users.avg == pytest.approx(sum(1000 + 37 * k for k in range(400)) / 400 / 1000, abs=0.001)
    assert sum(m.share for m in merged.modules) == pytest.approx(1.0, abs=0.001)


def test_a_transaction_ending_after_a_stats_reset_keeps_its_calls_module_times():
    """--trace hands a transaction's calls over when it ends. One that began before a reset (the web UI's
    "reset stats") and ends after it still gets its calls' module times; its calls, recorded before the
    reset or not, count for their API rows no more (as a call queued outside a transaction is dropped)."""
    clock = Clock()
    metrics = Metrics(clock=clock)
    path = "/circulation/loans"
    call = ("GET", f"GET {path}", 1.5, field(f"GET mod-circulation-24.0.0 http://h{path}.. : 200 1000us"))
    metrics.trace_call(call)  # outside a transaction, queued: dropped by the reset
    began = clock()
    clock.now += 1
    metrics.reset()
    metrics.record("Transaction", "Check-out", 1.5)
    metrics.trace_transactions([call], [("Check-out", 0, 1)], began)
    snap = metrics.snapshot()
    assert {(m.type, m.name, m.module, m.count, m.total) for m in snap.modules} == {
        ("Transaction", "Check-out", "mod-circulation", 1, 1.0),
        ("Transaction", "Check-out", okapi_trace.GATEWAY, 1, 0.5)}
    assert (snap.traced, snap.untraced) == (0, 0)  # the API rows were before the reset
