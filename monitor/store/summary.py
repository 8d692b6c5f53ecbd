"""The live state of a query as the dashboard shows it: latest batch, partitions, late records.

Windows over time are turned into batch id ranges first, so that every read uses the
`(query_id, batch_id, ...)` unique indexes however long the stored history is.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.status import Facts
from monitor.store.models import (
    Batch,
    Partition,
    PartitionEventTime,
    Query,
    StateOperator,
    TimerSnapshotRow,
)

TREND_POINTS = 30


@dataclass(frozen=True)
class TrendPoint:
    """One recent batch in a query's small trend line."""

    batch_id: int
    batch_time_ms: int
    watermark_ms: int | None
    offset_lag: int | None


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


@dataclass(frozen=True)
class QuerySummary:
    """What the overview shows of one query."""

    query: Query
    latest: Batch | None
    partitions: Sequence[Partition]
    late_records: int
    timers: TimerSnapshotRow | None
    trend: Sequence[TrendPoint]

    @property
    def offset_lag(self) -> int | None:
        """Total offset lag of the latest batch's partitions, None when none is known."""
        known = [p.offset_lag for p in self.partitions if p.offset_lag is not None]
        return sum(known) if known else None

    def facts(self) -> Facts:
        """The facts the status rule decides on."""
        return Facts(
            stored_status=self.query.status,
            last_progress_ms=self.query.updated_at_ms,
            watermark_stalled=bool(self.latest and self.latest.watermark_stalled),
            partitions=len(self.partitions),
            stalled_partitions=sum(p.stalled for p in self.partitions),
            idle_partitions=sum(p.idle for p in self.partitions),
            late_records=self.late_records,
            offset_lag_trend=[point.offset_lag for point in self.trend],
        )


def summarize(session: so.Session, query: Query, since_ms: int) -> QuerySummary:
    """The overview of one query; late records are counted from `since_ms` on."""
    latest = latest_batch(session, query.id)
    partitions: Sequence[Partition] = []
    if latest is not None:
        partitions = session.scalars(
            sa.select(Partition).where(
                Partition.query_id == query.id, Partition.batch_id == latest.batch_id
            )
        ).all()
    late = sum(late_by_partition(session, query.id, since_ms).values())
    return QuerySummary(
        query, latest, partitions, late, latest_timers(session, query.id), trend(session, query.id)
    )


def latest_batch(session: so.Session, query_id: str) -> Batch | None:
    """The query's batch with the highest batch id."""
    return session.scalars(
        sa.select(Batch).where(Batch.query_id == query_id).order_by(Batch.batch_id.desc()).limit(1)
    ).first()


def latest_timers(session: so.Session, query_id: str) -> TimerSnapshotRow | None:
    """The query's newest pending-timer snapshot."""
    return session.scalars(
        sa.select(TimerSnapshotRow)
        .where(TimerSnapshotRow.query_id == query_id)
        .order_by(TimerSnapshotRow.taken_at_ms.desc(), TimerSnapshotRow.id.desc())
        .limit(1)
    ).first()


def first_batch_since(session: so.Session, query_id: str, since_ms: int) -> int | None:
    """The id of the query's first batch at or after `since_ms`, None when there is none."""
    # Read on its own: as a literal, the batch id lets PostgreSQL plan an index range scan.
    return session.scalar(
        sa.select(Batch.batch_id)
        .where(Batch.query_id == query_id, Batch.batch_time_ms >= since_ms)
        .order_by(Batch.batch_time_ms, Batch.batch_id)
        .limit(1)
    )


def late_by_partition(session: so.Session, query_id: str, since_ms: int) -> dict[str, int]:
    """Late records per partition in the batches stored from `since_ms` on."""
    first = first_batch_since(session, query_id, since_ms)
    if first is None:
        return {}
    rows = session.execute(
        sa.select(PartitionEventTime.partition, sa.func.sum(PartitionEventTime.late_records))
        .where(PartitionEventTime.query_id == query_id, PartitionEventTime.batch_id >= first)
        .group_by(PartitionEventTime.partition)
    )
    return {partition: int(late or 0) for partition, late in rows}


def rewound_since(session: so.Session, query_id: str, since_ms: int) -> tuple[bool, set[str]]:
    """Whether the watermark went back in the batches stored from `since_ms` on, and the
    partitions that did."""
    first = first_batch_since(session, query_id, since_ms)
    if first is None:
        return False, set()
    watermark = session.scalar(
        sa.select(
            sa.exists().where(
                Batch.query_id == query_id, Batch.batch_id >= first, Batch.watermark_rewound
            )
        )
    )
    partitions = session.scalars(
        sa.select(Partition.partition)
        .distinct()
        .where(Partition.query_id == query_id, Partition.batch_id >= first, Partition.rewound)
    )
    return bool(watermark), set(partitions)


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


def trend(session: so.Session, query_id: str, points: int = TREND_POINTS) -> list[TrendPoint]:
    """The last `points` batches: watermark and total offset lag, oldest first."""
    recent = (
        sa.select(Batch.batch_id)
        .where(Batch.query_id == query_id)
        .order_by(Batch.batch_id.desc())
        .limit(points)
    )
    rows = session.execute(
        sa.select(
            Batch.batch_id,
            Batch.batch_time_ms,
            Batch.watermark_ms,
            sa.func.sum(Partition.offset_lag),
        )
        .outerjoin(
            Partition,
            sa.and_(Partition.query_id == Batch.query_id, Partition.batch_id == Batch.batch_id),
        )
        .where(Batch.query_id == query_id, Batch.batch_id.in_(recent))
        .group_by(Batch.batch_id, Batch.batch_time_ms, Batch.watermark_ms)
        .order_by(Batch.batch_id)
    )
    return [TrendPoint(b, t, w, None if lag is None else int(lag)) for b, t, w, lag in rows]


def rows_dropped(session: so.Session, query_id: str, batch_ids: Collection[int]) -> dict[int, int]:
    """Rows dropped by watermark per batch, summed over its stateful operators."""
    rows = session.execute(
        sa.select(StateOperator.batch_id, sa.func.sum(StateOperator.num_rows_dropped_by_watermark))
        .where(StateOperator.query_id == query_id, StateOperator.batch_id.in_(batch_ids))
        .group_by(StateOperator.batch_id)
    )
    return {batch_id: int(dropped or 0) for batch_id, dropped in rows}


def _rows_per_second(row: Partition, batch: Batch) -> float | None:
    # Spark's input rate is the batch's rows over the time since the previous trigger; the
    # same time applies to each partition's share of the rows.
    if row.start_offset is None or row.end_offset is None or batch.input_rows_per_second is None:
        return None
    if not batch.num_input_rows:
        return 0.0
    return (row.end_offset - row.start_offset) * batch.input_rows_per_second / batch.num_input_rows


def _offsets(row: Partition, batch: Batch) -> dict[str, Any]:
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
    }


def partition_states(
    session: so.Session, batches: Sequence[Batch]
) -> dict[int, list[PartitionState]]:
    """The partitions of some batches of one query, by batch id, in source and name order."""
    if not batches:
        return {}
    query_id, by_id = batches[0].query_id, {batch.batch_id: batch for batch in batches}
    states: dict[tuple[int, str], dict[str, Any]] = {}
    offsets = session.scalars(
        sa.select(Partition)
        .where(Partition.query_id == query_id, Partition.batch_id.in_(by_id))
        .order_by(Partition.batch_id, Partition.source_index, Partition.partition)
    )
    for row in offsets:
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
    """A partition of the latest batch, with its late records over the late window."""

    state: PartitionState
    late_records_window: int
    recent_late_samples: list[Any]


def partition_details(session: so.Session, latest: Batch, since_ms: int) -> list[PartitionDetail]:
    """The query page's partition table: the latest batch's partitions and the late window."""
    late = late_by_partition(session, latest.query_id, since_ms)
    samples = recent_late_samples(session, latest.query_id, since_ms)
    states = partition_states(session, [latest])[latest.batch_id]
    return [
        PartitionDetail(state, late.get(state.partition, 0), samples.get(state.partition, []))
        for state in states
    ]
