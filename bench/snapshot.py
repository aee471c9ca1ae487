"""The live view's cost over a long run: `Metrics.snapshot(windows=False)` for --names names at simulated times.

    python bench/snapshot.py [--names 500] [--at 0.5,24] [--against SRC]

The metrics are fed as bench/memory.py feeds them (a request per name per 10-second window, lognormal
latencies), and at each simulated hour of --at the snapshot is timed (the best of --repeat). With --against
SRC (a source tree of another version of folioperf, e.g. a git worktree of main), the same runs in a second
process importing folioperf from SRC, at the same time as this version's, and the ratios are printed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
from collections.abc import Sequence

from folioperf.metrics import WINDOW_S, Metrics, Window

START_S = 1_767_571_200  # 2026-01-05 00:00 UTC


class Discarded:
    """A window sink that keeps nothing (the results directory's spool writes rows away)."""

    def add(self, rows: Sequence[Window]) -> None:
        pass

    def clear(self) -> None:
        pass

    def kept(self) -> Sequence[Window]:
        return ()


def feed(names: int, hours: list[float], repeat: int) -> dict[str, float]:
    """The best snapshot time (ms) at each of `hours`."""
    now = [float(START_S)]
    metrics = Metrics(clock=lambda: now[0], sink=Discarded())
    rng = random.Random(1)
    request_names = [f"GET /api/path-{i}/{{id}}" for i in range(names)]
    medians = [rng.uniform(5, 400) for _ in request_names]
    timings: dict[str, float] = {}
    fed = 0
    for hour in sorted(hours):
        windows = int(hour * 3600 / WINDOW_S)
        for _ in range(windows - fed):
            for name, median in zip(request_names, medians):
                metrics.record("GET", name, rng.lognormvariate(math.log(median), 0.5))
            now[0] += WINDOW_S
        fed = windows
        best = math.inf
        for _ in range(repeat):
            started = time.perf_counter()
            metrics.snapshot(windows=False)
            best = min(best, time.perf_counter() - started)
        timings[f"{hour:g}"] = best * 1e3
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=500)
    parser.add_argument("--at", default="0.5,24", help="simulated hours at which to time the snapshot")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--against", help="a source tree of another folioperf version, timed side by side")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # one side: print its timings
    args = parser.parse_args()
    hours = [float(h) for h in args.at.split(",")]
    if args.child:
        print(json.dumps(feed(args.names, hours, args.repeat)))
        return
    command = [sys.executable, __file__, "--child", "--names", str(args.names), "--at", args.at, "--repeat", str(args.repeat)]
    sides = {"this": subprocess.Popen(command, stdout=subprocess.PIPE, text=True)}
    if args.against:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (args.against, os.environ.get("PYTHONPATH"))))}
        sides["against"] = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    timings = {side: json.loads(proc.communicate()[0]) for side, proc in sides.items()}
    print(f"snapshot(windows=False) of {args.names} names, a request per name per 10-s window, best of {args.repeat}")
    print(f"{'hour':>6} {'this ms':>8}" + (f" {'against ms':>11} {'this/against':>13}" if args.against else ""))
    for hour, ms in timings["this"].items():
        line = f"{hour:>6} {ms:>8.1f}"
        if args.against:
            theirs = timings["against"][hour]
            line += f" {theirs:>11.1f} {ms / theirs:>13.2f}"
        print(line)


if __name__ == "__main__":
    main()
