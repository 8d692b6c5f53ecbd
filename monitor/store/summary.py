"""The live state of a query as the dashboard shows it: its facts, latest batch, partitions,
late records and pending timers."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.health.facts import QueryFacts, Thresholds
from monitor.store.isolation import read_apart
from monitor.store.models import (
    Batch,
    Partition,
    PartitionEventTime,
    Query,
    StateOperator,
    TimerSnapshotRow,
)
from monitor.store.read_facts import Asked, facts_of, latest_batches, unreadable
from monitor.store.sql import chunks, newest_of
from monitor.store.sums import whole_sum
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


@dataclass(frozen=True)
class QuerySummary:
    """What the overview shows of one query: its facts, latest batch and pending timers."""

    query: Query
    latest: Batch | None
    facts: QueryFacts
    timers: TimerSnapshotRow | None


def summarize(
    session: so.Session, query: Query, now_ms: int, thresholds: Thresholds
) -> QuerySummary:
    """The overview of one query at `now_ms`, its facts read over the thresholds' windows."""
    return summaries(session, [Asked(query, thresholds)], now_ms)[0]


def summaries(session: so.Session, asked: Sequence[Asked], now_ms: int) -> list[QuerySummary]:
    """The overview of each asked query at `now_ms`, in their order, a chunk at a time: a
    fixed number of statements per chunk, however many queries. A query whose rows cannot be
    read has only its stored state, and facts that say why."""
    found: list[QuerySummary] = []
    for chunk in chunks(asked):
        read = read_apart(
            session,
            chunk,
            lambda part: _summaries(session, part, now_ms),
            lambda item: item.query.id,
            _unreadable,
        )
        found += [read[item.query.id] for item in chunk]
    return found


def _unreadable(asked: Asked, reason: str) -> QuerySummary:
    return QuerySummary(asked.query, None, unreadable(asked, reason), None)


def _summaries(session: so.Session, asked: Sequence[Asked], now_ms: int) -> dict[str, QuerySummary]:
    ids = [item.query.id for item in asked]
    latest = latest_batches(session, ids)
    facts = facts_of(session, asked, latest, now_ms)
    timers = latest_timers(session, ids)
    return {
        key: QuerySummary(item.query, latest.get(key), facts[key], timers.get(key))
        for item, key in zip(asked, ids, strict=True)
    }


def latest_timers(session: so.Session, query_ids: Sequence[str]) -> dict[str, TimerSnapshotRow]:
    """Each query's newest pending-timer snapshot, by query id; those with none left out."""
    newest = newest_of(TimerSnapshotRow.__table__, "taken_at_ms", query_ids)
    rows = session.scalars(
        sa.select(TimerSnapshotRow)
        .join(
            newest,
            sa.and_(
                TimerSnapshotRow.query_id == newest.c.query_id,
                TimerSnapshotRow.taken_at_ms == newest.c.newest,
            ),
        )
        .order_by(TimerSnapshotRow.id)
    )
    # Of two taken at the same time, the later stored.
    return {row.query_id: row for row in rows}


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


def rows_dropped(session: so.Session, query_id: str, batch_ids: Collection[int]) -> dict[int, int]:
    """Rows dropped by watermark per batch, summed over its stateful operators."""
    rows = session.execute(
        sa.select(StateOperator.batch_id, whole_sum(StateOperator.num_rows_dropped_by_watermark))
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
