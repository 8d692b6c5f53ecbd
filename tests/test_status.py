"""The status rule, case by case: which facts give which status, and how statuses sort."""

import pytest

from monitor.status import Facts, Status, query_status

NOW = 1_000_000_000
STALL = 120_000
RECENT = NOW - 1_000


def facts(**changes):
    return Facts(**({"stored_status": "active", "last_progress_ms": RECENT} | changes))


CASES = [
    ("a quiet healthy query", facts(), Status.HEALTHY),
    (
        "failed beats everything",
        facts(stored_status="failed", watermark_stalled=True),
        Status.FAILED,
    ),
    (
        "terminated beats a stalled last batch",
        facts(stored_status="terminated", stalled_partitions=2),
        Status.TERMINATED,
    ),
    ("a stalled watermark", facts(watermark_stalled=True), Status.STALLED),
    ("one stalled partition", facts(partitions=4, stalled_partitions=1), Status.STALLED),
    (
        "an active query silent for the stall timeout",
        facts(last_progress_ms=NOW - STALL),
        Status.STALLED,
    ),
    (
        "silent just under the stall timeout",
        facts(last_progress_ms=NOW - STALL + 1),
        Status.HEALTHY,
    ),
    (
        "an idle query may stay silent",
        facts(stored_status="idle", last_progress_ms=NOW - 10 * STALL),
        Status.IDLE,
    ),
    ("stalled beats lagging", facts(watermark_stalled=True, late_records=5), Status.STALLED),
    ("late records in the window", facts(late_records=1), Status.LAGGING),
    ("offset lag grew", facts(offset_lag_trend=[10, 5, None, 12]), Status.LAGGING),
    ("offset lag shrank", facts(offset_lag_trend=[12, 30, 10]), Status.HEALTHY),
    ("offset lag steady", facts(offset_lag_trend=[7, 7]), Status.HEALTHY),
    ("one known lag point is no trend", facts(offset_lag_trend=[None, 9]), Status.HEALTHY),
    ("lagging beats idle", facts(stored_status="idle", late_records=3), Status.LAGGING),
    ("Spark says idle", facts(stored_status="idle"), Status.IDLE),
    ("every partition idle", facts(partitions=3, idle_partitions=3), Status.IDLE),
    ("some partitions idle", facts(partitions=3, idle_partitions=2), Status.HEALTHY),
    ("no partitions is not all idle", facts(partitions=0), Status.HEALTHY),
]


@pytest.mark.parametrize(("given", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_query_status(given, expected):
    assert query_status(given, NOW, STALL) is expected


def test_statuses_sort_by_urgency_with_terminated_last():
    ordered = sorted(Status, key=lambda status: status)
    assert [s.label for s in ordered] == [
        "failed",
        "stalled",
        "lagging",
        "idle",
        "healthy",
        "terminated",
    ]
