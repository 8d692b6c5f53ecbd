"""A query judged once: its status with its firing alerts, its alerts counted, what pages and
where it sorts (health.judgment)."""

import pytest

from monitor.alerts.rules import MEANINGS
from monitor.health.facts import QueryFacts
from monitor.health.judgment import AlertCounts, LiveAlert, judge
from monitor.health.status import Status

NOW = 1_000_000_000


def facts(**changes):
    base = {"query_id": "q", "name": "orders", "status": "active", "last_progress_ms": NOW}
    return QueryFacts(**({"batch_id": 3} | base | changes))


def alert(rule, severity="warning", state="firing"):
    fired = NOW - 1_000 if state == "firing" else None
    return LiveAlert(rule, severity, state, NOW - 60_000, fired)


CASES = [
    ("nothing wrong", facts(), [], Status.HEALTHY, AlertCounts(), None),
    (
        "a firing critical future_event_time is no healthy query",
        facts(),
        [alert("future_event_time", "critical")],
        Status.LAGGING,
        AlertCounts(critical=1),
        "critical",
    ),
    (
        "a firing stall keeps it stalled",
        facts(),
        [alert("partition_stalled", "critical")],
        Status.STALLED,
        AlertCounts(critical=1),
        "critical",
    ),
    (
        "pending alerts are counted apart and mean nothing yet",
        facts(),
        [
            alert("falling_behind", state="pending"),
            alert("future_event_time", "critical", "pending"),
        ],
        Status.HEALTHY,
        AlertCounts(pending=2),
        None,
    ),
    (
        "a firing idle partition",
        facts(),
        [alert("partition_idle")],
        Status.IDLE,
        AlertCounts(warning=1),
        "warning",
    ),
    (
        "the facts' status when it is more urgent than the alerts'",
        facts(watermark_stalled=True),
        [alert("late_records")],
        Status.STALLED,
        AlertCounts(warning=1),
        "warning",
    ),
    (
        "an ended query's alerts from before do not make it run",
        facts(status="terminated"),
        [alert("partition_stalled", "critical"), alert("query_terminated")],
        Status.TERMINATED,
        AlertCounts(critical=1, warning=1),
        "critical",
    ),
    (
        "waiting for its first batch",
        facts(batch_id=None),
        [],
        Status.WAITING,
        AlertCounts(),
        None,
    ),
]


@pytest.mark.parametrize(
    ("given", "alerts", "status", "counts", "severity"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_a_query_is_judged_from_its_facts_and_its_firing_alerts(
    given, alerts, status, counts, severity
):
    judgment = judge(given, alerts, NOW, MEANINGS)
    assert (judgment.status, judgment.alerts, judgment.severity) == (status, counts, severity)


def test_what_pages_sorts_first_then_the_status():
    critical_lagging = judge(facts(), [alert("future_event_time", "critical")], NOW, MEANINGS)
    warning_stalled = judge(facts(watermark_stalled=True), [alert("watermark_skew")], NOW, MEANINGS)
    stalled = judge(facts(watermark_stalled=True), [], NOW, MEANINGS)
    healthy = judge(facts(), [], NOW, MEANINGS)
    ended = judge(facts(status="terminated"), [], NOW, MEANINGS)
    ordered = [critical_lagging, warning_stalled, stalled, healthy, ended]
    assert sorted(ordered, key=lambda j: j.urgency) == ordered
