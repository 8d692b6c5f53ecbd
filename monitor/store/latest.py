"""The latest state of every exported query at once, as an exporter's scrape reads it: each
query's newest batch with its partitions and their newest event times, its newest pending-timer
snapshot, and the live alerts; a few statements however many queries there are.

Rows are read as plain rows (`sa.Row`), not ORM objects: a fleet's scrape reads tens of
thousands of partition rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.models import (
    LIVE_ALERT_STATES,
    AlertRow,
    Batch,
    Partition,
    PartitionEventTime,
    Query,
    TimerSnapshotRow,
)
from monitor.store.reads import newest_batches

RUNNING = ("active", "idle")
CHUNK = 500


@dataclass
class QueryState:
    """One query as it stands: its row, newest batch, that batch's partitions, each
    partition's newest measured event times, and its newest timer snapshot."""

    query: sa.Row[Any]
    batch: sa.Row[Any] | None = None
    partitions: list[sa.Row[Any]] = field(default_factory=list)
    event_times: dict[str, sa.Row[Any]] = field(default_factory=dict)
    timers: sa.Row[Any] | None = None


def exported_queries(session: so.Session, now_ms: int, keep_ended_ms: int) -> list[sa.Row[Any]]:
    """The queries running, or ended less than `keep_ended_ms` ago, by id."""
    queries = Query.__table__
    rows = session.execute(
        sa.select(queries)
        .where(
            sa.or_(
                queries.c.status.in_(RUNNING),
                queries.c.terminated_at_ms >= now_ms - keep_ended_ms,
            )
        )
        .order_by(queries.c.id)
    )
    return list(rows)


def latest_states(session: so.Session, queries: Sequence[sa.Row[Any]]) -> list[QueryState]:
    """The state of each of `queries`, in their order."""
    states = {query.id: QueryState(query) for query in queries}
    ids = list(states)
    for chunk in (ids[start : start + CHUNK] for start in range(0, len(ids), CHUNK)):
        _read_chunk(session, chunk, states)
    return list(states.values())


def _read_chunk(session: so.Session, ids: list[str], states: dict[str, QueryState]) -> None:
    batches, partitions = Batch.__table__, Partition.__table__
    times, timers = PartitionEventTime.__table__, TimerSnapshotRow.__table__
    newest = newest_batches(batches, ids)
    for row in _in_newest(session, batches, newest):
        states[row.query_id].batch = row
    for row in _in_newest(session, partitions, newest, partitions.c.source_index):
        states[row.query_id].partitions.append(row)
    for row in _in_newest(session, times, newest_batches(times, ids), times.c.partition):
        states[row.query_id].event_times[row.partition] = row
    newest_taken = (
        sa.select(sa.func.max(timers.c.taken_at_ms))
        .where(timers.c.query_id == Query.__table__.c.id)
        .scalar_subquery()
    )
    taken = (
        sa.select(Query.__table__.c.id.label("query_id"), newest_taken.label("taken_at_ms"))
        .where(Query.__table__.c.id.in_(ids))
        .subquery()
    )
    snapshots = session.execute(
        sa.select(timers)
        .join(
            taken,
            sa.and_(
                timers.c.query_id == taken.c.query_id, timers.c.taken_at_ms == taken.c.taken_at_ms
            ),
        )
        .order_by(timers.c.id)
    )
    for row in snapshots:
        states[row.query_id].timers = row  # of two taken at the same time, the later stored


def _in_newest(
    session: so.Session, table: sa.FromClause, newest: sa.Subquery, *order: Any
) -> sa.Result[Any]:
    """The rows of `table` in each query's newest batch."""
    return session.execute(
        sa.select(table)
        .join(
            newest,
            sa.and_(table.c.query_id == newest.c.query_id, table.c.batch_id == newest.c.batch_id),
        )
        .order_by(table.c.query_id, *order)
    )


def live_alert_counts(session: so.Session) -> Counter[tuple[str, str, str]]:
    """The live (pending or firing) alerts, counted by rule, severity and state."""
    rows = session.execute(
        sa.select(AlertRow.rule, AlertRow.severity, AlertRow.state, sa.func.count())
        .where(AlertRow.state.in_(LIVE_ALERT_STATES))
        .group_by(AlertRow.rule, AlertRow.severity, AlertRow.state)
    )
    return Counter({(rule, severity, state): count for rule, severity, state, count in rows})
