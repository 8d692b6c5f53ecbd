"""What the series of /metrics have samples for: a scope is a set of label names and, for a
subject (an exported query, the live alerts, the monitor itself), its rows, each with its label
values. A query's scopes are its own row, its newest batch, its timers, pace, backlog and stateful
operators, and its partitions' rows, backlogs, verdicts and event times."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Generic, NamedTuple, TypeVar

from monitor.health.backlog import Backlog, QueryBacklog, Verdict
from monitor.health.facts import PartitionFacts, QueryFacts, StoredStatus
from monitor.health.state_growth import StateGrowth
from monitor.health.status import Status
from monitor.health.trigger_pace import TriggerPace
from monitor.store.packed.batch_event_times import StoredEventTimes
from monitor.store.read.summary import QuerySummary
from monitor.store.schema.models import Batch, TimerSnapshotRow

S = TypeVar("S")
R = TypeVar("R")

Labels = tuple[str, ...]
Rows = list[tuple[Labels, R]]

QUERY_LABELS: Labels = ("query", "query_id")
PARTITION_LABELS: Labels = (*QUERY_LABELS, "topic", "partition")


@dataclass(frozen=True, eq=False)
class Scope(Generic[S, R]):
    """What a series has samples for: its label names, and the rows of a subject with their
    label values (in that order). A scrape takes a query's rows of a scope once, for all the
    series of the scope."""

    labels: Labels
    rows: Callable[[S], Rows[R]]


@dataclass(frozen=True)
class Exported:
    """A query as a scrape exports it: its summary, judged, its newest measured batch's
    partitions' event times by partition, and the time of the scrape."""

    summary: QuerySummary
    event_times: Mapping[str, StoredEventTimes]
    now_ms: int

    @cached_property
    def labels(self) -> Labels:
        """The query's label values: its name (else its id) and its id."""
        query = self.summary.query
        return (query.name or query.id, query.id)


class Standing(NamedTuple):
    """What a scrape says of every query, its figures readable or not: its stored status, its
    health (an error when its figures could not be exported) and whether they could."""

    labels: Labels
    status: str
    health: Status
    unreadable: bool


class Newest(NamedTuple):
    """A query's newest batch, with the query's facts and the time of the scrape."""

    batch: Batch
    facts: QueryFacts
    now_ms: int


class Measured(NamedTuple):
    """A partition's event times from its newest measurement, and whether it drove the
    query's watermark in the newest batch."""

    times: StoredEventTimes
    drives: bool


@dataclass(frozen=True)
class OwnHealth:
    """The monitor's own health in a scrape: whether the store could be read, how many queries
    are exported, when the alert rules were last evaluated and how many refused events are set
    aside (None: not known)."""

    store_up: bool
    exported: int
    evaluated_ms: int | None
    rejected: int | None
    now_ms: int


def _statuses(standing: Standing) -> Rows[bool]:
    return [((*standing.labels, s.value), standing.status == s) for s in StoredStatus]


def _health(standing: Standing) -> Rows[Standing]:
    return [((*standing.labels, standing.health.label), standing)]


def _standing(standing: Standing) -> Rows[Standing]:
    return [(standing.labels, standing)]


def _query(exported: Exported) -> Rows[Exported]:
    return [(exported.labels, exported)]


def _timers(exported: Exported) -> Rows[TimerSnapshotRow]:
    timers = exported.summary.timers
    return [] if timers is None else [(exported.labels, timers)]


def _newest_batch(exported: Exported) -> Rows[Newest]:
    summary = exported.summary
    if summary.latest is None:
        return []
    return [(exported.labels, Newest(summary.latest, summary.facts, exported.now_ms))]


def _operators(exported: Exported) -> Rows[StateGrowth]:
    if exported.summary.latest is None:
        return []
    return [
        ((*exported.labels, growth.operator or "", str(growth.operator_index)), growth)
        for growth in exported.summary.facts.state
    ]


def _pace(exported: Exported) -> Rows[TriggerPace]:
    pace = exported.summary.facts.pace
    if exported.summary.latest is None or pace is None:
        return []
    return [(exported.labels, pace)]


def _query_backlog(exported: Exported) -> Rows[QueryBacklog]:
    backlog = exported.summary.facts.backlog
    if exported.summary.latest is None or backlog is None:
        return []
    return [(exported.labels, backlog.query)]


def _partitions(exported: Exported) -> Rows[PartitionFacts]:
    if exported.summary.latest is None:
        return []
    # The facts hold one row a partition name (of two sources', the first source's).
    return [
        (_partition_labels(exported, row.topic, row.name), row)
        for row in exported.summary.facts.latest_partitions
    ]


def _partition_backlogs(exported: Exported) -> Rows[Backlog]:
    backlog = exported.summary.facts.backlog
    if exported.summary.latest is None or backlog is None:
        return []
    topics = _topics(exported.summary.facts)
    return [
        (_partition_labels(exported, topics.get(name), name), behind)
        for name, behind in backlog.by_partition().items()
        if behind.records is not None
    ]


def _partition_verdicts(exported: Exported) -> Rows[bool]:
    return [
        ((*labels, verdict.label), backlog.verdict is verdict)
        for labels, backlog in _partition_backlogs(exported)
        for verdict in Verdict
    ]


def _event_times(exported: Exported) -> Rows[Measured]:
    batch = exported.summary.latest
    if batch is None:
        return []
    topics = _topics(exported.summary.facts)
    driver = batch.watermark_driver_partition
    return [
        (_partition_labels(exported, topics.get(name), name), Measured(times, name == driver))
        for name, times in exported.event_times.items()
    ]


def _topics(facts: QueryFacts) -> dict[str, str]:
    """The topic of each partition of the newest batch, by partition name."""
    return {row.name: row.topic or "" for row in facts.latest_partitions}


def _partition_labels(exported: Exported, topic: str | None, name: str) -> Labels:
    """The labels of a query's partition stored as `topic/partition`: the query's, the topic,
    and the partition without it, as Kafka's exporters label them."""
    if topic and name.startswith(f"{topic}/"):
        return (*exported.labels, topic, name[len(topic) + 1 :])
    return (*exported.labels, topic or "", name)


def _alerts(counts: Mapping[tuple[str, str, str], int]) -> Rows[int]:
    return sorted(counts.items())


def _own(health: OwnHealth) -> Rows[OwnHealth]:
    return [((), health)]


STATUSES = Scope((*QUERY_LABELS, "status"), _statuses)
HEALTH = Scope((*QUERY_LABELS, "status"), _health)
STANDING = Scope(QUERY_LABELS, _standing)
QUERY = Scope(QUERY_LABELS, _query)
TIMERS = Scope(QUERY_LABELS, _timers)
NEWEST_BATCH = Scope(QUERY_LABELS, _newest_batch)
OPERATORS = Scope((*QUERY_LABELS, "operator", "operator_index"), _operators)
PACE = Scope(QUERY_LABELS, _pace)
QUERY_BACKLOG = Scope(QUERY_LABELS, _query_backlog)
PARTITIONS = Scope(PARTITION_LABELS, _partitions)
PARTITION_BACKLOGS = Scope(PARTITION_LABELS, _partition_backlogs)
PARTITION_VERDICTS = Scope((*PARTITION_LABELS, "verdict"), _partition_verdicts)
EVENT_TIMES = Scope(PARTITION_LABELS, _event_times)
ALERTS = Scope(("rule", "severity", "state"), _alerts)
OWN = Scope((), _own)
