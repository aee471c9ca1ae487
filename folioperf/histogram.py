"""HdrHistogram arithmetic for latencies in µs: the bucket layout of HdrHistogram(1 µs, 1 hour, 3 significant
digits), nearest-rank percentiles read from it, its compressed base64 form for results files, and a compact
form for Locust's messages.

Values below 2048 µs are kept exactly, larger ones in buckets 1/1024 of their size; in memory a histogram
is a sparse dict {bucket's lowest value in µs: count}, and buckets merge by adding counts. A percentile is
the bucket's roundest value clamped to the exact min and max, so it is within 0.1 % (and 1 µs) of the exact
sample percentile, also after merging workers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from hdrh.histogram import HdrHistogram

HISTOGRAM_LOWEST_US = 1
HISTOGRAM_HIGHEST_US = 3_600_000_000
HISTOGRAM_DIGITS = 3

# HdrHistogram(1 µs, 1 h, 3 digits) has 2048 sub-buckets: values that fit in 11 bits are exact.
SUB_BUCKET_BITS = 11
_HALF_SUB_BUCKETS = 1 << (SUB_BUCKET_BITS - 1)




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


def percentiles_us(buckets: Mapping[int, int], quantiles: Sequence[float], min_us: int,
                   max_us: int) -> list[float | None]:
    """Nearest-rank percentiles (µs) of a bucketed sample: for quantile q of n samples, the bucket
    holding the ceil(q·n)-th smallest sample, represented by its roundest value clamped to [min_us, max_us]
    (at most 1/1024 of the value from any sample in the bucket)."""
    total = sum(buckets.values())
    if not total:
        return [None] * len(quantiles)
    # round() first: 0.95 * 100 is 95.00000000000001 in floating point, and its ceil must be 95
    ranks = [min(total, max(1, math.ceil(round(q * total, 9)))) for q in quantiles]
    wanted = sorted(range(len(ranks)), key=ranks.__getitem__)
    result: list[float | None] = [None] * len(ranks)
    seen = 0
    pending = iter(wanted)
    position = next(pending)
    for key in sorted(buckets):
        seen += buckets[key]
        while seen >= ranks[position]:
            result[position] = float(min(max(_roundest(key), min_us), max_us))
            following = next(pending, None)
            if following is None:
                return result
            position = following
    return result


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


def pack_buckets(buckets: Mapping[int, int]) -> list[int]:
    """[Δindex, count, Δindex, count, ...] over HdrHistogram counts indexes: small ints pack small."""
    packed: list[int] = []
    previous = 0
    for key in sorted(buckets):
        index = _index_of(key)
        packed += (index - previous, buckets[key])
        previous = index
    return packed


def unpack_buckets(packed: Sequence[int]) -> dict[int, int]:
    buckets: dict[int, int] = {}
    index = 0
    for i in range(0, len(packed), 2):
        index += packed[i]
        buckets[_key_of(index)] = packed[i + 1]
    return buckets
