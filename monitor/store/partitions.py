"""A batch's source partitions, each one :class:`PartitionState` (offsets and health joined with
measured event times) however it is shown: the query page, `wmon partitions`, the scenarios'
checks; and the late records of the look-back window beside them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store import batch_offsets
from monitor.store.batch_offsets import StoredPartition
from monitor.store.models import Batch, PartitionEventTime
from monitor.store.windows import first_batch_since, late_by_partition


@dataclass(frozen=True)
class PartitionState:
    """One source partition in one batch: offsets and health joined with measured event times."""

    batch_id: int
    partition: str
    topic: str | None = None
    start_offset: int | None = None
    end_offset: int | None = None
    latest_offset: int | None = None
    offset_lag: int | None = None
    rows_per_second: float | None = None
    idle: bool = False
    stalled: bool = False
    rewound: bool = False
    records: int | None = None
    max_event_time_ms: int | None = None
    partition_watermark_ms: int | None = None
    time_lag_ms: int | None = None
    late_records: int | None = None
    late_records_total: int | None = None
    late_samples: list[Any] = field(default_factory=list)
    future_records: int | None = None
    future_lead_ms: int | None = None


def _rows_per_second(row: StoredPartition, batch: Batch) -> float | None:
    # Spark's input rate is the batch's rows over the time since the previous trigger; the
    # same time applies to each partition's share of the rows.
    if row.start_offset is None or row.end_offset is None or batch.input_rows_per_second is None:
        return None
    if not batch.num_input_rows:
        return 0.0
    return (row.end_offset - row.start_offset) * batch.input_rows_per_second / batch.num_input_rows


def _offsets(row: StoredPartition, batch: Batch) -> dict[str, Any]:
    return {
        "topic": row.topic,
        "start_offset": row.start_offset,
        "end_offset": row.end_offset,
        "latest_offset": row.latest_offset,
        "offset_lag": row.offset_lag,
        "rows_per_second": _rows_per_second(row, batch),
        "idle": row.idle,
        "stalled": row.stalled,
        "rewound": row.rewound,
    }


def _event_times(row: PartitionEventTime) -> dict[str, Any]:
    return {
        "records": row.records,
        "max_event_time_ms": row.max_event_time_ms,
        "partition_watermark_ms": row.partition_watermark_ms,
        "time_lag_ms": row.time_lag_ms,
        "late_records": row.late_records,
        "late_records_total": row.late_records_total,
        "late_samples": row.late_samples,
        "future_records": row.future_records,
        "future_lead_ms": row.future_lead_ms,
    }


def partition_states(
    session: so.Session, batches: Sequence[Batch]
) -> dict[int, list[PartitionState]]:
    """The partitions of some batches of one query, by batch id, in source and name order."""
    if not batches:
        return {}
    query_id, by_id = batches[0].query_id, {batch.batch_id: batch for batch in batches}
    states: dict[tuple[int, str], dict[str, Any]] = {}
    offsets = batch_offsets.of_batches(session, query_id, list(by_id))
    for row in sorted(offsets, key=lambda row: (row.batch_id, row.source_index, row.partition)):
        states[row.batch_id, row.partition] = _offsets(row, by_id[row.batch_id])
    times = session.scalars(
        sa.select(PartitionEventTime)
        .where(PartitionEventTime.query_id == query_id, PartitionEventTime.batch_id.in_(by_id))
        .order_by(PartitionEventTime.batch_id, PartitionEventTime.partition)
    )
    for time in times:
        states.setdefault((time.batch_id, time.partition), {}).update(_event_times(time))
    grouped: dict[int, list[PartitionState]] = {batch_id: [] for batch_id in by_id}
    for (batch_id, name), values in states.items():
        grouped[batch_id].append(PartitionState(batch_id=batch_id, partition=name, **values))
    return grouped


@dataclass(frozen=True)
class PartitionDetail:
    """A partition of a batch, with its late records over the late window."""

    state: PartitionState
    late_records_window: int
    recent_late_samples: list[Any]

    def as_dict(self) -> dict[str, Any]:
        """The partition as the API and `wmon partitions --json` give it."""
        return dataclasses.asdict(self.state) | {
            "late_records_window": self.late_records_window,
            "recent_late_samples": self.recent_late_samples,
        }


def partition_details(session: so.Session, batch: Batch, since_ms: int) -> list[PartitionDetail]:
    """The partition table of a batch (the query page's: the latest): its partitions, with
    the late window from `since_ms` on."""
    late = late_by_partition(session, batch.query_id, since_ms)
    samples = recent_late_samples(session, batch.query_id, since_ms)
    states = partition_states(session, [batch])[batch.batch_id]
    return [
        PartitionDetail(state, late.get(state.partition, 0), samples.get(state.partition, []))
        for state in states
    ]


def recent_late_samples(session: so.Session, query_id: str, since_ms: int) -> dict[str, list[Any]]:
    """Per partition, the samples of the newest batch since `since_ms` that dropped records."""
    first = first_batch_since(session, query_id, since_ms)
    if first is None:
        return {}
    newest = (
        sa.func.row_number()
        .over(
            partition_by=PartitionEventTime.partition, order_by=PartitionEventTime.batch_id.desc()
        )
        .label("newest")
    )
    ranked = (
        sa.select(PartitionEventTime.partition, PartitionEventTime.late_samples, newest)
        .where(
            PartitionEventTime.query_id == query_id,
            PartitionEventTime.batch_id >= first,
            PartitionEventTime.late_records > 0,
        )
        .subquery()
    )
    rows = session.execute(
        sa.select(ranked.c.partition, ranked.c.late_samples).where(ranked.c.newest == 1)
    )
    return {partition: samples for partition, samples in rows}
