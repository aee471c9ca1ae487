"""A day-long run's memory, in minutes: the metrics and Locust's own statistics fed a simulated 24 hours.

    python bench/memory.py [--hours 24] [--names 500] [--before-hours 3] [--results DIR]

Each 10-second window of simulated time, every one of --names request names gets a request (folioperf's
`request` listener and Locust's stats, as one process of a run without workers records them); every
simulated 10 minutes the live view's snapshot is taken, every 5 s a point of Locust's chart history, every
10 s Locust's statistics are trimmed, every hour a checkpoint is written (a run writes one a minute: the
same files, replaced). The process's
resident memory is read (after a collection) at every simulated hour, in two processes side by side:
- before: the settled windows kept in memory and Locust's statistics as Locust keeps them (run for
  --before-hours only: it grows by the same amount every hour);
- now: the settled windows written to the results directory as they settle (folioperf.results
  TimeseriesSpool) and Locust's statistics held to what they show (folioperf.locust_memory).
At the end, the results directory is written and read back (its timeseries rows counted).
"""

from __future__ import annotations

import locust.stats  # first: Locust patches with gevent on import

# isort: split

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from datetime import datetime, timedelta, timezone  # noqa: E402

import psutil  # noqa: E402

from folioperf import locust_memory, results  # noqa: E402
from folioperf.metrics import WINDOW_S, Metrics, locust_bucket  # noqa: E402

START = datetime(2026, 1, 5, 0, 0, tzinfo=timezone.utc)


class SimulatedTime:
    """`time` for Locust's stats module: the simulated clock."""

    def __init__(self) -> None:
        self.now = START.timestamp()

    def time(self) -> float:
        return self.now


def feed(mode: str, hours: float, names: int, out: str) -> list[tuple[int, float]]:
    """RSS (MB) at the end of each simulated hour, in this process."""
    clock = SimulatedTime()
    locust.stats.time = clock  # Locust's stats read the time through their module's `time`
    locust.stats.bucket_response_time = locust_bucket
    stats = locust.stats.RequestStats(use_response_times_cache=False)  # its cache keeps 20 s: bounded, and slow here
    metrics = Metrics(clock=clock.time)
    spool = None
    if mode == "now":
        spool = results.TimeseriesSpool(out, START, "bench", ())
        metrics.windows_to(spool)
    rng = random.Random(1)
    request_names = [f"GET /api/path-{i}/{{id}}" for i in range(names)]
    medians = [rng.uniform(5, 400) for _ in request_names]
    process = psutil.Process()
    readings = []
    windows = int(hours * 3600 / WINDOW_S)
    for window in range(windows):
        for name, median in zip(request_names, medians):
            ms = rng.lognormvariate(math.log(median), 0.5)
            metrics.record("GET", name, ms)
            stats.log_request("GET", name, ms, 512)
        clock.now += WINDOW_S
        for _ in range(2):  # a point every 5 s, shaped as Locust's (update_stats_history; its figures cost here)
            stamp = locust.stats.format_utc_timestamp(clock.now)
            stats.history.append({"response_time_percentile_0.5": [stamp, 12], "response_time_percentile_0.95": [stamp, 90],
                                  "current_rps": [stamp, 50.0], "current_fail_per_sec": [stamp, 0],
                                  "total_avg_response_time": [stamp, 31.5], "user_count": [stamp, names], "time": stamp})
        if mode == "now":
            locust_memory.trim(stats, clock.now)
        if window % 60 == 59:
            metrics.snapshot(windows=False)  # the live view's figures (it redraws every second: the same objects)
        if window % 360 == 359:
            info = results.RunInfo(workflow="bench", users=names, target=results.Target("http://x", "t", False),
                                   start=START, end=START + timedelta(seconds=clock.now - START.timestamp()))
            results.write_checkpoint(out, info, metrics.snapshot(), spool=spool)
        if (window + 1) % (3600 // WINDOW_S) == 0:
            gc.collect()
            readings.append(((window + 1) * WINDOW_S // 3600, process.memory_info().rss / 2**20))
    if spool is not None:
        metrics.stop()
        info = results.RunInfo(workflow="bench", users=names, target=results.Target("http://x", "t", False),
                               start=START, end=START + timedelta(hours=hours))
        started = time.perf_counter()
        path = results.write(out, info, metrics.snapshot(), timeseries=spool.written())
        written_s = time.perf_counter() - started
        rows = sum(1 for _ in open(path / "timeseries.csv")) - 1
        readings.append((-1, written_s))
        readings.append((-2, float(rows)))
    return readings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=24)
    parser.add_argument("--names", type=int, default=500)
    parser.add_argument("--before-hours", type=float, default=3)
    parser.add_argument("--mode", choices=("before", "now"), help=argparse.SUPPRESS)  # a child: one side
    parser.add_argument("--results", help="where the results directory goes (default: a temporary one)")
    args = parser.parse_args()
    if args.mode:
        out = args.results or tempfile.mkdtemp(prefix="folioperf-bench-memory-")
        print(json.dumps(feed(args.mode, args.hours, args.names, out)))
        return
    sides = {}
    for mode, hours in (("before", args.before_hours), ("now", args.hours)):
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="folioperf-bench-memory-") as out:
            proc = subprocess.run([sys.executable, __file__, "--mode", mode, "--hours", str(hours), "--names",
                                   str(args.names), "--results", out], capture_output=True, text=True, check=True)
        sides[mode] = (json.loads(proc.stdout.splitlines()[-1]), (time.perf_counter() - started) / 60)
    before, before_min = sides["before"]
    now, now_min = sides["now"]
    end = {hour: value for hour, value in now if hour < 0}
    now = [(h, v) for h, v in now if h > 0]
    print(f"{args.names} names, a request per name per 10-s window; simulated hours in minutes of real time "
          f"(before: {args.before_hours:g} h in {before_min:.1f} min; now: {args.hours:g} h in {now_min:.1f} min)")
    print(f"{'hour':>5} {'before MB':>10} {'now MB':>8}")
    before_at = dict(before)
    for hour, mb in now:
        print(f"{hour:>5} {before_at.get(hour, float('nan')):>10.1f} {mb:>8.1f}")
    if len(before) > 1:
        print(f"before: +{(before[-1][1] - before[0][1]) / (before[-1][0] - before[0][0]):.1f} MB an hour after the first")
    print(f"now: {now[-1][1] - now[0][1]:+.1f} MB from hour 1 to hour {now[-1][0]} "
          f"({(now[-1][1] - now[0][1]) / max(now[-1][0] - now[0][0], 1):+.2f} MB an hour)")
    print(f"the results directory at the end: written in {end[-1]:.1f} s, {int(end[-2]):,} timeseries rows")


if __name__ == "__main__":
    main()
