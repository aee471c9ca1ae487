"""Target rates and how a run kept to one (folioperf.open_model uses them; reports and tests read them without
loading Locust): `N/s` and `N/m` as users write them, one process's iteration slots, the verdict on a run."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from folioperf.errors import FolioperfError
from folioperf.options import rate_per_s

MISSED_BELOW = 0.95  # achieved / target under this: the run missed its target rate


def parse_rate(text: str) -> float:
    """Iterations per second from `N/s` or `N/m` (e.g. "20/s", "90/m", "0.5/s")."""
    try:
        return rate_per_s(text)
    except argparse.ArgumentTypeError as exc:
        raise FolioperfError(f"--rate {exc}") from None


def format_rate(per_s: float) -> str:
    """20.0 → "20", 2.4133 → "2.41" (per second)."""
    return f"{per_s:.2f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class RateStatus:
    """How an open-model run kept to its target rate (iterations per second, whole run)."""

    target_per_s: float
    achieved_per_s: float
    missed: bool

    @classmethod
    def of(cls, target_per_s: float, achieved_per_s: float, cut_off_per_s: float = 0.0) -> RateStatus:
        """`cut_off_per_s`: iterations the stop cut off mid-way, per second of the schedule (one per user at
        most): started on time, they are no miss, though they never finished to be counted."""
        return cls(target_per_s, achieved_per_s, achieved_per_s + cut_off_per_s < MISSED_BELOW * target_per_s)

    @classmethod
    def of_snapshot(cls, target_per_s: float, snapshot: Any, prefix: str = "", users: int = 0) -> RateStatus:
        """From a folioperf.metrics Snapshot of the whole run (master or local process), over the time its
        schedule ran; with `prefix`, of the transactions of one scenario group (`RIH · `). `users`: the
        group's users, each of which may have had an iteration under way when the test stopped."""
        iterations = sum(entry.count for entry in snapshot.scheduled() if entry.name.startswith(prefix))
        seconds = snapshot.schedule_s(prefix)
        if seconds <= 0:
            return cls.of(target_per_s, 0.0)
        return cls.of(target_per_s, round(iterations / seconds, 3), users / seconds)

    def message(self) -> str:
        return f"target rate missed: achieved {format_rate(self.achieved_per_s)}/s of {format_rate(self.target_per_s)}/s"


class Schedule:
    """One process's iteration slots: t0 + k / rate, t0 being the first slot asked for."""

    def __init__(self, per_s: float, clock: Callable[[], float] = time.time) -> None:
        self.per_s = per_s
        self._clock = clock
        self._t0: float | None = None
        self._next = 0

    def take(self) -> float:
        """The start time (clock seconds) of the next free slot."""
        if self._t0 is None:
            self._t0 = self._clock()
        slot = self._t0 + self._next / self.per_s
        self._next += 1
        return slot
