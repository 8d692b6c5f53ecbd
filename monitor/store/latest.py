"""The latest state of every exported query at once, as an exporter's scrape reads it: each
query's newest batch with its partitions and their newest event times, its newest pending-timer
snapshot, each query's stateful operators and its batches' pace over the window and its backlog
(store.backlog), in a few statements however many queries there are.

Rows are read as plain rows (`sa.Row`), not ORM objects: a fleet's scrape reads tens of
thousands of partition rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.health.backlog import Backlogs
from monitor.health.facts import RUNNING
from monitor.health.state_growth import StateGrowth
from monitor.health.trigger_pace import TriggerPace
from monitor.store import batch_event_times, batch_offsets
from monitor.store.backlog import fleet_backlogs, query_runs
from monitor.store.batch_event_times import StoredEventTimes
from monitor.store.batch_offsets import StoredPartition
from monitor.store.isolation import read_apart
from monitor.store.models import Batch, Query, TimerSnapshotRow
from monitor.store.sql import chunks, newest_of, rows_at_newest
from monitor.store.state_growth import fleet_state
from monitor.store.trigger_pace import fleet_pace


@dataclass
class QueryState:
    """One query as it stands: its row, newest batch, that batch's partitions, each
    partition's newest measured event times, and its newest timer snapshot."""

    query: sa.Row[Any]
    batch: sa.Row[Any] | None = None
    partitions: list[StoredPartition] = field(default_factory=list)
    event_times: dict[str, StoredEventTimes] = field(default_factory=dict)
    timers: sa.Row[Any] | None = None
    # The backlog of its newest batch's partitions, as of the scrape (store.backlog).
    backlog: Backlogs | None = None
    # Its stateful operators' state over the window (store.state_growth).
    state: tuple[StateGrowth, ...] = ()
    # Its batches' durations over the window against its trigger (store.trigger_pace).
    pace: TriggerPace | None = None
    # Why its rows could not be read, when they could not (monitor.store.isolation).
    unreadable: str | None = None


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


def latest_states(
    session: so.Session, queries: Sequence[sa.Row[Any]], now_ms: int
) -> list[QueryState]:
    """The state of each of `queries` at `now_ms`, in their order; one whose rows cannot be
    read, with only its row, and why."""
    rows = {query.id: query for query in queries}
    states: dict[str, QueryState] = {}
    for chunk in chunks(list(rows)):
        states |= read_apart(
            session,
            chunk,
            lambda ids: _read_chunk(session, ids, rows, now_ms),
            str,
            lambda key, why: QueryState(rows[key], unreadable=why),
        )
    return [states[query.id] for query in queries]


def _read_chunk(
    session: so.Session, ids: Sequence[str], rows: dict[str, sa.Row[Any]], now_ms: int
) -> dict[str, QueryState]:
    states = {key: QueryState(rows[key]) for key in ids}
    batches = Batch.__table__
    times, timers = batch_event_times.TABLE, TimerSnapshotRow.__table__
    newest = newest_of(batches, "batch_id", ids)
    for row in rows_at_newest(session, batches, "batch_id", newest):
        states[row.query_id].batch = row
    for partition in batch_offsets.at_newest(session, newest):
        states[partition.query_id].partitions.append(partition)
    newest_times = newest_of(times, "batch_id", ids)
    for measured in batch_event_times.at_newest(session, newest_times):
        states[measured.query_id].event_times[measured.partition] = measured
    newest_taken = newest_of(timers, "taken_at_ms", ids)
    for row in rows_at_newest(session, timers, "taken_at_ms", newest_taken, timers.c.id):
        states[row.query_id].timers = row  # of two taken at the same time, the later stored
    newest_batches = {k: state.batch for k, state in states.items() if state.batch is not None}
    running = {key: query_runs(states[key].query, now_ms) for key in newest_batches}
    for key, backlog in fleet_backlogs(session, newest_batches, now_ms, running).items():
        states[key].backlog = backlog
    for key, growths in fleet_state(session, newest_batches).items():
        states[key].state = growths
    for key, pace in fleet_pace(session, newest_batches).items():
        states[key].pace = pace
    return states
