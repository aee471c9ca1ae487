"""The cost of folioperf's metrics, measured side by side in one run on this machine.

    python bench/metrics.py [--events 300000] [--names 50] [--rate 5000]

1. Per `request` event: Locust's EventHook firing the same events to an empty listener, to folioperf's
   listener, and to Locust's own stats listener (for scale); the differences are the listeners' costs.
2. A worker's report for one 3-second interval at --rate requests/s spread over --names names
   (lognormal latencies): msgpack size of folioperf's part, next to Locust's own stats part, and the
   time to take it on the worker and merge it on the master.
"""

from __future__ import annotations

import locust.stats  # first: Locust patches with gevent on import

# isort: split

import argparse  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402

import msgpack  # noqa: E402
from locust.event import EventHook  # noqa: E402

from folioperf.metrics import Metrics, locust_bucket  # noqa: E402


def per_event_us(listener, events) -> float:
    hook = EventHook()
    hook.add_listener(listener)
    started = time.perf_counter()
    for name, response_time in events:
        hook.fire(request_type="GET", name=name, response_time=response_time, response_length=512, response=None,
                  context={}, exception=None, start_time=0.0, url="http://127.0.0.1/")
    return (time.perf_counter() - started) / len(events) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--names", type=int, default=50)
    parser.add_argument("--rate", type=int, default=5_000, help="requests/s of one worker, for the report size")
    args = parser.parse_args()
    rng = random.Random(1)
    names = [f"GET /api/path-{i}/{{id}}" for i in range(args.names)]
    medians = [rng.uniform(5, 400) for _ in names]

    def sample(n: int) -> list[tuple[str, float]]:
        picks = [rng.randrange(len(names)) for _ in range(n)]
        return [(names[i], rng.lognormvariate(math.log(medians[i]), 0.7)) for i in picks]

    events = sample(args.events)
    locust.stats.bucket_response_time = locust_bucket
    stats = locust.stats.RequestStats()

    def empty(**_kwargs):
        pass

    def locust_listener(request_type, name, response_time, response_length, exception=None, **_kwargs):
        stats.log_request(request_type, name, response_time, response_length)

    print(f"1. per request event ({args.events} events, {args.names} names), best of 3 rounds:")
    rounds = {"empty listener": [], "folioperf metrics": [], "Locust's stats": []}
    for _ in range(3):
        rounds["empty listener"].append(per_event_us(empty, events))
        rounds["folioperf metrics"].append(per_event_us(Metrics().record, events))
        rounds["Locust's stats"].append(per_event_us(locust_listener, events))
    best = {k: min(v) for k, v in rounds.items()}
    for label, us in best.items():
        extra = "" if label == "empty listener" else f"  (+{us - best['empty listener']:.2f} µs)"
        print(f"   {label:18} {us:6.2f} µs{extra}")

    interval = sample(args.rate * 3)
    worker, master = Metrics(settle=False), Metrics()
    stats = locust.stats.RequestStats()
    for name, response_time in interval:
        worker.record("GET", name, response_time)
        stats.log_request("GET", name, response_time, 512)
    started = time.perf_counter()
    report = worker.take_report()
    taken = time.perf_counter() - started
    packed = msgpack.dumps(report)
    started = time.perf_counter()
    master.merge_report("worker", msgpack.loads(packed, strict_map_key=False))
    merged = time.perf_counter() - started
    locust_part = msgpack.dumps({"stats": stats.serialize_stats(), "stats_total": stats.total.get_stripped_report()})
    print(f"2. one worker report: {len(interval)} requests over {args.names} names in 3 s")
    print(f"   folioperf part     {len(packed) / 1024:6.1f} KiB"
          f"  (take {taken * 1e3:.1f} ms, merge {merged * 1e3:.1f} ms)")
    print(f"   Locust's stats     {len(locust_part) / 1024:6.1f} KiB")


if __name__ == "__main__":
    main()
