"""How late, how close: log-scale histograms of how far records were from the watermark, and
the smallest watermark delay that would have kept a share of them.

Bucket b counts the distances whose bit length is b: 0 ms in bucket 0, 1 ms in 1, 2–3 ms in 2,
4–7 ms in 3, and so on, each twice as wide as the one before. A late record's distance is how
far at or behind the watermark it was (W − t, from 0); an on-time record's is its slack (t − W,
from 1), where t is the time Spark compares with the watermark.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from fractions import Fraction

# Bucket number (as text, the JSON key) to count; only buckets with records appear.
Histogram = dict[str, int]
# The shares of records the advisor answers for by default.
SHARES = (0.99, 0.999, 1.0)


def bucket(distance_ms: int) -> int:
    """The bucket of a distance in ms (not negative)."""
    return distance_ms.bit_length()


def bucket_bounds(number: int) -> tuple[int, int]:
    """The smallest and largest distance in ms that bucket `number` counts."""
    if number == 0:
        return 0, 0
    return 1 << (number - 1), (1 << number) - 1


def summed(histograms: Iterable[Mapping[str, int]]) -> Histogram:
    """The histograms added up, bucket by bucket."""
    total: Histogram = {}
    for histogram in histograms:
        for number, count in histogram.items():
            total[number] = total.get(number, 0) + count
    return dict(sorted(total.items(), key=lambda item: int(item[0])))


def difference(total: Mapping[str, int], part: Mapping[str, int]) -> Histogram:
    """`total` less `part`, bucket by bucket, `part` being counted in `total`: buckets left
    with no records are left out."""
    left = {number: count - part.get(number, 0) for number, count in total.items()}
    return {number: count for number, count in left.items() if count}


def needed_delays(
    late: Mapping[str, int], slack: Mapping[str, int], delay_ms: int
) -> list[tuple[int, int]]:
    """(delay, records) pairs, smallest delay first: that many records would have been kept
    with that delay or more.

    With a delay larger by x every watermark is x lower, so a record is kept when its margin
    (t − W: the slack, or minus how late it was) plus x is above 0: it needs a delay of
    `delay_ms + 1 − margin`. A bucket gives the margin within its bounds; the bound that needs
    the larger delay is taken, so the answer is never too small.
    """
    needed: dict[int, int] = {}
    for number, count in late.items():
        delay = delay_ms + 1 + bucket_bounds(int(number))[1]
        needed[delay] = needed.get(delay, 0) + count
    for number, count in slack.items():
        delay = max(delay_ms + 1 - bucket_bounds(int(number))[0], 0)
        needed[delay] = needed.get(delay, 0) + count
    return sorted(needed.items())


def smallest_delay(
    late: Mapping[str, int], slack: Mapping[str, int], delay_ms: int, share: float
) -> int | None:
    """The smallest delay (ms, at most one bucket above the exact one) that would have kept
    `share` (above 0, at most 1) of the records the histograms count; None when they count
    none."""
    if not 0 < share <= 1:
        raise ValueError(f"a share of records is above 0 and at most 1, not {share}")
    pairs = needed_delays(late, slack, delay_ms)
    total = sum(count for _, count in pairs)
    if total == 0:
        return None
    # Exact: 0.99 * 100 is 99.00000000000001 in floating point, which would want 100.
    wanted = math.ceil(Fraction(str(share)) * total)
    kept = itertools.accumulate(count for _, count in pairs)
    return next(delay for (delay, _), so_far in zip(pairs, kept, strict=True) if so_far >= wanted)
