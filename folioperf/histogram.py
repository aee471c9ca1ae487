"""HdrHistogram arithmetic for latencies in µs: the bucket layout of HdrHistogram(1 µs, 1 hour, 3 significant
digits), nearest-rank percentiles read from it, its compressed base64 form for results files, and a compact
form for Locust's messages.

Values below 2048 µs are kept exactly, larger ones in buckets 1/1024 of their size, and buckets merge by
adding counts. In memory a histogram is a `Histogram`: a sparse dict {bucket's lowest value in µs: count}
while it has few buckets, an array of counts over the range of buckets it has seen past that (a long run's
totals keep hitting new buckets for hours; a dict entry costs about 100 bytes, an array slot 8, and the range
stops growing once the run has seen its extremes). A percentile is the bucket's roundest value clamped to the
exact min and max, so it is within 0.1 % (and 1 µs) of the exact sample percentile, also after merging workers.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections.abc import Callable, ItemsView, Iterator, Mapping, Sequence, ValuesView
from itertools import accumulate, chain, compress

from hdrh.histogram import HdrHistogram

HISTOGRAM_LOWEST_US = 1
HISTOGRAM_HIGHEST_US = 3_600_000_000
HISTOGRAM_DIGITS = 3

# HdrHistogram(1 µs, 1 h, 3 digits) has 2048 sub-buckets: values that fit in 11 bits are exact.
SUB_BUCKET_BITS = 11
_HALF_SUB_BUCKETS = 1 << (SUB_BUCKET_BITS - 1)
# Past this many buckets a histogram keeps its counts in an array (see the module docstring): 256 dict entries
# (about 25 KB) cost what an array over 20 .. 200 ms does (3,400 slots of 8 bytes).
DENSE_FROM = 256


def bucket_of(us: int) -> int:
    """The lowest value (µs) of the HdrHistogram bucket that holds `us`."""
    shift = us.bit_length() - SUB_BUCKET_BITS
    return us >> shift << shift if shift > 0 else us


def _bucket_width(key: int) -> int:
    shift = key.bit_length() - SUB_BUCKET_BITS
    return 1 << shift if shift > 0 else 1


def _index_of(key: int) -> int:
    """HdrHistogram's counts index of a bucket (its position in the histogram's counts array)."""
    shift = key.bit_length() - SUB_BUCKET_BITS
    return key if shift <= 0 else shift * _HALF_SUB_BUCKETS + (key >> shift)


def _key_of(index: int) -> int:
    if index < 2 * _HALF_SUB_BUCKETS:
        return index
    shift = index // _HALF_SUB_BUCKETS - 1
    return (index - shift * _HALF_SUB_BUCKETS) << shift


def _keys_of(low: int, high: int) -> Iterator[int]:
    """The keys of counts indexes low .. high - 1, in order: a range per power of two, no Python call per bucket."""
    ranges = [range(low, min(high, 2 * _HALF_SUB_BUCKETS))]
    index = max(low, 2 * _HALF_SUB_BUCKETS)
    while index < high:
        shift = index // _HALF_SUB_BUCKETS - 1
        end = min(high, (shift + 2) * _HALF_SUB_BUCKETS)
        ranges.append(range(_key_of(index), _key_of(end - 1) + 1, 1 << shift))
        index = end
    return chain.from_iterable(ranges)


def _roundest(key: int) -> int:
    """The value of a bucket with the fewest significant digits (closest to the middle on a tie): a bucket
    is precise to 3-4 digits, so 95 ms reads 95.0, not a midpoint such as 95.007."""
    high = key + _bucket_width(key) - 1
    step = 10 ** (len(str(high)) - 1)
    while step > 1:
        first = -(-key // step) * step
        if first <= high:
            middle = key + high
            return min(range(first, high + 1, step), key=lambda v: abs(2 * v - middle))
        step //= 10
    return key


class Histogram(Mapping[int, int]):
    """Counts by bucket, read as the Mapping {bucket's lowest value in µs: count} of its non-empty buckets (in
    bucket order). Sparse (a dict) up to DENSE_FROM buckets, dense past that: `_counts[i]` counts the bucket of
    HdrHistogram counts index `_low + i`, over the range of indexes seen. `total` is the number of samples."""

    __slots__ = ("_sparse", "_counts", "_low", "total")

    def __init__(self, buckets: Mapping[int, int] | None = None) -> None:
        self._sparse: dict[int, int] | None = {}
        self._counts = array("q")
        self._low = 0
        self.total = 0
        if buckets:
            self._sparse = dict(buckets)
            self.total = sum(buckets.values())
            if len(buckets) > DENSE_FROM:
                self._densify()

    def record(self, us: int) -> None:
        """One sample of `us` (≥ 0) µs. Inline in every request: the bucket arithmetic is written out."""
        self.total += 1
        shift = us.bit_length() - SUB_BUCKET_BITS
        sparse = self._sparse
        if sparse is not None:
            if shift > 0:
                us = us >> shift << shift
            sparse[us] = sparse.get(us, 0) + 1
            if len(sparse) > DENSE_FROM:
                self._densify()
            return
        position = (shift * _HALF_SUB_BUCKETS + (us >> shift) if shift > 0 else us) - self._low
        counts = self._counts
        if 0 <= position < len(counts):
            counts[position] += 1
        else:
            self._add_index(position + self._low, 1)

    def add(self, other: Histogram) -> None:
        """Adds another histogram's counts (either form into either form)."""
        if self._sparse is not None and not self._sparse:  # empty: a copy (a snapshot's totals start so)
            self._sparse = None if other._sparse is None else dict(other._sparse)
            self._counts, self._low, self.total = array("q", other._counts), other._low, other.total
            return
        self.total += other.total
        if other._sparse is not None:
            sparse = self._sparse
            if sparse is None:
                for key, count in other._sparse.items():
                    self._add_index(_index_of(key), count)
                return
            for key, count in other._sparse.items():
                sparse[key] = sparse.get(key, 0) + count
            if len(sparse) > DENSE_FROM:
                self._densify()
            return
        self._densify()
        counts, low = other._counts, other._low
        self._add_index(low, 0)
        self._add_index(low + len(counts) - 1, 0)
        mine, offset = self._counts, low - self._low
        for i, count in enumerate(counts):
            if count:
                mine[offset + i] += count

    def _add_index(self, index: int, count: int) -> None:
        """Adds to the dense form's bucket `index`, widening the range to it first if it lies outside."""
        counts = self._counts
        position = index - self._low
        if position < 0:
            counts[0:0] = array("q", bytes(8 * -position))
            self._low, position = index, 0
        elif position >= len(counts):
            counts.frombytes(bytes(8 * (position - len(counts) + 1)))
        counts[position] += count

    def _densify(self) -> None:
        sparse = self._sparse
        if not sparse:  # dense already, or empty (no range yet)
            return
        self._sparse = None
        indexes = {_index_of(key): count for key, count in sparse.items()}
        self._low = min(indexes)
        self._counts = array("q", bytes(8 * (max(indexes) - self._low + 1)))
        for index, count in indexes.items():
            self._counts[index - self._low] = count

    def _indexed(self) -> Iterator[tuple[int, int]]:
        """(counts index, count) of each non-empty bucket, in bucket order."""
        if self._sparse is not None:
            return ((_index_of(key), self._sparse[key]) for key in sorted(self._sparse))
        counts, low = self._counts, self._low
        return zip(compress(range(low, low + len(counts)), counts), compress(counts, counts))

    def __iter__(self) -> Iterator[int]:
        if self._sparse is not None:
            return iter(sorted(self._sparse))
        return compress(_keys_of(self._low, self._low + len(self._counts)), self._counts)  # itertools: a walk in C

    def __len__(self) -> int:
        return len(self._sparse) if self._sparse is not None else len(self._counts) - self._counts.count(0)

    def __getitem__(self, key: int) -> int:
        if self._sparse is not None:
            return self._sparse[key]
        position = _index_of(key) - self._low
        if key == bucket_of(key) and 0 <= position < len(self._counts) and self._counts[position]:
            return self._counts[position]
        raise KeyError(key)

    def items(self) -> ItemsView[int, int]:
        return _Items(self)

    def values(self) -> ValuesView[int]:
        return _Values(self)


class _Items(ItemsView[int, int]):
    """A Histogram's items without a look-up per bucket (a dense one's would cost more than the walk)."""

    _mapping: Histogram

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self._mapping, self._mapping.values())


class _Values(ValuesView[int]):
    _mapping: Histogram

    def __iter__(self) -> Iterator[int]:
        histogram = self._mapping
        if histogram._sparse is not None:
            return map(histogram._sparse.__getitem__, sorted(histogram._sparse))
        return compress(histogram._counts, histogram._counts)


def _in_order(buckets: Mapping[int, int]) -> tuple[Sequence[int], Callable[[int], int]]:
    """The counts of a histogram's buckets in bucket order (empty ones may be among them), and the key at a
    position of that sequence: a dense Histogram's own array, else its keys sorted."""
    if isinstance(buckets, Histogram):
        if buckets._sparse is None:
            low = buckets._low
            return buckets._counts, lambda position: _key_of(low + position)
        buckets = buckets._sparse
    keys = sorted(buckets)
    return [buckets[key] for key in keys], keys.__getitem__


def percentiles_us(buckets: Mapping[int, int], quantiles: Sequence[float], min_us: int,
                   max_us: int) -> list[float | None]:
    """Nearest-rank percentiles (µs) of a bucketed sample: for quantile q of n samples, the bucket
    holding the ceil(q·n)-th smallest sample, represented by its roundest value clamped to [min_us, max_us]
    (at most 1/1024 of the value from any sample in the bucket)."""
    counts, key_at = _in_order(buckets)
    cumulative = list(accumulate(counts))  # in C: a snapshot reads thousands of buckets of hundreds of names
    total = cumulative[-1] if cumulative else 0
    if not total:
        return [None] * len(quantiles)
    # round() first: 0.95 * 100 is 95.00000000000001 in floating point, and its ceil must be 95
    ranks = [min(total, max(1, math.ceil(round(q * total, 9)))) for q in quantiles]
    return [float(min(max(_roundest(key_at(bisect_left(cumulative, rank))), min_us), max_us)) for rank in ranks]


def encode_histogram(buckets: Mapping[int, int]) -> str:
    """HdrHistogram's compressed base64 form (V2, µs, 1 µs .. 1 h, 3 digits) of a bucketed sample."""
    histogram = HdrHistogram(HISTOGRAM_LOWEST_US, HISTOGRAM_HIGHEST_US, HISTOGRAM_DIGITS)
    for key, count in buckets.items():
        histogram.record_value(min(key, HISTOGRAM_HIGHEST_US), count)
    return histogram.encode().decode("ascii")


def decode_histogram(encoded: str) -> dict[int, int]:
    """The sparse {bucket µs: count} form of an encoded HdrHistogram."""
    histogram = HdrHistogram.decode(encoded)
    counts = histogram.counts
    size = min(len(counts), histogram.encoder.payload.counts_len)
    return {histogram.get_value_from_index(i): counts[i] for i in range(size) if counts[i]}


def pack_buckets(buckets: Histogram) -> list[int]:
    """[Δindex, count, Δindex, count, ...] over HdrHistogram counts indexes: small ints pack small."""
    packed: list[int] = []
    previous = 0
    for index, count in buckets._indexed():
        packed += (index - previous, count)
        previous = index
    return packed


def unpack_buckets(packed: Sequence[int]) -> Histogram:
    buckets: dict[int, int] = {}
    index = 0
    for i in range(0, len(packed), 2):
        index += packed[i]
        buckets[_key_of(index)] = packed[i + 1]
    return Histogram(buckets)
