"""The open model: a target rate of iterations for the whole run (`--rate 20/s`, `--rate 90/m`), as PTF's
ConstantThroughputTimer paces RIH, instead of users that start their next iteration when the last ends.

- The rate is for the whole run, across all users and all workers: each worker takes an equal share (the
  master's setup message tells it the worker count); a local run takes all of it.
- Each process schedules iterations at t0 + k / rate (t0: when its first user asks for a slot). A user
  free to start takes the next slot and waits for it; when every user is busy the run falls behind, and
  the slots due start late, as soon as users are free — the schedule itself never slips.
- Coordinated omission: besides its "Transaction" record, each transaction of a paced iteration is
  recorded under request type "Scheduled" (same name) with its latency measured from the iteration's
  scheduled start: its lateness + the transaction's time. A server that stalls shows there in full;
  the Transaction times only show how long iterations took once they got going.
- folioperf.rates.RateStatus compares the achieved rate (Scheduled records per second: one transaction per
  iteration) with the target; a run under 95 % of its target missed it. Its seconds run from the first
  slot, not from the test's start: users logging in and workers not yet told of the test are no lag. An
  iteration under way when the test stops is cut off before its record: the verdict allows one per user.

A workflow opts into the open model by default with `Workflow(rate="3/s")`; `--rate` overrides it and
puts any workflow in the open model. Without either, users run closed-model, paced by the workflow's
`pacing` and think times.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import gevent

from folioperf.metrics import SCHEDULED, TRANSACTION
from folioperf.pausing import pause
from folioperf.rates import Schedule


class OpenModel:
    """The open model of one Locust process: its share of the target rate and the slots users take."""

    def __init__(self, events: Any, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = gevent.sleep) -> None:
        self._events = events
        self._clock = clock
        self._sleep = sleep
        self.target_per_s: float | None = None  # the whole run's; None: closed model
        self.schedule: Schedule | None = None
        self._slots: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()  # user greenlet → slot
        self._listening = False  # on_request is a `request` listener only in the open model: no cost otherwise

    @property
    def active(self) -> bool:
        return self.schedule is not None

    def start_test(self, target_per_s: float | None, share: int) -> None:
        """A new test: a schedule for this process's share (1/`share`) of the target, or the closed model."""
        self.target_per_s = target_per_s
        self._listen(target_per_s is not None)
        self.schedule = Schedule(target_per_s / max(share, 1), self._clock) if target_per_s is not None else None
        self._slots = weakref.WeakKeyDictionary()

    def _listen(self, on: bool) -> None:
        if on != self._listening:
            hook = self._events.request
            (hook.add_listener if on else hook.remove_listener)(self.on_request)
            self._listening = on

    def on_request(self, request_type: str, name: str, response_time: float | None = None,
                   start_time: float | None = None, exception: Any = None, context: Any = None, **_kwargs: Any) -> None:
        """A transaction of a paced iteration is also recorded from the iteration's scheduled start. Runs
        inline in the user's greenlet (Locust fires `request` listeners synchronously)."""
        if request_type != TRANSACTION or not self._slots:
            return
        slot = self._slots.get(gevent.getcurrent())
        if slot is None:
            return
        late_ms = max((start_time or slot) - slot, 0.0) * 1000
        self._events.request.fire(
            request_type=SCHEDULED, name=name, response_time=late_ms + (response_time or 0.0), response_length=0,
            exception=exception, context=context or {}, response=None, start_time=slot, url=None,
        )

    @contextmanager
    def iteration(self, user: Any) -> Iterator[None]:
        """Around one task execution: wait for the next slot first (as Locust's own waits do: a stopping run
        may end the user while it waits) and time the iteration's transactions from that slot as well."""
        assert self.schedule is not None
        slot = self.schedule.take()
        delay = slot - self._clock()
        if delay > 0:
            pause(user, delay, self._sleep)
        greenlet = gevent.getcurrent()
        self._slots[greenlet] = slot
        try:
            yield
        finally:
            self._slots.pop(greenlet, None)
