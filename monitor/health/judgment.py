"""A query judged once: its status, its live alerts counted, what of it pages and where it sorts,
from its facts and its live alerts at one time. The overview, the query page, `wmon queries`,
the API and `/metrics` each only say what this says, so that no two of them disagree.

The status (:func:`monitor.health.status.query_status`) is what the facts show; a firing alert
says at least as much: its rule declares the status it means, passed in as
:data:`~monitor.health.status.Meanings` (a firing `future_event_time` is `lagging`, a firing
`no_progress` is `stalled`), so that no query is `healthy` beside a firing alert. Pending
alerts are counted apart: their condition has not held for their rule's `for` yet, and what it
shows is in the facts already.

Queries sort by what pages first (a firing critical alert, then a firing warning, then none),
then by status, then by name.

A partition is judged once too (:func:`partition_status`): the most urgent of what its flags,
its late records, its future-dated records and its backlog's verdict say, so that no row says
`ok` beside its own late records or a backlog falling behind.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from monitor.health.backlog import Verdict
from monitor.health.facts import PartitionFacts, QueryFacts, Thresholds
from monitor.health.predicates import is_losing_late
from monitor.health.status import Meanings, Status, query_status

SEVERITIES = ("critical", "warning")


@dataclass(frozen=True)
class LiveAlert:
    """A pending or firing alert on a query, as its judgment weighs it."""

    rule: str
    severity: str
    state: str
    active_since_ms: int
    fired_at_ms: int | None = None


@dataclass(frozen=True)
class AlertCounts:
    """A query's live alerts: the firing ones by severity, and the pending ones."""

    critical: int = 0
    warning: int = 0
    pending: int = 0


@dataclass(frozen=True)
class Judgment:
    """What a query is at one time: its status and its live alerts counted."""

    status: Status
    alerts: AlertCounts

    @property
    def severity(self) -> str | None:
        """The severity of its most severe firing alert: what pages; None when none fires."""
        if self.alerts.critical:
            return "critical"
        return "warning" if self.alerts.warning else None

    @property
    def urgency(self) -> int:
        """Where the query sorts, the smallest first: what pages, then its status."""
        paging = SEVERITIES.index(self.severity) if self.severity else len(SEVERITIES)
        return paging * len(Status) + self.status


def judge(
    facts: QueryFacts, alerts: Sequence[LiveAlert], now_ms: int, meanings: Meanings
) -> Judgment:
    """The query's judgment at `now_ms` from its facts and its live alerts, each alert's rule
    meaning what `meanings` says."""
    firing = [alert for alert in alerts if alert.state == "firing"]
    counts = AlertCounts(
        critical=sum(alert.severity == "critical" for alert in firing),
        warning=sum(alert.severity == "warning" for alert in firing),
        pending=len(alerts) - len(firing),
    )
    meant = [meanings.get(alert.rule, Status.LAGGING) for alert in firing]
    status = min([query_status(facts, now_ms, meanings), *_while_running(facts, meant)])
    return Judgment(status, counts)


def _while_running(facts: QueryFacts, meant: list[Status]) -> list[Status]:
    """The statuses firing alerts mean that the facts do not contradict: a query that ended
    has ended, whatever its alerts from before say (they resolve at the next evaluation)."""
    if facts.active:
        return meant
    return [status for status in meant if status in (Status.FAILED, Status.ERROR)]


class PartitionStatus(str, enum.Enum):
    """What is wrong with a partition, the most urgent first; `ok` when nothing is."""

    STALLED = "stalled"
    REWOUND = "rewound"
    LOSING_LATE = "losing_late"
    FUTURE_DATED = "future_dated"
    FALLING_BEHIND = "falling_behind"
    IDLE = "idle"
    OK = "ok"


def partition_status(partition: PartitionFacts, thresholds: Thresholds) -> PartitionStatus:
    """The partition's status: the first of stalled (its flag, or its backlog's verdict),
    rewound (likewise), losing records as late (the alert rule `late_records`'s condition),
    future-dated records in the window, falling behind, idle; else ok."""
    verdict = partition.verdict
    if partition.stalled or verdict is Verdict.STALLED:
        return PartitionStatus.STALLED
    if partition.rewound or verdict is Verdict.REWOUND:
        return PartitionStatus.REWOUND
    if is_losing_late(partition, thresholds):
        return PartitionStatus.LOSING_LATE
    if partition.future is not None:
        return PartitionStatus.FUTURE_DATED
    if verdict is Verdict.FALLING_BEHIND:
        return PartitionStatus.FALLING_BEHIND
    return PartitionStatus.IDLE if partition.idle else PartitionStatus.OK
