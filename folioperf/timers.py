"""A virtual user's timers as a JMeter thread fires them (folioperf.jmeter): the pauses a workflow takes before a
call and, with --pace, a throughput timer. No Locust here: Okapi and the tests use it as it is."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from folioperf.jmeter import ThroughputTimer


class Timers:
    """A virtual user's timers, fired as a JMeter thread fires them: every pause before a sample and, with
    --pace, a throughput timer ("this thread only", folioperf.jmeter.ThroughputTimer). JMeter works out the
    throughput timer's wait when the sampler's timers fire and sleeps it *and* the pauses (JMeterThread.delay):
    here the pauses are slept as the workflow takes them (a stopping run cuts them short), and the throughput
    timer's wait, counted from when the first of them began, is slept right before the sample. A sample is any
    call (preflights too) or a script step; a JMeter plan's throughput timer paces them all."""

    def __init__(self, sleep: Callable[[float], None], per_minute: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._sleep = sleep
        self._clock = clock
        self._throughput = ThroughputTimer(per_minute) if per_minute else None
        self._fired: float | None = None  # when the pauses before the next sample began
        self._paused = 0.0  # ... and how long they were

    def pause(self, seconds: float) -> None:
        """A pause before the next sample (a think time), slept now."""
        if self._fired is None:
            self._fired, self._paused = self._clock(), 0.0
        if seconds > 0:
            self._paused += seconds
            self._sleep(seconds)

    def spent_in_sample(self) -> None:
        """The pauses since the last sample were that sample's own time (a Flow Control Action's pause), not timers
        before the next one: the next sample's throughput wait counts from now, as JMeter's does."""
        self._fired, self._paused = None, 0.0

    @contextmanager
    def unpaced(self) -> Iterator[None]:
        """Samples out of the throughput timer's scope (a plan's timer under a controller paces only that
        controller's samplers, e.g. VB's ForEach): they neither wait for it nor count for it; the next paced
        sample's wait counts from the last paced one, as JMeter's timer remembers only its own firings."""
        throughput, self._throughput = self._throughput, None
        try:
            yield
        finally:
            self._throughput = throughput

    def before_sample(self) -> None:
        """Right before a sample: the throughput timer's wait, as JMeter would have added it to the pauses."""
        fired, self._fired = self._fired, None
        if self._throughput is None:
            return
        now = self._clock()
        if fired is None:
            wait = self._throughput.delay(now)
        else:  # JMeter sleeps the wait and the pauses from `fired`; the pauses are slept already
            wait = self._throughput.delay(fired) + self._paused - (now - fired)
        if wait > 0:
            self._sleep(wait)
