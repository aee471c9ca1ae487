"""The open model: a target rate of iterations for the whole run (`--rate 20/s`, `--rate 90/m`), as PTF's
ConstantThroughputTimer paces RIH, instead of users that start their next iteration when the last ends.

- The rate is for the whole run, across all users and all workers: each worker takes an equal share (the
  master's setup message tells it its index and the worker count); a local run takes all of it.
- Each process schedules iterations at t0 + k / rate (t0: when its first user asks for a slot). A user
  free to start takes the next slot and waits for it; when every user is busy the run falls behind, and
  the slots due start late, as soon as users are free — the schedule itself never slips.
- Coordinated omission: besides its "Transaction" record, each transaction of a paced iteration is
  recorded under request type "Scheduled" (same name) with its latency measured from the iteration's
  scheduled start: its lateness + the transaction's time. A server that stalls shows there in full;
  the Transaction times only show how long iterations took once they got going.
- `rate_status(environment, snapshot)` compares the achieved rate (Scheduled records per second of the
  snapshot: one transaction per iteration) with the target; a run under 95 % of its target missed it,
  and the master or local process logs "target rate missed: achieved X/s of Y/s" when the test ends.

A workflow opts into the open model by default with `Workflow(rate="3/s")`; `--rate` overrides it and
puts any workflow in the open model. Without either, users run closed-model, paced by the workflow's
`pacing` and think times.
"""

from __future__ import annotations

import logging
import re
import time
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import gevent

from folioperf.errors import FolioperfError
from folioperf.okapi import TRANSACTION

log = logging.getLogger("folioperf")

SCHEDULED = "Scheduled"  # request type of latencies measured from the scheduled start
MISSED_BELOW = 0.95  # achieved / target under this: the run missed its target rate
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*/\s*(s|sec|second|m|min|minute)\s*$", re.IGNORECASE)


def parse_rate(text: str) -> float:
    """Iterations per second from `N/s` or `N/m` (e.g. "20/s", "90/m", "0.5/s")."""
    match = _RATE.match(str(text))
    if not match:
        raise FolioperfError(f"--rate {text!r}: give iterations per second or per minute, e.g. 20/s or 90/m")
    value = float(match.group(1))
    if value <= 0:
        raise FolioperfError(f"--rate {text!r}: the rate must be more than 0")
    return value if match.group(2).lower().startswith("s") else value / 60


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
    def of(cls, target_per_s: float, achieved_per_s: float) -> RateStatus:
        return cls(target_per_s, achieved_per_s, achieved_per_s < MISSED_BELOW * target_per_s)

    def message(self) -> str:
        return f"target rate missed: achieved {format_rate(self.achieved_per_s)}/s of {format_rate(self.target_per_s)}/s"


class Schedule:
    """One process's iteration slots: t0 + k / rate, t0 being the first slot asked for."""

    def __init__(self, per_s: float, clock: Any = time.time) -> None:
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


class _Pacer:
    """The open model of one Locust process."""

    def __init__(self, environment: Any) -> None:
        self.environment = environment
        self.schedule: Schedule | None = None  # None: closed model
        self.slots: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()  # user greenlet → slot
        self.listening = False  # on_request is a `request` listener only in the open model: no cost otherwise

    def start_test(self) -> None:
        """A new test: a new schedule for this process's share of the target (none in a closed model)."""
        from folioperf import plugin

        target = target_rate(self.environment)
        self._listen(target is not None)
        if target is None:
            self.schedule = None
            return
        run = plugin.run_of(self.environment)
        self.schedule = Schedule(target / max(run.workers, 1))
        self.slots = weakref.WeakKeyDictionary()

    def _listen(self, on: bool) -> None:
        if on != self.listening:
            hook = self.environment.events.request
            (hook.add_listener if on else hook.remove_listener)(self.on_request)
            self.listening = on

    def on_request(self, request_type: str, name: str, response_time: float | None = None,
                   start_time: float | None = None, exception: Any = None, context: Any = None, **_kwargs: Any) -> None:
        """A transaction of a paced iteration is also recorded from the iteration's scheduled start. Runs
        inline in the user's greenlet (Locust fires `request` listeners synchronously)."""
        if request_type != TRANSACTION or not self.slots:
            return
        slot = self.slots.get(gevent.getcurrent())
        if slot is None:
            return
        late_ms = max((start_time or slot) - slot, 0.0) * 1000
        self.environment.events.request.fire(
            request_type=SCHEDULED, name=name, response_time=late_ms + (response_time or 0.0), response_length=0,
            exception=exception, context=context or {}, response=None, start_time=slot, url=None,
        )


_PACERS: weakref.WeakKeyDictionary[Any, _Pacer] = weakref.WeakKeyDictionary()


def target_rate(environment: Any) -> float | None:
    """The whole run's target in iterations/s: --rate, else the run's workflows' default; None = closed model."""
    from folioperf import plugin

    options = environment.parsed_options
    given = getattr(options, "rate", None) if options is not None else None
    if given:
        return parse_rate(given)
    try:
        workflows = plugin.run_of(environment).workflows
    except FolioperfError:
        return None
    for workflow in workflows:
        if getattr(workflow, "rate", None):
            return parse_rate(workflow.rate)
    return None


def attach(environment: Any) -> None:
    """Set up the open model in this Locust process (once, from `init`, after folioperf's run is set up)."""
    if environment in _PACERS:
        return
    from locust.runners import WorkerRunner

    pacer = _PACERS[environment] = _Pacer(environment)
    events = environment.events

    def on_test_start(**_kwargs: Any) -> None:
        try:
            pacer.start_test()
        except FolioperfError as exc:
            from folioperf import plugin

            plugin.stop_run(environment, str(exc), exc.exit_code)

    events.test_start.add_listener(on_test_start)
    if isinstance(environment.runner, WorkerRunner):
        return
    try:
        target_rate(environment)  # a bad --rate ends the run before it starts, with one line
    except FolioperfError as exc:
        log.error(str(exc))
        raise SystemExit(exc.exit_code) from None

    from folioperf import metrics

    def on_complete(snapshot: Any, _incomplete: set[str]) -> None:
        status = rate_status(environment, snapshot)
        if status is not None and status.missed:
            log.warning(status.message())

    metrics.on_test_complete(environment, on_complete)


def active(environment: Any) -> bool:
    """Whether this process runs the open model now (users then wait for slots, not wait_time)."""
    pacer = _PACERS.get(environment)
    return pacer is not None and pacer.schedule is not None


@contextmanager
def iteration(tasks: Any) -> Iterator[None]:
    """Around one task execution of a folioperf TaskSet: in the open model, wait for the next slot first
    (as Locust's own waits do: a stopping run may end the user while it waits) and time the iteration's
    transactions from that slot as well."""
    user = tasks.user
    pacer = _PACERS.get(user.environment)
    if pacer is None or pacer.schedule is None:
        yield
        return
    from locust.exception import StopUser
    from locust.user.task import LOCUST_STATE_RUNNING, LOCUST_STATE_STOPPING, LOCUST_STATE_WAITING

    slot = pacer.schedule.take()
    delay = slot - time.time()
    if delay > 0:
        if user._state == LOCUST_STATE_STOPPING:
            raise StopUser()
        user._state = LOCUST_STATE_WAITING
        gevent.sleep(delay)
        if user._state == LOCUST_STATE_STOPPING:
            raise StopUser()
        user._state = LOCUST_STATE_RUNNING
    greenlet = gevent.getcurrent()
    pacer.slots[greenlet] = slot
    try:
        yield
    finally:
        pacer.slots.pop(greenlet, None)


def rate_status(environment: Any, snapshot: Any) -> RateStatus | None:
    """The target and achieved rate of a finished (or running) open-model test, from a folioperf.metrics
    Snapshot taken on the master or local process; None for a closed-model run."""
    target = target_rate(environment)
    if target is None:
        return None
    iterations = sum(entry.count for entry in snapshot.scheduled())
    achieved = iterations / snapshot.duration_s if snapshot.duration_s > 0 else 0.0
    return RateStatus.of(target, round(achieved, 3))
