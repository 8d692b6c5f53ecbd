"""The lateness histograms' buckets and the delay advisor, on histograms counted by hand."""

import itertools

import pytest

from monitor.health.lateness import bucket, bucket_bounds, difference, smallest_delay, summed


@pytest.mark.parametrize(
    "distance, expected",
    [(0, 0), (1, 1), (2, 2), (3, 2), (4, 3), (7_200_000, 23), (2**63 - 1, 63)],
    ids=["zero", "one", "two", "three", "four", "two-hours", "largest"],
)
def test_bucket_is_the_bit_length(distance, expected):
    assert bucket(distance) == expected
    low, high = bucket_bounds(expected)
    assert low <= distance <= high


def test_buckets_cover_every_distance_once():
    bounds = [bucket_bounds(number) for number in range(12)]
    assert bounds[:4] == [(0, 0), (1, 1), (2, 3), (4, 7)]
    assert all(high + 1 == low for (_, high), (low, _) in itertools.pairwise(bounds))


def test_summed_adds_bucket_by_bucket_in_bucket_order():
    assert summed([{"12": 1, "3": 2}, {}, {"3": 1, "0": 4}]) == {"0": 4, "3": 3, "12": 1}
    assert list(summed([{"12": 1, "3": 2}])) == ["3", "12"]


def test_difference_takes_a_part_out_of_its_total_and_drops_emptied_buckets():
    assert difference({"0": 4, "3": 3, "12": 1}, {"3": 3, "0": 1}) == {"0": 3, "12": 1}
    assert difference({"3": 2}, {}) == {"3": 2}


# 1,000 records measured against a 10 s delay: 990 on time with 4-7 ms of slack or more,
# 9 late by 1,024-2,047 ms, 1 late by 65,536-131,071 ms.
LATE = {"11": 9, "17": 1}
SLACK = {"3": 500, "20": 490}
DELAY = 10_000


@pytest.mark.parametrize(
    "share, expected",
    [
        # 990 on time: a delay 4 ms shorter (9,997 ms) would still have kept those with 4 ms.
        (0.99, DELAY + 1 - 4),
        # 999: the nine late by up to 2,047 ms need 2,048 ms more.
        (0.999, DELAY + 1 + 2_047),
        (1.0, DELAY + 1 + 131_071),
        # 490 with 524,288 ms of slack or more: kept with no delay at all.
        (0.49, 0),
        (0.5, DELAY + 1 - 4),
    ],
    ids=["99%", "99.9%", "all", "49%", "half"],
)
def test_smallest_delay_keeping_a_share_of_the_records(share, expected):
    assert smallest_delay(LATE, SLACK, DELAY, share) == expected


def test_smallest_delay_is_exact_about_shares_of_round_counts():
    """0.99 of 100 is 99 records, though 0.99 * 100 is 99.00000000000001 in floating point."""
    late, slack = {"1": 1}, {"1": 99}
    assert smallest_delay(late, slack, 1_000, 0.99) == 1_000


def test_smallest_delay_of_nothing_measured_is_none():
    assert smallest_delay({}, {}, 1_000, 0.99) is None


@pytest.mark.parametrize("share", [0, -0.5, 1.5])
def test_smallest_delay_refuses_a_share_out_of_range(share):
    with pytest.raises(ValueError, match="a share of records is above 0 and at most 1"):
        smallest_delay(LATE, SLACK, DELAY, share)
