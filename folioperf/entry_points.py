"""The installed packages' entry points, read once per process (`read_once`).

`importlib.metadata.entry_points()` reads the metadata of every installed distribution at each call: about
90 in folioperf's virtualenv, 3 ms and more a call. gevent's monkey-patching, the first thing a sandbox
and a Locust process do, calls it for each of its 25 patch events, to find plugins of gevent: about a fifth
of such a process's start-up CPU (measured: `import locust` 1.00 against 0.82 CPU-s with the entry points
read once). What is installed does not change while a process runs, so every call after the first can
return the first's entry points.
"""

from __future__ import annotations

from importlib import metadata


def read_once() -> None:
    """From now on, `importlib.metadata.entry_points` in this process answers from one reading."""
    everything = metadata.entry_points()  # all of them, as a call without arguments answers

    def entry_points(**params: str):  # noqa: ANN202  (the type of the call it stands for, by Python version)
        return everything.select(**params) if params else everything

    metadata.entry_points = entry_points  # type: ignore[assignment]
