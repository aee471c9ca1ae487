"""The collector during a test (folioperf.steady_gc): what is alive at the start is frozen and young
collections are rarer; the stop gives both back, so a web UI's next test, or the process's life after the
test, runs with the collector as it was."""

from __future__ import annotations

import gc

from folioperf.steady_gc import YOUNG_THRESHOLD, SteadyGC


def test_a_test_freezes_what_is_alive_and_its_stop_gives_the_collector_back():
    before = gc.get_threshold()
    steady = SteadyGC()
    long_lived = [{"barcode": str(n)} for n in range(1000)]  # test data, as the pools hold it
    try:
        steady.start()
        steady.start()  # a second start changes nothing
        assert gc.get_freeze_count() >= len(long_lived)
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
    finally:
        steady.stop()
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before
    steady.stop()  # a stop without a start (a test that ended twice) changes nothing
    assert gc.get_threshold() == before


def test_a_higher_threshold_set_by_the_user_is_kept():
    before = gc.get_threshold()
    gc.set_threshold(50_000, *before[1:])
    steady = SteadyGC()
    try:
        steady.start()
        assert gc.get_threshold()[0] == 50_000
        steady.stop()
        assert gc.get_threshold()[0] == 50_000
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
