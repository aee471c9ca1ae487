"""Python's cyclic garbage collector during a test, in the processes that run virtual users.

Two of its costs grow with what a load generator holds, not with what its users do:
- a full collection walks every object the collector tracks: the modules, Locust, gevent, the test data in
  the pools (tens of thousands of records for a PTF dataset), all alive until the process ends.
  `gc.freeze()` at the test's start moves what is alive then out of the collector's sight, which is what the
  standard library offers it for;
- a young collection runs every 700 net allocations of containers and walks the young objects still alive:
  with dozens of users each in the middle of a request, mostly theirs, walked again and again. A threshold of
  10,000 walks them 14 times less often; the garbage that waits for it is a few megabytes at most.
On the generator bench (bench/generator.py, side by side with bare Locust, which keeps Python's defaults) this
is about 4 % more requests per core. The test's stop undoes both: the web UI's next test starts afresh.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000  # Python's default is 700


class SteadyGC:
    """The collector set for a test: `start()` at its start, `stop()` at its end (either may come twice)."""

    def __init__(self) -> None:
        self._saved: tuple[int, int, int] | None = None

    def start(self) -> None:
        if self._saved is not None:
            return
        self._saved = gc.get_threshold()
        # No collection first: one would hold up the test's first requests (and the open model's schedule),
        # where freezing takes no time; start-up garbage frozen with the rest is collected once unfrozen.
        gc.freeze()
        gc.set_threshold(max(YOUNG_THRESHOLD, self._saved[0]), *self._saved[1:])

    def stop(self) -> None:
        if self._saved is None:
            return
        gc.set_threshold(*self._saved)
        gc.unfreeze()
        self._saved = None
