"""Write events into the store; every write is idempotent, so a replayed batch replaces its rows."""

from __future__ import annotations

import dataclasses
from functools import singledispatch
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.events import BatchProgress, Event, QueryIdle, QueryStarted, QueryTerminated
from monitor.store.models import Base, Batch, Partition, Query, Run, Source, StateOperator

ACTIVE, IDLE, TERMINATED, FAILED = "active", "idle", "terminated", "failed"


def write_event(engine: sa.Engine, event: Event) -> None:
    """Write one event in its own transaction."""
    with so.Session(engine) as session, session.begin():
        record(event, session)


@singledispatch
def record(event: object, session: so.Session) -> None:
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
def _started(event: QueryStarted, session: so.Session) -> None:
    query = _query_row(session, event.query_id, event.run_id, event.timestamp_ms)
    query.name, query.run_id, query.status = event.name, event.run_id, ACTIVE
    query.started_at_ms = query.updated_at_ms = event.timestamp_ms
    query.terminated_at_ms = query.exception = query.error_class = None
    run = _run_row(session, event.query_id, event.run_id)
    run.name, run.started_at_ms = event.name, event.timestamp_ms


@record.register
def _idle(event: QueryIdle, session: so.Session) -> None:
    query = _query_row(session, event.query_id, event.run_id, event.timestamp_ms)
    if query.run_id == event.run_id and query.status == ACTIVE:
        query.status = IDLE
    query.updated_at_ms = max(query.updated_at_ms, event.timestamp_ms)
    _run_row(session, event.query_id, event.run_id).last_idle_at_ms = event.timestamp_ms


@record.register
def _terminated(event: QueryTerminated, session: so.Session) -> None:
    query = _query_row(session, event.query_id, event.run_id, event.timestamp_ms)
    if query.run_id == event.run_id:
        query.status = FAILED if event.exception else TERMINATED
        query.terminated_at_ms = query.updated_at_ms = event.timestamp_ms
        query.exception, query.error_class = event.exception, event.error_class
    run = _run_row(session, event.query_id, event.run_id)
    run.terminated_at_ms = event.timestamp_ms
    run.exception, run.error_class = event.exception, event.error_class


@record.register
def _batch(event: BatchProgress, session: so.Session) -> None:
    query = _query_row(session, event.query_id, event.run_id, event.batch_time_ms)
    run = _run_row(session, event.query_id, event.run_id)
    run.name = event.name
    if run.terminated_at_ms is None:
        query.run_id, query.status, query.name = event.run_id, ACTIVE, event.name
    query.updated_at_ms = max(query.updated_at_ms, event.batch_time_ms)
    query.last_batch_id = max(query.last_batch_id or 0, event.batch_id)
    # The query and run rows must exist before the batch rows that refer to them.
    session.flush()
    _delete_batch(session, event.query_id, event.batch_id)
    _insert_batch(session, event)


def _delete_batch(session: so.Session, query_id: str, batch_id: int) -> None:
    for table in (Partition, Source, StateOperator, Batch):
        session.execute(
            sa.delete(table).where(table.query_id == query_id, table.batch_id == batch_id)
        )


def _insert_batch(session: so.Session, event: BatchProgress) -> None:
    """Insert a batch and its children with one multi-row INSERT per table."""
    keys = {"query_id": event.query_id, "batch_id": event.batch_id}
    batch = {f.name: getattr(event, f.name) for f in dataclasses.fields(event)}
    for child in ("query_id", "name", "operators", "sources"):
        del batch[child]
    rows: dict[type[Base], list[dict[str, Any]]] = {
        Batch: [keys | batch],
        StateOperator: [keys | dataclasses.asdict(op) for op in event.operators],
        Source: [],
        Partition: [],
    }
    for source in event.sources:
        fields = {f.name: getattr(source, f.name) for f in dataclasses.fields(source)}
        del fields["partitions"]
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
    for table, values in rows.items():
        if values:
            session.execute(sa.insert(table), values)
