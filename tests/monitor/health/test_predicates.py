import pytest

from monitor.config import load_settings
from monitor.health.predicates import (
    Progress,
    Timeouts,
    advance,
    backlog,
    flink_watermark,
    is_idle,
    is_rewound,
    is_stalled,
    skew_between,
)

T = Timeouts(idle_ms=10_000, stall_ms=20_000)


@pytest.mark.parametrize(
    "before, position, available, now, expected",
    [
        (None, 5, 9, 1_000, Progress(5, 9, 1_000, 1_000)),
        (Progress(5, 9, 0, 0), 7, 12, 1_000, Progress(7, 12, 1_000, 1_000)),
        (Progress(5, 9, 0, 0), 5, 12, 1_000, Progress(5, 12, 1_000, 0)),
        (Progress(5, 9, 0, 0), 9, 9, 1_000, Progress(9, 9, 0, 1_000)),
        (Progress(5, 9, 0, 0), 5, 9, 1_000, Progress(5, 9, 0, 0)),
        (Progress(5, None, 0, 0), 8, None, 1_000, Progress(8, None, 1_000, 1_000)),
        (Progress(5, 9, 0, 0), 3, 9, 1_000, Progress(3, 9, 0, 0)),
    ],
    ids=[
        "first",
        "arrived-and-advanced",
        "arrived-only",
        "advanced-only",
        "nothing",
        "no-latest-offset",
        "went-back",
    ],
)
def test_advance(before, position, available, now, expected):
    assert advance(before, position, available, now) == expected


@pytest.mark.parametrize(
    "state, now, idle, stalled",
    [
        (Progress(9, 9, 0, 0), 9_999, False, False),
        (Progress(9, 9, 0, 0), 10_000, True, False),
        (Progress(5, 9, 0, 0), 60_000, False, True),
        (Progress(5, 9, 0, 0), 19_999, False, False),
        (Progress(9, 9, 45_000, 0), 50_000, False, True),
        (Progress(9, 9, 45_000, 45_000), 50_000, False, False),
        (Progress(None, None, 0, 0), 60_000, True, False),
    ],
    ids=[
        "caught-up-briefly",
        "caught-up-long-idle",
        "backlog-not-moving",
        "backlog-not-yet",
        "arriving-not-moving",
        "arriving-and-moving",
        "unknown-offsets",
    ],
)
def test_partition_idle_and_stalled(state, now, idle, stalled):
    assert is_idle(state, now, T) is idle
    assert is_stalled(state, now, T) is stalled
    assert not (idle and backlog(state) > 0), "a partition with a backlog is never idle"


@pytest.mark.parametrize(
    "before, position, expected",
    [
        (None, 3, False),
        (Progress(5, 9, 0, 0), 4, True),
        (Progress(5, 9, 0, 0), 5, False),
        (Progress(None, 9, 0, 0), 1, False),
        (Progress(5, 9, 0, 0), None, False),
    ],
    ids=["first", "backwards", "same", "unknown-before", "unknown-now"],
)
def test_rewound(before, position, expected):
    assert is_rewound(before, position) is expected


@pytest.mark.parametrize(
    "watermarks, idle, skew, flink",
    [
        ({"a": 100, "b": 40, "c": 70}, set(), 60, 40),
        ({"a": 100, "b": 40, "c": 70}, {"b"}, 30, 70),
        ({"a": 100, "b": None}, set(), 0, 100),
        ({"a": 100}, {"a"}, None, None),
        ({}, set(), None, None),
    ],
    ids=["all-active", "idle-excluded", "unknown-ignored", "all-idle", "none"],
)
def test_skew_and_flink_watermark(watermarks, idle, skew, flink):
    assert skew_between(watermarks, idle) == skew
    assert flink_watermark(watermarks, idle) == flink


@pytest.mark.parametrize(
    "idle, driver, skew",
    [
        ({"a"}, "a", 60),
        ({"a"}, None, 30),
        ({"b"}, "a", 30),
        ({"a", "b", "c"}, "a", 0),
    ],
    ids=["idle-driver-counts", "idle-left-out-without-a-driver", "idle-other", "only-the-driver"],
)
def test_skew_counts_the_partition_that_drives_the_watermark_even_when_idle(idle, driver, skew):
    assert skew_between({"a": 100, "b": 40, "c": 70}, idle, driver) == skew


def test_the_default_timeouts_are_the_settings_defaults():
    """A writer given no timeouts judges as one configured with no WMON_ variables."""
    settings = load_settings({})
    assert Timeouts() == Timeouts(settings.idle_timeout_s * 1000, settings.stall_timeout_s * 1000)
