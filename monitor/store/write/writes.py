"""Write events into the store, each batch exactly once, whatever order they arrive in.

Where a batch goes is its query's lineage's to say (store.lineage): a batch already stored
from its run is a repeat and changes nothing; a batch that a later run superseded is stale
and is not stored; a batch of a run that began later than runs with batches at or above its
id is a restart from a checkpoint: those batches are superseded and removed, and what the new
batch starts before the newest of them is marked rewound. A batch that arrives after later
ones of its run is stored in its place, and the running totals of those later ones take it in.
Writers to one query take turns (store.write.query_locks).

Events are written set-based, a group in one transaction: the query and run rows and each
query's latest state are read for the whole group at once and carried from batch to batch in
memory, health is derived in Python, and the group's rows are inserted with one multi-row
statement per table. Each batch row records when it was stored, for the monitor's ingest lag.
The per-minute rollups of the batches' partitions are kept in the same transaction
(store.minutes).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from functools import singledispatch
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.events import (
    BatchProgress,
    BatchRunning,
    Event,
    QueryIdle,
    QueryStarted,
    QueryTerminated,
    TimerSnapshot,
)
from monitor.health.facts import StoredStatus
from monitor.health.predicates import Timeouts
from monitor.store.packed import batch_event_times, batch_offsets
from monitor.store.schema.bulk import insert_rows
from monitor.store.schema.models import (
    Base,
    Batch,
    BatchEventTimes,
    BatchOffsets,
    Query,
    Run,
    Source,
    StateOperator,
    TimerSnapshotRow,
)
from monitor.store.schema.sql import chunks, newest_of, rows_at_newest
from monitor.store.signals.notify import announce
from monitor.store.tiers import day_partitions
from monitor.store.tiers.minutes import Minutes
from monitor.store.write import health_flags
from monitor.store.write.batch_rows import as_stored, batch_rows, earlier, event_time_rows, later
from monitor.store.write.lineage import Admission, Placement, RunSpan, place
from monitor.store.write.out_of_order import carry_into_later, drive_later
from monitor.store.write.query_locks import lock_queries

ACTIVE, IDLE = StoredStatus.ACTIVE.value, StoredStatus.IDLE.value
TERMINATED, FAILED = StoredStatus.TERMINATED.value, StoredStatus.FAILED.value
DEFAULT_TIMEOUTS = Timeouts()
Row = dict[str, Any]


@dataclasses.dataclass
class Written:
    """What a group of events did: how many were stored, and how many batches were repeats
    of stored ones or stale (superseded by a later run) and changed nothing; and, event by
    event, whether it was stored (for a caller that wrote several senders' events as one)."""

    stored: int = 0
    repeated: int = 0
    stale: int = 0
    each_stored: list[bool] = dataclasses.field(default_factory=list)


def write_events(
    engine: sa.Engine,
    events: Sequence[Event],
    timeouts: Timeouts = DEFAULT_TIMEOUTS,
    *,
    also: Callable[[so.Session, Written], None] | None = None,
    arrived_at_ms: int | None = None,
) -> Written:
    """Write events in order in one transaction; `timeouts` decide what is idle or stalled.
    `also` writes what must be stored with them or not at all (where a log was read up to).
    `arrived_at_ms`: when events that come as they happen (a listener, the collector) arrived,
    which is when their query was heard of; None for events read later (a log, a replay).
    The transaction keeps its batches' days from expiring, and begins again once their
    partitions are made if a day has none (store.day_partitions)."""
    times = [event.batch_time_ms for event in events if isinstance(event, BatchProgress)]
    return day_partitions.writing(
        engine,
        times,
        lambda: _write_group(engine, events, timeouts, also, times, arrived_at_ms),
    )


def _write_group(
    engine: sa.Engine,
    events: Sequence[Event],
    timeouts: Timeouts,
    also: Callable[[so.Session, Written], None] | None,
    times_ms: Sequence[int],
    arrived_at_ms: int | None,
) -> Written:
    """`write_events` in one transaction, holding the days of its batches' times."""
    with so.Session(engine) as session, session.begin():
        lock_queries(session, {event.query_id for event in events})
        day_partitions.hold(session.connection(), times_ms)
        group = _Group(session, timeouts, time.time_ns() // 1_000_000, arrived_at_ms)
        group.read_ahead(events)
        for event in events:
            unchanged = group.written.repeated + group.written.stale
            record(event, group)
            group.written.each_stored.append(
                group.written.repeated + group.written.stale == unchanged
            )
        group.insert_waiting()
        group.minutes.write(session.connection())
        group.written.stored = len(events) - group.written.repeated - group.written.stale
        if also is not None:
            also(session, group.written)
        announce(session)
        return group.written


def write_event(engine: sa.Engine, event: Event, timeouts: Timeouts = DEFAULT_TIMEOUTS) -> Written:
    """Write one event in its own transaction."""
    return write_events(engine, [event], timeouts)


@dataclasses.dataclass(frozen=True)
class _Latest:
    """What a query's next batch is derived from: its newest batch with that batch's partition
    rows by (source, partition), and the newest event-time rows by partition."""

    batch: Row | None
    partitions: dict[tuple[int, str], Row]
    event_times: dict[str, Row]


class _Group:
    """One transaction's events: rows wait to be inserted together, table by table, and each
    query's latest state is read from the store once, then carried from batch to batch."""

    def __init__(
        self, session: so.Session, timeouts: Timeouts, stored_at_ms: int, arrived_at_ms: int | None
    ) -> None:
        self.session, self.timeouts, self.stored_at_ms = session, timeouts, stored_at_ms
        self.arrived_at_ms = arrived_at_ms
        self.written = Written()
        self.minutes = Minutes()
        self._waiting: dict[type[Base], list[Row]] = {table: [] for table in _INSERT_ORDER}
        self._latest: dict[str, _Latest] = {}
        self._queries: dict[str, Query] = {}
        self._runs: dict[str, Run] = {}
        self._all_runs_read: set[str] = set()

    def read_ahead(self, events: Sequence[Event]) -> None:
        """Read what the events will need in a few statements, not a few per event: the
        query rows, the rows of their runs and current runs, and the latest state of each
        query that reports batches."""
        queries = sorted({event.query_id for event in events})
        batched = sorted({e.query_id for e in events if isinstance(e, BatchProgress)})
        for chunk in chunks(queries):
            for query in self.session.scalars(sa.select(Query).where(Query.id.in_(chunk))):
                self._queries[query.id] = query
        runs = {event.run_id for event in events}
        runs |= {query.run_id for query in self._queries.values()}
        for chunk in chunks(sorted(runs)):
            for run in self.session.scalars(sa.select(Run).where(Run.run_id.in_(chunk))):
                self._runs[run.run_id] = run
        for chunk in chunks([query for query in batched if query not in self._latest]):
            self._latest |= _read_latest(self.session, chunk)

    def query_row(self, query_id: str, run_id: str, at_ms: int) -> Query:
        """The query's row, as read ahead, or a new one, active since `at_ms`."""
        if query_id not in self._queries:
            query = Query(
                id=query_id, run_id=run_id, status=ACTIVE, updated_at_ms=self._heard(at_ms)
            )
            self.session.add(query)
            self._queries[query_id] = query
        return self._queries[query_id]

    def heard(self, query: Query, at_ms: int) -> int:
        """When `query` was heard of by an event claiming the time `at_ms`, keeping on the
        query how far ahead of the write, or behind the arrival, the claim was (to be shown
        and alerted on)."""
        query.clock_ahead_ms = max(at_ms - self.stored_at_ms, 0)
        if self.arrived_at_ms is not None:
            query.clock_behind_ms = max(self.arrived_at_ms - at_ms, 0)
        return self._heard(at_ms)

    def _heard(self, at_ms: int) -> int:
        """An event that comes as it happens was heard when it arrived, whatever the job's
        clock says (a driver years behind that reports every second is live); one read later,
        at the time it claims, but never later than the write that stores it: a driver whose
        clock runs ahead must not look alive after it has gone silent."""
        if self.arrived_at_ms is not None:
            return self.arrived_at_ms
        return min(at_ms, self.stored_at_ms)

    def run_row(self, query_id: str, run_id: str) -> Run:
        """The run's row, as read ahead, or a new one."""
        if run_id not in self._runs:
            run = Run(run_id=run_id, query_id=query_id, first_stored_ms=self.stored_at_ms)
            self.session.add(run)
            self._runs[run_id] = run
        return self._runs[run_id]

    def is_current(self, query: Query, run: Run) -> bool:
        """Whether `run` is the query's newest run: its current one, or one that began later."""
        if query.run_id == run.run_id:
            return True
        current = self._runs.get(query.run_id)
        return current is None or _span(run).is_newer_than(_span(current))

    def runs_of(self, query_id: str) -> list[Run]:
        """Every run of the query (read from the store the first time it is asked for)."""
        if query_id not in self._all_runs_read:
            for run in self.session.scalars(sa.select(Run).where(Run.query_id == query_id)):
                self._runs.setdefault(run.run_id, run)
            self._all_runs_read.add(query_id)
        return [run for run in self._runs.values() if run.query_id == query_id]

    def is_stored(self, query_id: str, batch_id: int, run_id: str) -> bool:
        """Whether the store holds this batch from this run (this group's rows included)."""
        self.insert_waiting()
        stored = self.session.scalar(
            sa.select(Batch.run_id).where(Batch.query_id == query_id, Batch.batch_id == batch_id)
        )
        return stored == run_id

    def latest(self, query_id: str) -> _Latest:
        """The query's latest state, from the store the first time it is asked for."""
        if query_id not in self._latest:
            self._latest |= _read_latest(self.session, [query_id])
        return self._latest[query_id]

    def before(self, query_id: str, batch_id: int) -> _Latest:
        """The state batch `batch_id` follows on from: the newest stored before it."""
        latest = self.latest(query_id)
        if latest.batch is None or latest.batch["batch_id"] < batch_id:
            return latest
        self.insert_waiting()
        return _read_latest(self.session, [query_id], below=batch_id)[query_id]

    def supersede(
        self, query_id: str, batch_id: int, runs: Sequence[str]
    ) -> tuple[_Latest, list[Row]]:
        """Remove what `runs` stored from batch `batch_id` on: a run that began later took
        the lineage over from there. The state of the newest batch removed, and the removed
        batches' event-time rows (their figures leave the running totals of later ones)."""
        self.insert_waiting()
        superseded = (
            sa.select(Batch.batch_id)
            .where(Batch.query_id == query_id, Batch.batch_id >= batch_id, Batch.run_id.in_(runs))
            .scalar_subquery()
        )
        newest = self.session.scalar(
            sa.select(sa.func.max(Batch.batch_id)).where(
                Batch.query_id == query_id, Batch.batch_id >= batch_id, Batch.run_id.in_(runs)
            )
        )
        earliest = self.session.scalar(
            sa.select(sa.func.min(Batch.batch_time_ms)).where(
                Batch.query_id == query_id, Batch.batch_id.in_(superseded)
            )
        )
        if earliest is not None:
            self.minutes.again(query_id, earliest)
        state = _Latest(None, {}, {})
        if newest is not None:
            state = _read_latest(self.session, [query_id], below=newest + 1)[query_id]
        times = batch_event_times.TABLE
        removed = [
            row._asdict()
            for row in batch_event_times.partitions_in(
                self.session,
                sa.select(times).where(
                    times.c.query_id == query_id, times.c.batch_id.in_(superseded)
                ),
            )
        ]
        for table in (BatchEventTimes, BatchOffsets, Source, StateOperator, Batch):
            self.session.execute(
                sa.delete(table).where(table.query_id == query_id, table.batch_id.in_(superseded))
            )
        for run_id in runs:
            run = self._runs[run_id]
            if run.first_batch_id is not None and run.first_batch_id >= batch_id:
                run.first_batch_id = run.last_batch_id = None
            else:
                run.last_batch_id = batch_id - 1
        self._latest |= _read_latest(self.session, [query_id])
        return state, removed

    def add(self, rows: dict[type[Base], list[Row]]) -> None:
        """Rows to insert with the group's others."""
        for table, values in rows.items():
            self._waiting[table] += values

    def follow(
        self,
        query_id: str,
        batch: Row,
        rows: dict[type[Base], list[Row]],
        removed: Sequence[Row] = (),
    ) -> None:
        """Carry a stored batch's rows forward as the state its query's next batch follows;
        a batch stored before later ones instead adds itself to their running totals, in
        place of the `removed` event-time rows it superseded."""
        before = self._latest[query_id]
        if before.batch is not None and before.batch["batch_id"] > batch["batch_id"]:
            self.insert_waiting()
            times = rows[BatchEventTimes]
            carry_into_later(self.session, query_id, batch["batch_id"], times, removed)
            drive_later(self.session, query_id, batch["batch_id"], times)
            self.minutes.again(query_id, batch["batch_time_ms"])
            self._latest |= _read_latest(self.session, [query_id])
            return
        times = rows[BatchEventTimes]
        self._latest[query_id] = _Latest(
            batch,
            {(row["source_index"], row["partition"]): row for row in rows[BatchOffsets]},
            {row["partition"]: row for row in times} if times else before.event_times,
        )

    def insert_waiting(self) -> None:
        """Write the query and run rows, then insert every waiting row, table by table."""
        self.session.flush()
        connection = self.session.connection()
        for model, values in self._waiting.items():
            table = Base.metadata.tables[model.__tablename__]
            insert_rows(connection, table, as_stored(model, values))
            self._waiting[model] = []


def _span(run: Run) -> RunSpan:
    return RunSpan(
        run.run_id, run.began_at_ms, run.first_stored_ms, run.first_batch_id, run.last_batch_id
    )


def _read_latest(
    session: so.Session, query_ids: list[str], below: int | None = None
) -> dict[str, _Latest]:
    """The latest state of each query, as stored (of batches before `below`, if given):
    three statements for all of them."""
    batches, times = Batch.__table__, BatchEventTimes.__table__
    newest_batch = newest_of(batches, "batch_id", query_ids, below)
    newest_times = newest_of(times, "batch_id", query_ids, below)
    latest = {query_id: _Latest(None, {}, {}) for query_id in query_ids}
    for batch in _rows(session, batches, newest_batch):
        latest[batch["query_id"]] = _Latest(batch, {}, {})
    for partition in batch_offsets.at_newest(session, newest_batch):
        row = partition._asdict()
        latest[row["query_id"]].partitions[(row["source_index"], row["partition"])] = row
    for times_row in batch_event_times.at_newest(session, newest_times):
        latest[times_row.query_id].event_times[times_row.partition] = times_row._asdict()
    return latest


def _rows(session: so.Session, table: sa.FromClause, newest: sa.Subquery) -> list[Row]:
    """The rows of `table` in the newest batches, as column dicts."""
    found = rows_at_newest(session, table, "batch_id", newest)
    names = list(found.keys())
    return [dict(zip(names, row, strict=True)) for row in found]


# Inserted in this order, after the query and run rows they refer to.
_INSERT_ORDER = (Batch, StateOperator, Source, BatchOffsets, BatchEventTimes, TimerSnapshotRow)


@singledispatch
def record(event: object, group: _Group) -> None:
    """Record one event in a group; each event type registers its own writer."""
    raise TypeError(f"not a monitor event: {type(event).__name__}")


@record.register
def _started(event: QueryStarted, group: _Group) -> None:
    query = group.query_row(event.query_id, event.run_id, event.timestamp_ms)
    run = group.run_row(event.query_id, event.run_id)
    if run.started_at_ms is not None and run.query_id == event.query_id:
        _started_again(event, run, group)
        return
    first_start = query.started_at_ms is None and query.replaces_id is None
    if event.pipeline is not None and event.name is not None and first_start:
        query.replaces_id = _flow_before(group.session, event)
    run.name, run.started_at_ms = event.name, event.timestamp_ms
    run.began_at_ms = earlier(run.began_at_ms, event.timestamp_ms)
    if event.trigger is not None:
        run.trigger, run.trigger_interval_ms = event.trigger, event.trigger_interval_ms
    if not group.is_current(query, run):
        return
    query.name, query.run_id, query.started_at_ms = event.name, event.run_id, event.timestamp_ms
    if _has_ended(run, event.query_id):  # the start of a run whose end came first
        _ended(query, run)
        return
    query.status = ACTIVE
    query.updated_at_ms = group.heard(query, event.timestamp_ms)
    query.terminated_at_ms = query.exception = query.error_class = None
    query.running_batch_id = query.running_since_ms = None


def _started_again(event: QueryStarted, run: Run, group: _Group) -> None:
    """A start of a run that has one (a sender's retry, a replayed log, a second way in): it
    changes nothing, whatever came since (an ended run stays ended), but a trigger the first
    way in could not tell."""
    if event.trigger is None or run.trigger is not None:
        group.written.repeated += 1
        return
    run.trigger, run.trigger_interval_ms = event.trigger, event.trigger_interval_ms


def _flow_before(session: so.Session, event: QueryStarted) -> str | None:
    """The query a pipeline flow's reset replaced: the newest other query of the flow's name
    (a full refresh gives the flow a new checkpoint, and Spark a new query id)."""
    before = (
        sa.select(Query.id)
        .where(Query.name == event.name, Query.id != event.query_id)
        .order_by(Query.started_at_ms.desc().nulls_last())
        .limit(1)
    )
    return session.scalars(before).first()


@record.register
def _idle(event: QueryIdle, group: _Group) -> None:
    query = group.query_row(event.query_id, event.run_id, event.timestamp_ms)
    if query.run_id == event.run_id and query.status == ACTIVE:
        query.status = IDLE
    query.updated_at_ms = max(query.updated_at_ms, group.heard(query, event.timestamp_ms))
    group.run_row(event.query_id, event.run_id).last_idle_at_ms = event.timestamp_ms


@record.register
def _running(event: BatchRunning, group: _Group) -> None:
    """A batch in flight: the query is heard from, and the batch noted until it is stored."""
    query = group.query_row(event.query_id, event.run_id, event.timestamp_ms)
    query.updated_at_ms = max(query.updated_at_ms, group.heard(query, event.timestamp_ms))
    if query.run_id != event.run_id or query.status not in (ACTIVE, IDLE):
        return
    last = -1 if query.last_batch_id is None else query.last_batch_id
    batch_id = last + 1 if event.batch_id is None else event.batch_id
    if batch_id <= last:
        return  # stored already: the watch saw it before its progress came
    if query.running_batch_id != batch_id:
        query.running_batch_id, query.running_since_ms = batch_id, event.since_ms
    else:
        query.running_since_ms = earlier(query.running_since_ms, event.since_ms)


@record.register
def _terminated(event: QueryTerminated, group: _Group) -> None:
    query = group.query_row(event.query_id, event.run_id, event.timestamp_ms)
    run = group.run_row(event.query_id, event.run_id)
    if _has_ended(run, event.query_id):
        group.written.repeated += 1  # a run ends once: a replay of its end changes nothing
        return
    run.terminated_at_ms = event.timestamp_ms
    run.exception, run.error_class = event.exception, event.error_class
    if query.run_id == event.run_id:
        _ended(query, run)
        query.updated_at_ms = group.heard(query, event.timestamp_ms)


def _has_ended(run: Run, query_id: str) -> bool:
    """Whether `run` of the query `query_id` has ended. A run id is one query's (Spark's are
    UUIDs): a run row of another query's says nothing of this one."""
    return run.terminated_at_ms is not None and run.query_id == query_id


def _ended(query: Query, run: Run) -> None:
    """The query as its current run `run` left it: terminated, or failed if it says why."""
    query.running_batch_id = query.running_since_ms = None
    query.status = FAILED if run.exception else TERMINATED
    query.terminated_at_ms = run.terminated_at_ms
    query.exception, query.error_class = run.exception, run.error_class


def _placement(event: BatchProgress, run: Run, group: _Group) -> Placement:
    """Where the batch goes: next in its run's lineage (the usual case, known without
    reading), or as the query's runs say."""
    newest = group.latest(event.query_id).batch
    if newest is None or (newest["run_id"] == run.run_id and newest["batch_id"] < event.batch_id):
        return Placement(Admission.STORE)
    others = [_span(other) for other in group.runs_of(event.query_id)]
    return place(_span(run), others, event.batch_id)


@record.register
def _batch(event: BatchProgress, group: _Group) -> None:
    query = group.query_row(event.query_id, event.run_id, event.batch_time_ms)
    run = group.run_row(event.query_id, event.run_id)
    run.name = event.name
    run.began_at_ms = earlier(run.began_at_ms, event.batch_time_ms)
    placement = _placement(event, run, group)
    if placement.admission is Admission.STALE:
        group.written.stale += 1
        return
    if placement.admission is Admission.STORE_UNLESS_STORED and group.is_stored(
        event.query_id, event.batch_id, event.run_id
    ):
        group.written.repeated += 1
        return
    superseded, removed = None, list[Row]()
    if placement.supersedes:
        superseded, removed = group.supersede(event.query_id, event.batch_id, placement.supersedes)
    latest = group.before(event.query_id, event.batch_id)
    rows = batch_rows(event)
    rows[BatchEventTimes] = event_time_rows(event, latest.event_times)
    [batch] = rows[Batch]
    batch["stored_at_ms"] = group.stored_at_ms
    partitions = rows[BatchOffsets]
    health_flags.partitions(partitions, latest.partitions, group.timeouts)
    health_flags.query_watermark(batch, latest.batch, partitions, group.timeouts)
    health_flags.watermark_driver(batch, latest.event_times)
    health_flags.event_times(batch, rows[BatchEventTimes], partitions)
    if superseded is not None:
        health_flags.restored(batch, partitions, superseded.batch, superseded.partitions)
    group.add(rows)
    group.minutes.add(rows)
    group.follow(event.query_id, batch, rows, removed)
    run.first_batch_id = earlier(run.first_batch_id, event.batch_id)
    run.last_batch_id = later(run.last_batch_id, event.batch_id)
    newest = group.latest(event.query_id).batch
    query.last_batch_id = None if newest is None else newest["batch_id"]
    if query.running_batch_id is not None and query.running_batch_id <= event.batch_id:
        query.running_batch_id = query.running_since_ms = None
    if group.is_current(query, run):
        query.run_id, query.name = event.run_id, event.name
        if _has_ended(run, event.query_id):  # a batch of the run that arrives after its end
            _ended(query, run)
        else:
            query.status = ACTIVE
    query.updated_at_ms = max(query.updated_at_ms, group.heard(query, event.batch_time_ms))


@record.register
def _timers(event: TimerSnapshot, group: _Group) -> None:
    group.query_row(event.query_id, event.run_id, event.taken_at_ms)
    fields = dataclasses.asdict(event)
    del fields["run_id"]
    group.add({TimerSnapshotRow: [fields]})
