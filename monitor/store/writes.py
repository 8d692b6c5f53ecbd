"""Write events into the store; every write is idempotent, so a replayed batch replaces its rows.

A batch id at or below ones already stored means the query was restarted from a checkpoint:
the stored batches from that id on are superseded by the checkpoint's lineage and replaced, and
what the new batch starts before the newest of them is marked rewound.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from functools import singledispatch
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.events import (
    BatchProgress,
    Event,
    PartitionEventTimes,
    QueryIdle,
    QueryStarted,
    QueryTerminated,
    TimerSnapshot,
)
from monitor.health.predicates import Timeouts
from monitor.store import derive
from monitor.store.models import (
    Base,
    Batch,
    Partition,
    PartitionEventTime,
    Query,
    Run,
    Source,
    StateOperator,
    TimerSnapshotRow,
)

ACTIVE, IDLE, TERMINATED, FAILED = "active", "idle", "terminated", "failed"
DEFAULT_TIMEOUTS = Timeouts()


def write_events(
    engine: sa.Engine,
    events: Sequence[Event],
    timeouts: Timeouts = DEFAULT_TIMEOUTS,
    *,
    also: Callable[[so.Session], None] | None = None,
) -> None:
    """Write events in order in one transaction; `timeouts` decide what is idle or stalled.
    `also` writes what must be stored with them or not at all (where a log was read up to)."""
    with so.Session(engine) as session, session.begin():
        for event in events:
            record(event, session, timeouts)
        if also is not None:
            also(session)


def write_event(engine: sa.Engine, event: Event, timeouts: Timeouts = DEFAULT_TIMEOUTS) -> None:
    """Write one event in its own transaction."""
    write_events(engine, [event], timeouts)


@singledispatch
def record(event: object, session: so.Session, timeouts: Timeouts) -> None:
    """Record one event in a session; each event type registers its own writer."""
    raise TypeError(f"not a monitor event: {type(event).__name__}")


def _query_row(session: so.Session, query_id: str, run_id: str, at_ms: int) -> Query:
    query = session.get(Query, query_id)
    if query is None:
        query = Query(id=query_id, run_id=run_id, status=ACTIVE, updated_at_ms=at_ms)
        session.add(query)
    return query


def _run_row(session: so.Session, query_id: str, run_id: str) -> Run:
    run = session.get(Run, run_id)
    if run is None:
        run = Run(run_id=run_id, query_id=query_id)
        session.add(run)
    return run


@record.register
def _started(event: QueryStarted, session: so.Session, _timeouts: Timeouts) -> None:
    query = _query_row(session, event.query_id, event.run_id, event.timestamp_ms)
    query.name, query.run_id, query.status = event.name, event.run_id, ACTIVE
    query.started_at_ms = query.updated_at_ms = event.timestamp_ms
    query.terminated_at_ms = query.exception = query.error_class = None
    run = _run_row(session, event.query_id, event.run_id)
    run.name, run.started_at_ms = event.name, event.timestamp_ms


@record.register
def _idle(event: QueryIdle, session: so.Session, _timeouts: Timeouts) -> None:
    query = _query_row(session, event.query_id, event.run_id, event.timestamp_ms)
    if query.run_id == event.run_id and query.status == ACTIVE:
        query.status = IDLE
    query.updated_at_ms = max(query.updated_at_ms, event.timestamp_ms)
    _run_row(session, event.query_id, event.run_id).last_idle_at_ms = event.timestamp_ms


@record.register
def _terminated(event: QueryTerminated, session: so.Session, _timeouts: Timeouts) -> None:
    query = _query_row(session, event.query_id, event.run_id, event.timestamp_ms)
    if query.run_id == event.run_id:
        query.status = FAILED if event.exception else TERMINATED
        query.terminated_at_ms = query.updated_at_ms = event.timestamp_ms
        query.exception, query.error_class = event.exception, event.error_class
    run = _run_row(session, event.query_id, event.run_id)
    run.terminated_at_ms = event.timestamp_ms
    run.exception, run.error_class = event.exception, event.error_class


@record.register
def _batch(event: BatchProgress, session: so.Session, timeouts: Timeouts) -> None:
    query = _query_row(session, event.query_id, event.run_id, event.batch_time_ms)
    run = _run_row(session, event.query_id, event.run_id)
    run.name = event.name
    if run.terminated_at_ms is None:
        query.run_id, query.status, query.name = event.run_id, ACTIVE, event.name
    query.updated_at_ms = max(query.updated_at_ms, event.batch_time_ms)
    query.last_batch_id = event.batch_id  # any stored after it are superseded, below
    # The query and run rows must exist before the batch rows that refer to them.
    session.flush()
    newest = _supersede(session, event.query_id, event.batch_id)
    rows = _batch_rows(event)
    rows[PartitionEventTime] = _event_time_rows(session, event)
    before, partitions_before = _newest_batch(
        session, event.query_id, Batch.batch_id < event.batch_id
    )
    [batch] = rows[Batch]
    derive.partitions(rows[Partition], partitions_before, timeouts)
    derive.query_watermark(batch, before, rows[Partition], timeouts)
    derive.event_times(batch, rows[PartitionEventTime], rows[Partition])
    derive.restored(batch, rows[Partition], *newest)
    for table, values in rows.items():
        if values:
            session.execute(sa.insert(table), values)


def _supersede(
    session: so.Session, query_id: str, batch_id: int
) -> tuple[Batch | None, dict[tuple[int, str], Partition]]:
    """Remove the rows of a replayed batch and of any stored after it; the newest of them, as
    :func:`_newest_batch` gives it. A new batch (the usual case) costs one indexed lookup."""
    newest = _newest_batch(session, query_id, Batch.batch_id >= batch_id)
    if newest[0] is not None:
        for table in (PartitionEventTime, Partition, Source, StateOperator, Batch):
            session.execute(
                sa.delete(table).where(table.query_id == query_id, table.batch_id >= batch_id)
            )
    return newest


def _newest_batch(
    session: so.Session, query_id: str, which: sa.ColumnElement[bool]
) -> tuple[Batch | None, dict[tuple[int, str], Partition]]:
    """The stored batch with the highest id of those `which` selects, and its partition rows
    by (source, partition)."""
    found = session.scalars(
        sa.select(Batch)
        .where(Batch.query_id == query_id, which)
        .order_by(Batch.batch_id.desc())
        .limit(1)
    ).first()
    if found is None:
        return None, {}
    rows = session.scalars(
        sa.select(Partition).where(
            Partition.query_id == query_id, Partition.batch_id == found.batch_id
        )
    )
    return found, {(row.source_index, row.partition): row for row in rows}


_NOT_BATCH_COLUMNS = ("query_id", "name", "operators", "sources", "event_times")


def _batch_rows(event: BatchProgress) -> dict[type[Base], list[dict[str, Any]]]:
    """The rows of a batch and its operators, sources and partitions, as column dicts."""
    keys = {"query_id": event.query_id, "batch_id": event.batch_id}
    batch = {
        f.name: getattr(event, f.name)
        for f in dataclasses.fields(event)
        if f.name not in _NOT_BATCH_COLUMNS
    }
    rows: dict[type[Base], list[dict[str, Any]]] = {
        Batch: [keys | batch],
        StateOperator: [keys | dataclasses.asdict(op) for op in event.operators],
        Source: [],
        Partition: [],
    }
    for source in event.sources:
        fields = {
            f.name: getattr(source, f.name)
            for f in dataclasses.fields(source)
            if f.name != "partitions"
        }
        rows[Source].append(keys | fields)
        rows[Partition] += [
            keys
            | dataclasses.asdict(partition)
            | {
                "batch_time_ms": event.batch_time_ms,
                "source_index": source.source_index,
                "offset_lag": partition.offset_lag,
            }
            for partition in source.partitions
        ]
    return rows


def _previous_event_times(
    session: so.Session, query_id: str, batch_id: int
) -> dict[str, PartitionEventTime]:
    """The rows of the last batch before `batch_id` that has any: every partition seen so far."""
    previous = session.scalar(
        sa.select(sa.func.max(PartitionEventTime.batch_id)).where(
            PartitionEventTime.query_id == query_id, PartitionEventTime.batch_id < batch_id
        )
    )
    if previous is None:
        return {}
    rows = session.scalars(
        sa.select(PartitionEventTime).where(
            PartitionEventTime.query_id == query_id, PartitionEventTime.batch_id == previous
        )
    )
    return {row.partition: row for row in rows}


def _idle_partition(
    name: str, before: PartitionEventTime, late_watermark_ms: int | None
) -> PartitionEventTimes:
    return PartitionEventTimes(
        partition=name,
        records=0,
        min_event_ms=None,
        max_event_ms=None,
        late_records=0,
        late_watermark_ms=late_watermark_ms,
        delay_ms=before.delay_ms,
    )


def _event_time_rows(session: so.Session, event: BatchProgress) -> list[dict[str, Any]]:
    """Per-partition event times of a batch, with running max event time, W_p and late total."""
    before = _previous_event_times(session, event.query_id, event.batch_id)
    measured = {times.partition: times for times in event.event_times}
    for name in before.keys() - measured.keys():
        # A partition without records in this batch still faced this batch's late threshold.
        threshold = next(
            (t.late_watermark_ms for t in event.event_times), before[name].late_watermark_ms
        )
        measured[name] = _idle_partition(name, before[name], threshold)
    rows = []
    for name, times in sorted(measured.items()):
        last = before.get(name)
        known = [times.max_event_ms, last.max_event_time_ms if last else None]
        max_event = max((t for t in known if t is not None), default=None)
        rows.append(
            {
                "query_id": event.query_id,
                "batch_id": event.batch_id,
                "batch_time_ms": event.batch_time_ms,
                "partition": name,
                "records": times.records,
                "min_event_ms": times.min_event_ms,
                "max_event_ms": times.max_event_ms,
                "late_records": times.late_records,
                "late_watermark_ms": times.late_watermark_ms,
                "delay_ms": times.delay_ms,
                "max_event_time_ms": max_event,
                "partition_watermark_ms": None if max_event is None else max_event - times.delay_ms,
                "late_records_total": times.late_records + (last.late_records_total if last else 0),
                "late_samples": [list(sample) for sample in times.late_samples],
            }
        )
    return rows


@record.register
def _timers(event: TimerSnapshot, session: so.Session, _timeouts: Timeouts) -> None:
    _query_row(session, event.query_id, event.run_id, event.taken_at_ms)
    session.flush()
    fields = dataclasses.asdict(event)
    del fields["run_id"]
    session.execute(sa.insert(TimerSnapshotRow), [fields])
