"""A batch's source partitions, each one :class:`PartitionState` (offsets and health joined with
measured event times) however it is shown: the query page, `wmon partitions`, the scenarios'
checks; and the late records of the look-back window beside them."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.health.backlog import UNKNOWN, Backlog, Backlogs, backlog_fields
from monitor.store.packed import batch_event_times, batch_offsets
from monitor.store.packed.batch_event_times import StoredEventTimes
from monitor.store.packed.batch_offsets import StoredPartition
from monitor.store.read.windows import first_batch_since
from monitor.store.schema.models import Batch


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


def _event_times(row: StoredEventTimes) -> dict[str, Any]:
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
    for time in batch_event_times.of_batches(session, query_id, by_id):
        states.setdefault((time.batch_id, time.partition), {}).update(_event_times(time))
    grouped: dict[int, list[PartitionState]] = {batch_id: [] for batch_id in by_id}
    for (batch_id, name), values in states.items():
        grouped[batch_id].append(PartitionState(batch_id=batch_id, partition=name, **values))
    return grouped


@dataclass(frozen=True)
class PartitionDetail:
    """A partition of a batch, with its late records over the late window and its backlog."""

    state: PartitionState
    late_records_window: int
    recent_late_samples: list[Any]
    backlog: Backlog = UNKNOWN

    def as_dict(self) -> dict[str, Any]:
        """The partition as the API and `wmon partitions --json` give it."""
        return (
            dataclasses.asdict(self.state)
            | {
                "late_records_window": self.late_records_window,
                "recent_late_samples": self.recent_late_samples,
            }
            | backlog_fields(self.backlog)
        )


def partition_details(
    session: so.Session,
    batch: Batch,
    since_ms: int,
    late: Mapping[str, int],
    backlog: Backlogs,
) -> list[PartitionDetail]:
    """The partition table of a batch (the query page's: the latest): its partitions, with
    `late`, their late records in the window from `since_ms` on (as the query's facts counted
    them), that window's newest late records and their backlog as of the batch
    (store.backlog)."""
    wanted = [name for name, count in late.items() if count]
    samples = recent_late_samples(session, batch.query_id, since_ms, wanted)
    states = partition_states(session, [batch])[batch.batch_id]
    behind = {p.partition: p.backlog for p in backlog.partitions}
    return [
        PartitionDetail(
            state,
            late.get(state.partition, 0),
            samples.get(state.partition, []),
            behind.get(state.partition, UNKNOWN),
        )
        for state in states
    ]


# Batches with late records read at a time, newest first, by recent_late_samples.
SAMPLED_BATCHES_AT_ONCE = 16


def recent_late_samples(
    session: so.Session, query_id: str, since_ms: int, late: Collection[str]
) -> dict[str, list[Any]]:
    """Per partition of `late` (those with late records since `since_ms`), the samples of the
    newest batch since then that dropped records: batches read newest first until each has
    been met."""
    first = first_batch_since(session, query_id, since_ms)
    if first is None or not late:
        return {}
    table = batch_event_times.TABLE
    statement = (
        sa.select(table)
        .where(table.c.query_id == query_id, table.c.batch_id >= first, table.c.late_records > 0)
        .order_by(table.c.batch_id.desc())
        .execution_options(yield_per=SAMPLED_BATCHES_AT_ONCE)
    )
    samples: dict[str, list[Any]] = {}
    with session.execute(statement) as batches:
        for row in batches:
            for partition in batch_event_times.unpacked(row):
                if partition.late_records > 0 and partition.partition not in samples:
                    samples[partition.partition] = partition.late_samples
            if samples.keys() >= set(late):
                break
    return samples
