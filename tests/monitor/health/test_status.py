"""The status rule, case by case: which facts give which status, and how statuses sort."""

import pytest

from monitor.alerts.rules import MEANINGS
from monitor.health.backlog import Backlogs, QueryBacklog, Verdict
from monitor.health.facts import FutureDated, PartitionFacts, QueryFacts, Thresholds
from monitor.health.status import Status, query_status

NOW = 1_000_000_000
SILENCE = 120_000
RECENT = NOW - 1_000


def facts(**changes):
    base = {
        "query_id": "q",
        "name": "orders",
        "status": "active",
        "last_progress_ms": RECENT,
        "batch_id": 7,
        "thresholds": Thresholds(silence_ms=SILENCE),
    }
    return QueryFacts(**(base | changes))


def partitions(*flags, late=0, records=1_000):
    """Partitions of the latest batch with the given flags ('idle', 'stalled' or ''), each
    having read `records` and dropped `late` of them in the late window."""
    return tuple(
        PartitionFacts(
            f"t/{i}", idle=f == "idle", stalled=f == "stalled", late_records=late, records=records
        )
        for i, f in enumerate(flags)
    )


def behind(verdict):
    """A query's backlog of 500 records with `verdict`."""
    return Backlogs(QueryBacklog(500, 60_000, None, None, verdict), ())


CASES = [
    ("a quiet healthy query", facts(), Status.HEALTHY),
    ("failed beats everything", facts(status="failed", watermark_stalled=True), Status.FAILED),
    (
        "terminated beats a stalled last batch",
        facts(status="terminated", partitions=partitions("stalled", "stalled")),
        Status.TERMINATED,
    ),
    ("a stalled watermark", facts(watermark_stalled=True), Status.STALLED),
    ("one stalled partition", facts(partitions=partitions("", "stalled", "", "")), Status.STALLED),
    (
        "a partition stalled only in an older batch",
        facts(partitions=(PartitionFacts("t/0", stalled=True, in_latest_batch=False),)),
        Status.HEALTHY,
    ),
    (
        "an active query silent past the silence threshold",
        facts(last_progress_ms=NOW - SILENCE - 1),
        Status.STALLED,
    ),
    ("silent just to the threshold", facts(last_progress_ms=NOW - SILENCE), Status.HEALTHY),
    (
        "an idle query silent past the threshold, as no_progress fires for it",
        facts(status="idle", last_progress_ms=NOW - 10 * SILENCE),
        Status.STALLED,
    ),
    (
        "a stall's alert still live, held after its condition cleared",
        facts(alerting=frozenset({"partition_stalled"})),
        Status.STALLED,
    ),
    (
        "another rule's live alert is no stall",
        facts(alerting=frozenset({"watermark_skew"})),
        Status.HEALTHY,
    ),
    (
        "stalled beats lagging",
        facts(watermark_stalled=True, partitions=partitions("", late=500)),
        Status.STALLED,
    ),
    ("losing records as late", facts(partitions=partitions("", late=101)), Status.LAGGING),
    ("late records at the count", facts(partitions=partitions("", late=100)), Status.HEALTHY),
    (
        "late records at the share of what was read",
        facts(partitions=partitions("", late=200, records=20_000)),
        Status.HEALTHY,
    ),
    (
        "late records of a partition not in the latest batch",
        facts(
            partitions=(
                PartitionFacts("t/9", late_records=200, records=400, in_latest_batch=False),
            )
        ),
        Status.LAGGING,
    ),
    (
        "future-dated records in the window",
        facts(partitions=(PartitionFacts("t/2", future=FutureDated(1, 7_200_000)),)),
        Status.LAGGING,
    ),
    ("falling behind", facts(backlog=behind(Verdict.FALLING_BEHIND)), Status.LAGGING),
    ("catching up", facts(backlog=behind(Verdict.CATCHING_UP)), Status.HEALTHY),
    ("keeping pace with a backlog", facts(backlog=behind(Verdict.OK)), Status.HEALTHY),
    ("a backlog not judged yet", facts(backlog=behind(None)), Status.HEALTHY),
    ("no batch yet", facts(batch_id=None), Status.WAITING),
    (
        "no batch yet, and silent past the threshold",
        facts(batch_id=None, last_progress_ms=NOW - SILENCE - 1),
        Status.STALLED,
    ),
    ("ended before its first batch", facts(batch_id=None, status="terminated"), Status.TERMINATED),
    (
        "lagging beats idle",
        facts(status="idle", partitions=partitions("idle", late=300)),
        Status.LAGGING,
    ),
    ("Spark says idle", facts(status="idle"), Status.IDLE),
    ("every partition idle", facts(partitions=partitions("idle", "idle", "idle")), Status.IDLE),
    ("some partitions idle", facts(partitions=partitions("idle", "idle", "")), Status.HEALTHY),
    ("no partitions is not all idle", facts(partitions=()), Status.HEALTHY),
]


@pytest.mark.parametrize(("given", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_query_status(given, expected):
    assert query_status(given, NOW, MEANINGS) is expected


def test_statuses_sort_by_urgency_with_terminated_last():
    ordered = sorted(Status, key=lambda status: status)
    assert [s.label for s in ordered] == [
        "failed",
        "error",
        "stalled",
        "lagging",
        "idle",
        "waiting",
        "healthy",
        "terminated",
    ]
