"""folioperf.histogram: a histogram past DENSE_FROM buckets (an array over the range it has seen) reads, encodes,
packs and merges exactly as the same samples kept sparse, whichever forms meet in a merge."""

from __future__ import annotations

import math
import random

import pytest

from folioperf import histogram
from folioperf.histogram import (
    DENSE_FROM,
    Histogram,
    bucket_of,
    decode_histogram,
    encode_histogram,
    pack_buckets,
    percentiles_us,
    unpack_buckets,
)
from folioperf.metrics import Tally

QUANTILES = (0.0001, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0)


def samples(n: int, seed: int) -> list[int]:
    """Latencies in µs from 0 to hours: exact sub-2048 µs buckets, the 1/1024 ones, the last bucket."""
    rng = random.Random(seed)
    values = [int(rng.lognormvariate(math.log(rng.choice((800, 40_000, 900_000))), 1.2)) for _ in range(n)]
    return values + [0, 1, 2047, 2048, 3_599_999_999, 3_600_000_000]


def counted(values: list[int]) -> dict[int, int]:
    """The expected {bucket's lowest µs: count}, computed without folioperf.histogram's forms."""
    buckets: dict[int, int] = {}
    for us in values:
        buckets[bucket_of(us)] = buckets.get(bucket_of(us), 0) + 1
    return buckets


def recorded(values: list[int]) -> Histogram:
    h = Histogram()
    for us in values:
        h.record(us)
    return h


def kept_sparse(values: list[int], monkeypatch: pytest.MonkeyPatch) -> Histogram:
    """The histogram of `values` as it would be if it never went dense."""
    with monkeypatch.context() as patch:
        patch.setattr(histogram, "DENSE_FROM", 1 << 30)
        return recorded(values)


def assert_same(h: Histogram, values: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """`h` holds `values`: as counted here, and reading, encoding and packing as they do kept sparse."""
    expected = counted(values)
    sparse = kept_sparse(values, monkeypatch)
    assert dict(h) == expected and h == expected and sparse == expected
    assert list(h) == sorted(expected) and list(h.items()) == sorted(expected.items()) == list(sparse.items())
    assert list(h.values()) == [n for _, n in sorted(expected.items())] and len(h) == len(expected)
    assert h.total == sparse.total == len(values)
    low, high = min(values), max(values)
    assert percentiles_us(h, QUANTILES, low, high) == percentiles_us(sparse, QUANTILES, low, high)
    assert percentiles_us(h, QUANTILES, low, high) == percentiles_us(expected, QUANTILES, low, high)
    assert encode_histogram(h) == encode_histogram(sparse) == encode_histogram(expected)
    assert decode_histogram(encode_histogram(h)) == expected
    assert pack_buckets(h) == pack_buckets(sparse)
    assert unpack_buckets(pack_buckets(h)) == expected


def test_many_buckets_go_dense_and_read_as_they_would_sparse(monkeypatch):
    values = samples(20_000, 1)
    assert len(counted(values)) > 10 * DENSE_FROM
    assert_same(recorded(values), values, monkeypatch)


def test_a_small_histogram_reads_the_same(monkeypatch):
    values = samples(40, 2)
    assert len(counted(values)) < DENSE_FROM
    assert_same(recorded(values), values, monkeypatch)


def test_the_dense_range_grows_at_either_end(monkeypatch):
    middle = [50_000 + 64 * i for i in range(DENSE_FROM + 1)]  # dense, over 50..66 ms only
    values = middle + [10, 3_000_000, 5, 7_000_000, 0]
    h = recorded(values)
    assert_same(h, values, monkeypatch)
    with pytest.raises(KeyError):
        h[50_001]  # inside a bucket, not its lowest value
    with pytest.raises(KeyError):
        h[6]  # inside the range, never recorded


@pytest.mark.parametrize("sizes", [(20, 20), (20, 5_000), (5_000, 20), (5_000, 5_000), (0, 5_000), (5_000, 0)],
                         ids=["sparse+sparse", "sparse+dense", "dense+sparse", "dense+dense", "empty+dense", "dense+empty"])
def test_merging_any_two_forms_is_the_merged_samples(sizes, monkeypatch):
    first = samples(sizes[0], 3)[: sizes[0]]
    second = [us * 3 for us in samples(sizes[1], 4)[: sizes[1]]]  # ranges that overlap partly: both ends widen
    merged = recorded(first)
    merged.add(recorded(second))
    assert_same(merged, first + second, monkeypatch)
    other_way = recorded(second)
    other_way.add(recorded(first))
    assert other_way == merged and other_way.total == merged.total
    into_sparse = kept_sparse(first, monkeypatch)  # a dense histogram into one that was kept sparse
    into_sparse.add(recorded(second))
    assert into_sparse == merged and into_sparse.total == merged.total


def test_small_histograms_merged_past_dense_from_read_the_same(monkeypatch):
    parts = [samples(DENSE_FROM // 4, seed) for seed in range(10)]
    merged = Histogram()
    for part in parts:
        merged.add(recorded(part))
    everything = [us for part in parts for us in part]
    assert len(counted(everything)) > DENSE_FROM
    assert_same(merged, everything, monkeypatch)


def test_a_tally_ships_the_same_either_form(monkeypatch):
    values = samples(5_000, 5)
    tallies = []
    for dense_from in (1 << 30, DENSE_FROM):
        with monkeypatch.context() as patch:
            patch.setattr(histogram, "DENSE_FROM", dense_from)
            tally = Tally()
            for us in values:
                tally.time(us)
            tallies.append(tally)
    sparse, dense = tallies
    assert dense.to_wire() == sparse.to_wire()
    back = Tally.from_wire(dense.to_wire())
    assert back.buckets == counted(values) and back.buckets.total == len(values)
