"""Locust's `--csv` files at the end of a run: the writer stops before its files close.

Locust's shutdown closes the CSV files (`StatsCSVFileWriter.close_files`, Locust 2.4x) but leaves the greenlet
that rewrites them every second running. Should anything yield to gevent between that close and the
process's end (an exit handler, a slow interpreter shutdown on a busy machine), the writer wakes, seeks in a
closed file and fails with "ValueError: I/O operation on closed file": a traceback, and a test that went
well ends with exit code 1. Here the writer's greenlet is remembered when it starts and ended, at once,
before the files close; what it wrote on its last pass (at most a second old) stays, as before.
"""

from __future__ import annotations

from typing import Any

import gevent
from locust.stats import StatsCSVFileWriter

_GREENLET = "_folioperf_writer"


def end_writer_before_close() -> None:
    """Make every StatsCSVFileWriter end its writing greenlet before closing its files (the plugin, at import)."""
    write, close = StatsCSVFileWriter.stats_writer, StatsCSVFileWriter.close_files

    def stats_writer(self: Any) -> None:
        setattr(self, _GREENLET, gevent.getcurrent())
        write(self)

    def close_files(self: Any) -> None:
        writer = getattr(self, _GREENLET, None)
        if writer is not None and writer is not gevent.getcurrent():
            writer.kill(block=True, timeout=5)
        close(self)

    StatsCSVFileWriter.stats_writer = stats_writer  # type: ignore[method-assign]
    StatsCSVFileWriter.close_files = close_files  # type: ignore[method-assign]
