"""A virtual user's pause after a failed iteration, and what its failures say about the target and the workflow.

Locust starts a user's next task as soon as the last one ends. When FOLIO stops answering (a connection
refused or reset, a call timed out: no HTTP answer at all), every iteration then ends at its first call, and
the users would send thousands of calls a second into a FOLIO that may be restarting, measuring nothing but
refusals. A workflow with a bug does the same: an exception after its first call skips the think time that
follows, and the user loops at once (a raising workflow sent 1,843 requests/s where it meant to send 2).
So a user whose iteration ended that way waits before its next one (`Backoff`), as Locust waits after a
task's exception (there only the user's wait time): 1 s after the first, doubling with each such iteration
in a row up to 30 s, stretched at random by up to half so that the users do not come back in step (the
workflow's pacing, where it has one, waits what is left of its interval after that). An iteration that
completes, or ends at a call FOLIO answered, ends the back-off. That is at most one iteration a second per user
(one call, when the target does not answer), a few a minute after the first half minute.
The kinds of failure are named, each with its own streak: no answer (`UNREACHABLE`), and each of the
workflow's exceptions by its type and the line that raised it (the same bug again backs off further).

`TargetWatch` keeps, for one process, how long the target went without answering any of its users: from the
first call that got no answer after one that did, to the next answer. Workers send theirs to the master with
their reports; a run whose target was silent for TARGET_DOWN_SECONDS or more in one stretch is flagged
`target_down` (folioperf.outcome).

`IterationWatch` keeps, for one process, whether its users' iterations all raise: once they have raised
STOP_AFTER_RAISED times (and at least twice per user) with none completing since the test began, the
workflow cannot run at all and folioperf stops the run (exit code 1) rather than let it fail for its whole
duration. An iteration whose call FOLIO refused has completed as far as the workflow goes: a FOLIO that
fails is measured, not stopped.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import Any

UNREACHABLE = "unreachable"  # no HTTP answer: refused, reset, timed out
FIRST_SECONDS = 1.0
LONGEST_SECONDS = 30.0
TARGET_DOWN_SECONDS = 5.0  # a silence this long, in one stretch, flags the run
STOP_AFTER_RAISED = 5  # iterations that raised, none completed: the workflow cannot run


class Backoff:
    """One user's pause after failed iterations: `after(kind)` gives the seconds to wait, growing while the
    same kind repeats; `clear()` after an iteration that got an answer."""

    def __init__(self, jitter: Callable[[], float] = random.random) -> None:
        self._kind: str | None = None
        self._streak = 0
        self._jitter = jitter

    def after(self, kind: str) -> float:
        self._streak = self._streak + 1 if kind == self._kind else 1
        self._kind = kind
        seconds = min(FIRST_SECONDS * 2 ** min(self._streak - 1, 16), LONGEST_SECONDS)
        return seconds * (1 + self._jitter() / 2)

    def clear(self) -> None:
        self._kind, self._streak = None, 0


def raised_kind(exception_type: str, where: str) -> str:
    """The back-off kind of a workflow's exception: the same bug is the same type raised at the same line."""
    return f"raised {exception_type} at {where}"


class IterationWatch:
    """Whether one process's iterations all raise (see the module docstring)."""

    def __init__(self) -> None:
        self.completed = 0
        self.raised = 0

    def reset(self) -> None:
        self.completed = self.raised = 0

    def complete(self) -> None:
        self.completed += 1

    def fail(self, users: int) -> bool:
        """One more iteration raised; True once every one has, STOP_AFTER_RAISED and twice per user at least."""
        self.raised += 1
        return self.completed == 0 and self.raised >= max(STOP_AFTER_RAISED, 2 * users)


class TargetWatch:
    """How long the target went without answering (see the module docstring): this process's users call
    `silent()` on a call that got no answer and `answered()` on one that got any; a master adds its workers'
    (`merge`, their latest report). Times are the wall clock, so a master can put its workers' together."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self.since: float | None = None  # this process's current silence began then
        self.first: float | None = None  # ... its first silence of the test
        self.longest_s = 0.0  # ... its longest silence that has ended
        self._workers: dict[str, Mapping[str, Any]] = {}  # a master: each worker's latest `to_wire()`

    def reset(self) -> None:
        self.since = self.first = None
        self.longest_s = 0.0
        self._workers = {}

    def silent(self) -> None:
        if self.since is None:
            self.since = self._clock()
            if self.first is None:
                self.first = self.since

    def answered(self) -> None:
        if self.since is not None:
            self.longest_s = max(self.longest_s, self._clock() - self.since)
            self.since = None

    def to_wire(self) -> dict[str, Any]:
        return {"since": self.since, "first": self.first, "longest_s": self.longest_s}

    def merge(self, client_id: str, wire: Mapping[str, Any] | None) -> None:
        if wire:
            self._workers[client_id] = wire

    def _all(self) -> list[Mapping[str, Any]]:
        return [self.to_wire(), *self._workers.values()]

    def silent_s(self) -> float:
        """How long the target has been silent, as the process silent longest finds it (0: it answers)."""
        sinces = [w["since"] for w in self._all() if w.get("since") is not None]
        return self._clock() - min(sinces) if sinces else 0.0

    def longest(self) -> float:
        """The longest silence any process found, the current one included."""
        now = self._clock()
        return max(max(w.get("longest_s") or 0.0, now - w["since"] if w.get("since") is not None else 0.0)
                   for w in self._all())

    def first_silence(self) -> float | None:
        firsts = [w["first"] for w in self._all() if w.get("first") is not None]
        return min(firsts) if firsts else None
