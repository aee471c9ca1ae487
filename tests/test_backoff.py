"""A user's pauses after failed iterations (folioperf.backoff): the same failure again waits longer, another
starts over, and a process whose iterations all raise is told to stop."""

from __future__ import annotations

from folioperf.backoff import Backoff, IterationWatch, raised_kind


def test_the_same_bug_backs_off_further_and_another_starts_over_at_a_second():
    backoff = Backoff(jitter=lambda: 0.0)
    bug = raised_kind("KeyError", "lookup.py:17 in look_up")
    assert [backoff.after(bug) for _ in range(7)] == [1, 2, 4, 8, 16, 30, 30]
    assert backoff.after(raised_kind("KeyError", "lookup.py:21 in look_up")) == 1  # another line: another bug
    backoff.clear()  # an iteration that completed
    assert backoff.after(bug) == 1
    assert Backoff(jitter=lambda: 1.0).after(bug) == 1.5  # stretched by up to half, never shorter


def test_a_process_whose_iterations_all_raise_stops_after_five_and_twice_per_user():
    watch = IterationWatch()
    assert [watch.fail(users=2) for _ in range(5)] == [False, False, False, False, True]
    watch.reset()
    assert [watch.fail(users=4) for _ in range(8)][-2:] == [False, True]
    watch.reset()
    watch.complete()  # one iteration that ran through: the workflow can run
    assert not any(watch.fail(users=1) for _ in range(100))
