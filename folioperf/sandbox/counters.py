"""Request and event counters shared by the sandbox's processes.

One anonymous shared memory block is created before the worker processes fork; each process increments
only its own row, so no locks are needed, and any process can sum every row to answer
`GET /_/sandbox/counters`. Users compare these counts with what the load generator recorded.
"""

from __future__ import annotations

import mmap
from collections.abc import Sequence

STATUS_CLASSES = ("total", "2xx", "3xx", "4xx", "5xx")
EVENTS = (
    "auth.login",
    "auth.login_failed",
    "auth.refresh",
    "auth.refresh_failed",
    "auth.refresh_reuse",
    "auth.token_rejected",
)
UNMATCHED = "unmatched"


class Counters:
    """Per route (`GET /users/{id}`), per path template's CORS preflight (`OPTIONS /users/{id}`), and the
    requests no route serves; by status class."""

    def __init__(self, route_names: list[str], processes: int, preflights: Sequence[str] = ()) -> None:
        self._preflight_index = {template: len(route_names) + i for i, template in enumerate(preflights)}
        self.names = list(route_names) + [f"OPTIONS {t}" for t in preflights] + [UNMATCHED]
        self._route_slots = len(self.names) * len(STATUS_CLASSES)
        self._row = self._route_slots + len(EVENTS)
        self._processes = processes
        self._mem = mmap.mmap(-1, 8 * self._row * processes)
        self._view = memoryview(self._mem).cast("q")
        self._base = 0
        self._event_index = {name: i for i, name in enumerate(EVENTS)}

    def bind(self, process_index: int) -> None:
        """Select the row this (forked) process writes to."""
        self._base = process_index * self._row

    def request(self, route_index: int, status: int) -> None:
        slot = self._base + route_index * len(STATUS_CLASSES)
        self._view[slot] += 1
        klass = status // 100 - 1
        if 1 <= klass <= 4:
            self._view[slot + klass] += 1

    def preflight(self, template: str, status: int) -> None:
        index = self._preflight_index.get(template)
        if index is not None:
            self.request(index, status)

    def unmatched(self, status: int) -> None:
        self.request(len(self.names) - 1, status)

    def event(self, name: str) -> None:
        self._view[self._base + self._route_slots + self._event_index[name]] += 1

    def snapshot(self) -> dict:
        requests: dict[str, dict[str, int]] = {}
        for r, name in enumerate(self.names):
            values = [0] * len(STATUS_CLASSES)
            for p in range(self._processes):
                base = p * self._row + r * len(STATUS_CLASSES)
                for k in range(len(STATUS_CLASSES)):
                    values[k] += self._view[base + k]
            if values[0]:
                requests[name] = dict(zip(STATUS_CLASSES, values))
        events = {}
        for i, name in enumerate(EVENTS):
            events[name] = sum(self._view[p * self._row + self._route_slots + i] for p in range(self._processes))
        return {"requests": requests, "events": events}

    def reset(self) -> None:
        for i in range(len(self._view)):
            self._view[i] = 0
