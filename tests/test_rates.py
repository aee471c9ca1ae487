"""folioperf.pacing's arithmetic: rates as users write them, the schedule's slots, when a rate counts as missed."""

from __future__ import annotations

import pytest

from folioperf.errors import FolioperfError
from folioperf.rates import RateStatus, Schedule, format_rate, parse_rate


@pytest.mark.parametrize("text, per_s", [("20/s", 20.0), ("3/s", 3.0), ("90/m", 1.5), ("0.5/s", 0.5), (" 6 / min ", 0.1)])
def test_rates_per_second_or_minute(text, per_s):
    assert parse_rate(text) == pytest.approx(per_s)


@pytest.mark.parametrize("text", ["20", "fast", "20/h", "-3/s", "0/s", "/s"])
def test_a_bad_rate_is_one_clear_line(text):
    with pytest.raises(FolioperfError) as error:
        parse_rate(text)
    assert "\n" not in str(error.value) and str(error.value).startswith(f"--rate {text!r}: ")
    assert error.value.exit_code == 2


def test_slots_follow_the_schedule_from_the_first_one_taken():
    now = [100.0]
    schedule = Schedule(4.0, clock=lambda: now[0])
    assert schedule.take() == 100.0
    now[0] = 107.0  # a late user does not move the schedule: the slots it missed are still due
    assert [schedule.take() for _ in range(3)] == [100.25, 100.5, 100.75]


def test_below_95_percent_of_the_target_is_missed():
    assert not RateStatus.of(20.0, 19.0).missed
    assert RateStatus.of(20.0, 18.99).missed
    assert RateStatus.of(10.0, 2.329).message() == "target rate missed: achieved 2.33/s of 10/s"
    assert format_rate(0.05) == "0.05" and format_rate(3.0) == "3"


def test_an_iteration_per_user_cut_off_by_the_stop_is_no_miss():
    # 2 users at 5/s for 6 s: 30 slots, 28 finished and one per user under way at the stop
    assert not RateStatus.of(5.0, 28 / 6, cut_off_per_s=2 / 6).missed
    assert RateStatus.of(5.0, 28 / 6).missed
    # the allowance is an iteration per user, no more: 200/s that 2 users reach at 20/s still misses
    assert RateStatus.of(200.0, 20.0, cut_off_per_s=2 / 6).missed
