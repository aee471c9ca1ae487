"""A virtual user's pauses, which a stopping run cuts short.

Locust ends a user at once while it waits between tasks, but gives one inside a task --stop-timeout to
finish it. folioperf's users pause inside their tasks (a think time, the open model's wait for the next
slot), where nothing is in flight: like JMeter, which cuts its timers at the test's scheduled end, a run
that stops ends a pausing user at once, so a "60s" run ends after 60 s. --stop-timeout is left to users
waiting for an answer. The iteration cut short records no transaction: its calls so far are counted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gevent
from locust.exception import StopUser
from locust.user.task import LOCUST_STATE_RUNNING, LOCUST_STATE_STOPPING, LOCUST_STATE_WAITING

from folioperf.errors import Unfinished


class EndedInPause(Unfinished, StopUser):
    """A user asked to stop as it was about to pause: it ends there, its iteration unrecorded."""


def pause(user: Any, seconds: float, sleep: Callable[[float], None] = gevent.sleep) -> None:
    """Sleep `seconds` as a user that Locust may stop at once (it is then killed mid-sleep); a user
    already asked to stop does not start the pause. In a branch of calls made together (folioperf.page), the
    pause is the branch's alone: the user, waiting for its branches, is not pausing."""
    if gevent.getcurrent() is not user.greenlet:
        sleep(seconds)
        return
    if user._state == LOCUST_STATE_STOPPING:
        raise EndedInPause()
    user._state = LOCUST_STATE_WAITING
    sleep(seconds)
    user._state = LOCUST_STATE_RUNNING

