"""Shared event types: what the listener collects and the store writes, for every stage."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The name of the instrumented operator's observation in a batch's observed metrics.
OBSERVATION = "wmon"
# How many late records the store keeps per partition and batch, to show what was dropped.
SAMPLES_PER_PARTITION = 5
# One record as the instrumented operator tells of it: key, event time (ms), offset.
Record = tuple[str | None, int, int | None]
# Ids are Spark's UUIDs. Names and partitions are indexed, and an index entry has a size
# limit (PostgreSQL's B-tree: 2,704 bytes): 500 characters of up to 4 bytes stay under it.
# The longest a way in stores (monitor.collect.texts) is the longest a look-up takes
# (monitor.store.read.queries), so every stored query can be found by its name.
MAX_ID = 36
MAX_NAME = 500
# The kinds of trigger that start a batch every interval (QueryStarted.trigger_interval_ms).
PERIODIC_TRIGGERS = frozenset({"ProcessingTime", "Continuous"})


@dataclass(frozen=True)
class QueryStarted:
    """A streaming query started a run; with its trigger where the way in could read it
    (Spark's event does not carry it): the kind as Spark names it (ProcessingTime, AvailableNow,
    OneTime, Continuous, …) and a periodic one's interval; and the Declarative Pipeline whose
    flow it is, where the way in was told (`wmon pipelines`)."""

    query_id: str
    run_id: str
    name: str | None
    timestamp_ms: int
    trigger: str | None = None
    trigger_interval_ms: int | None = None
    pipeline: str | None = None


@dataclass(frozen=True)
class QueryIdle:
    """A trigger found no new data; carries no batch and must never touch batch rows."""

    query_id: str
    run_id: str
    timestamp_ms: int


@dataclass(frozen=True)
class BatchRunning:
    """A batch in flight: at `timestamp_ms` the driver's query status said its trigger was
    active on batch `batch_id` (None: the one after the last stored, before the run has
    reported a batch), as it has been since `since_ms` (as closely as the driver's watch can
    tell). Spark has no event for it; `monitor.attach` and the JVM listener send it while it
    lasts."""

    query_id: str
    run_id: str
    timestamp_ms: int
    batch_id: int | None
    since_ms: int


@dataclass(frozen=True)
class QueryTerminated:
    """A run ended, with Spark's exception text when it failed."""

    query_id: str
    run_id: str
    timestamp_ms: int
    exception: str | None = None
    error_class: str | None = None


def offset_lag(latest_offset: int | None, end_offset: int | None) -> int | None:
    """Latest available offset minus processed offset, when both are known."""
    if latest_offset is None or end_offset is None:
        return None
    return max(latest_offset - end_offset, 0)


@dataclass(frozen=True)
class PartitionOffsets:
    """One source partition's offsets in one batch."""

    partition: str
    topic: str | None
    start_offset: int | None
    end_offset: int | None
    latest_offset: int | None

    @property
    def offset_lag(self) -> int | None:
        """Latest available offset minus processed offset, when both are known."""
        return offset_lag(self.latest_offset, self.end_offset)


@dataclass(frozen=True)
class SourceProgress:
    """One source of a batch: its figures, and its partitions' offsets where the source's
    offsets have partitions (offsets of other shapes are not kept)."""

    source_index: int
    description: str
    kind: str
    num_input_rows: int | None
    input_rows_per_second: float | None
    processed_rows_per_second: float | None
    partitions: tuple[PartitionOffsets, ...] = ()


@dataclass(frozen=True)
class OperatorProgress:
    """One stateful operator of a batch."""

    operator_index: int
    operator_name: str | None
    num_rows_total: int | None
    num_rows_updated: int | None
    num_rows_removed: int | None
    num_rows_dropped_by_watermark: int | None
    memory_used_bytes: int | None
    num_registered_timers: int | None
    num_deleted_timers: int | None
    num_expired_timers: int | None
    custom_metrics: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PartitionEventTimes:
    """What the instrumented operator measured in one partition during one batch."""

    partition: str
    records: int
    min_event_ms: int | None
    max_event_ms: int | None
    late_records: int
    late_watermark_ms: int | None
    delay_ms: int
    late_samples: tuple[Record, ...] = ()
    # The record at max_event_ms (on a tie, the first in sample order).
    max_record: Record | None = None
    # Records more than the tolerance ahead of the batch's processing time.
    future_records: int = 0
    future_lead_ms: int | None = None
    future_samples: tuple[Record, ...] = ()
    # How far from the late watermark the late and the on-time records were (health.lateness).
    late_buckets: dict[str, int] = field(default_factory=dict)
    slack_buckets: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class BatchProgress:
    """One micro-batch of a query, as reported by Spark's progress event."""

    query_id: str
    run_id: str
    name: str | None
    batch_id: int
    batch_time_ms: int
    watermark_ms: int | None
    event_time_min_ms: int | None
    event_time_max_ms: int | None
    event_time_avg_ms: int | None
    num_input_rows: int | None
    input_rows_per_second: float | None
    processed_rows_per_second: float | None
    trigger_duration_ms: int | None
    durations_ms: dict[str, int] = field(default_factory=dict)
    operators: tuple[OperatorProgress, ...] = ()
    sources: tuple[SourceProgress, ...] = ()
    event_times: tuple[PartitionEventTimes, ...] = ()


@dataclass(frozen=True)
class TimerSnapshot:
    """A query's pending timers, read from its checkpoint with Spark's state reader."""

    query_id: str
    run_id: str
    taken_at_ms: int
    watermark_ms: int | None
    pending: int
    next_expiry_ms: int | None
    due_within_ms: int
    due: int


Event = QueryStarted | QueryIdle | BatchRunning | QueryTerminated | BatchProgress | TimerSnapshot
