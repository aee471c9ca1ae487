"""What Locust's own statistics keep for a whole test, held to what they show, so that a day-long run's
master (or single process) stays flat in memory.

Locust keeps two things per second of a test for ever, on a master and a single process (a worker clears
its statistics with each report):
- each entry's requests and failures per second (`num_reqs_per_sec`, `num_fail_per_sec`): one dict item a
  second for every request name with traffic in that second. Locust reads them only for the current rates,
  over the last CURRENT_RESPONSE_TIME_PERCENTILE_WINDOW seconds; older seconds are dropped here;
- the history of its charts (`stats.history`), a point every 5 s: past HISTORY_POINTS points, every other
  one is dropped, so the charts of the web UI and of Locust's HTML report still span the whole test, at a
  coarser step the longer it runs.
"""

from __future__ import annotations

from typing import Any

from locust.stats import CURRENT_RESPONSE_TIME_PERCENTILE_WINDOW

KEEP_SECONDS = CURRENT_RESPONSE_TIME_PERCENTILE_WINDOW + 10  # Locust's current rate reads the last 12 s
HISTORY_POINTS = 2000  # at 5 s a point: the first 2 h 46 min at full resolution


def trim(stats: Any, now: float) -> None:
    """Drop what Locust's `stats` (a RequestStats) keeps beyond what it shows (see the module docstring)."""
    oldest = int(now) - KEEP_SECONDS
    for entry in (*stats.entries.values(), stats.total):
        for per_second in (entry.num_reqs_per_sec, entry.num_fail_per_sec):
            if per_second and next(iter(per_second)) < oldest:
                for second in [s for s in per_second if s < oldest]:
                    del per_second[second]
    if len(stats.history) > HISTORY_POINTS:
        stats.history[:] = stats.history[::2]
