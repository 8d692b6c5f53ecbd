"""Prune history older than each tier's retention, in short transactions that writers slip between.

Each tier has its own cutoff (Retention: every batch 48 hours, per-minute rollups 30 days,
per-hour rollups 400 days by default). Batches older than theirs go with their state
operators, sources and partitions' offsets and event times, and so do older pending-timer
snapshots; the per-minute and per-hour rollups (of queries and of partitions) go by the minutes
and hours that ended before theirs. A prune that deletes some of a query's batches or minutes
notes its cutoff on the query (batches_kept_from_ms, minutes_kept_from_ms): reads of older
ranges then use a coarser tier, and rolling minutes up again starts no earlier (store.minutes).
Queries and runs are never deleted, nor a query's newest batch (its rows are what the overview
shows, and the next batch's running event times and health are derived from them) and its
newest timer snapshot (its pending timers).

Nor is a batch stored within the batches' retention (`stored_at_ms`, by the store's clock),
whatever its time says: a driver whose clock is behind, a backfill or a replay has its batches
dated before the cutoff as they arrive, and they stay until they were stored that long ago. Its
query's rollups stay with them: the rollups are keyed by the minute of batch time and carry no
stored time, so a query's minutes and hours from the span of its oldest batch before the tier's
cutoff that was stored within the retention on are kept (looked up by the query's batch times,
only for a chunk of its minutes or hours to delete; the batches before a rollup's cutoff still
stored are the few that expiry kept). That spares every rollup of those batches, and those of
any batch of the query between them. Batches stored before the retention (or before stored times
were recorded) expire by their time as before.

An alert that ended (resolved or cancelled) before the per-minute cutoff goes with its events, their
deliveries and those deliveries' attempts, unless one of its notifications is still queued (neither
delivered nor abandoned): it stays until the notifier is done with it, which takes a day at most,
except for a receiver that the rules in force no longer name: its deliveries wait for rules that
do, and keep their alerts. A live alert (pending or firing) is never deleted, nor anything of it,
however old. A silence that ended before that cutoff goes.

On PostgreSQL batches expire by whole days (store.day_partitions): a day that ended before the
batches' cutoff has each query's newest batch in it moved to the kept rows' partitions, then its
partitions dropped, while writes into that day wait; kept batches that are no longer their
query's newest go next.

Each transaction deletes at most `chunk` batches on SQLite (with their rows: a row each of packed
offsets and event times), `chunk` minutes or hours of rollups, `chunk` timer snapshots, `chunk`
alerts (with their rows: a few events, a delivery of the firing and the resolved one per receiver,
usually one attempt each; a delivery retried for a day against a receiver that is down has about
300, and 32 alerts with two such, 19,200 attempts, went in 30 ms on either store) or `chunk`
silences, so that a listener's write waits for one short transaction at most. Between transactions
the pruner pauses as long as the last one took (at most MAX_PAUSE_S): SQLite's busy handler retries
a waiting writer after sleeps of up to 100 ms, so with transactions back to back a writer often
misses the gaps. `python -m benchmarks` measures a writer beside a prune with and without the
pauses (docs/benchmarks.md). On SQLite a prune deletes only batches stored before it began: one
dated before the cutoff that arrives meanwhile (a backfill) waits for the next prune, so that a
prune ends however fast such batches come.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from monitor.config import (
    DEFAULT_RETENTION_BATCHES_HOURS,
    DEFAULT_RETENTION_DAYS,
    DEFAULT_RETENTION_HOURS_DAYS,
)
from monitor.store.schema.models import (
    AlertEvent,
    AlertRow,
    Base,
    Batch,
    BatchEventTimes,
    BatchOffsets,
    Delivery,
    DeliveryAttempt,
    Query,
    Silence,
    Source,
    StateOperator,
    TimerSnapshotRow,
)
from monitor.store.tiers import day_partitions
from monitor.store.tiers.day_partitions import DAY_MS
from monitor.store.tiers.minutes import HOUR_MS, MINUTE_MS, TIERS, Tier

DEFAULT_CHUNK = 32
MAX_PAUSE_S = 0.1
BATCH_TABLES = (StateOperator, Source, BatchOffsets, BatchEventTimes)
ALERT_TABLES = (AlertRow, AlertEvent, Delivery, DeliveryAttempt)
PRUNED: list[type[Base]] = [
    Batch,
    *BATCH_TABLES,
    *[tier.model for tier in TIERS],
    TimerSnapshotRow,
    *ALERT_TABLES,
    Silence,
]
TABLES = tuple(table.__tablename__ for table in PRUNED)
# An alert in any other state (models.LIVE_ALERT_STATES, or one we do not know) is kept.
ENDED_ALERT_STATES = ("resolved", "cancelled")


@dataclass
class Pruned:
    """What a prune deleted, per table, and in how many transactions; the tables whose count
    includes an estimate (a large day partition dropped on PostgreSQL: store.day_partitions)."""

    deleted: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    transactions: int = 0
    estimated: set[str] = field(default_factory=set)

    @property
    def total(self) -> int:
        """Rows deleted in every table."""
        return sum(self.deleted.values())


# One chunk: deletes it in the transaction it is given, adds what it deleted to the counts,
# and returns how many batches, snapshots, alerts or silences it deleted.
Step = Callable[[sa.Connection, Pruned], int]


@dataclass(frozen=True)
class Cutoffs:
    """The times before which each tier is pruned: every batch with its rows and the timer
    snapshots; the per-minute rollups, ended alerts and silences; the per-hour rollups. A
    batch stored at `stored_ms` or later stays whatever its time, and so do its query's rollups
    from its minute and hour on; None judges batches by their time alone (a prune at a time of
    its own choosing, whose clock is not the one the store stamped its batches with)."""

    batches_ms: int
    minutes_ms: int
    hours_ms: int
    stored_ms: int | None = None

    @classmethod
    def at(cls, before_ms: int) -> Cutoffs:
        """The same cutoff for every tier."""
        return cls(before_ms, before_ms, before_ms)


@dataclass(frozen=True)
class Retention:
    """How long each tier is kept: every batch for `batches_hours` hours, the per-minute
    rollups (and ended alerts and silences) for `days` days, the per-hour ones for
    `hours_days` days. A finer tier is never kept longer than the per-minute one, nor the
    per-hour one shorter, so that a range a finer tier no longer covers is read from a coarser
    one (store.history.resolution)."""

    batches_hours: int = DEFAULT_RETENTION_BATCHES_HOURS
    days: int = DEFAULT_RETENTION_DAYS
    hours_days: int = DEFAULT_RETENTION_HOURS_DAYS

    def cutoffs(self, now_ms: int) -> Cutoffs:
        """The cutoffs of each tier at `now_ms`, by the clock that stamps stored batches: a
        batch stored within the batches' retention stays."""
        batches_ms = now_ms - min(self.batches_hours * HOUR_MS, self.days * DAY_MS)
        return Cutoffs(
            batches_ms,
            now_ms - self.days * DAY_MS,
            now_ms - max(self.hours_days, self.days) * DAY_MS,
            stored_ms=batches_ms,
        )


def prune(
    engine: sa.Engine,
    cutoffs: Cutoffs,
    chunk: int = DEFAULT_CHUNK,
    sleep: Callable[[float], None] = time.sleep,
) -> Pruned:
    """Delete each tier's history from before its cutoff, `chunk` batches, minutes, hours,
    snapshots, alerts or silences per transaction."""
    pruned = Pruned()
    by_day = day_partitions.in_use(engine)
    if by_day:
        _expire_days(engine, cutoffs, pruned)
    for step in _steps(engine, cutoffs, chunk, by_day):
        deleted = chunk
        while deleted == chunk:
            deleted = _transaction(engine, step, pruned, sleep)
    return pruned


def _steps(engine: sa.Engine, cutoffs: Cutoffs, chunk: int, by_day: bool) -> list[Step]:
    """Each query's batches (unless they expire by day), minutes, hours and timer snapshots,
    then the alerts and the silences."""
    with engine.connect() as connection:
        query_ids = connection.scalars(sa.select(Query.id).order_by(Query.id)).all()
        last_row = None if by_day else connection.scalar(sa.select(sa.func.max(Batch.id)))
    stored_ms = cutoffs.stored_ms
    delete_batches = functools.partial(_delete_batches, stored_ms, last_row or 0)
    deletes: list[tuple[Callable[..., int], int]] = [
        *([] if by_day else [(delete_batches, cutoffs.batches_ms)]),
        *[
            (
                functools.partial(_delete_rollups, tier, stored_ms),
                cutoffs.minutes_ms if tier.width_ms == MINUTE_MS else cutoffs.hours_ms,
            )
            for tier in TIERS
        ],
        (_delete_timer_snapshots, cutoffs.batches_ms),
    ]
    steps: list[Step] = [
        functools.partial(delete, query_id, before_ms, chunk)
        for query_id in query_ids
        for delete, before_ms in deletes
    ]
    steps += [
        functools.partial(delete, cutoffs.minutes_ms, chunk)
        for delete in (_delete_alerts, _delete_silences)
    ]
    return steps


def _transaction(
    engine: sa.Engine,
    step: Step,
    pruned: Pruned,
    sleep: Callable[[float], None],
) -> int:
    """One chunk in its own transaction, then a pause as long as it took; what it deleted."""
    started = time.monotonic()
    with engine.begin() as connection:
        deleted = step(connection, pruned)
    pruned.transactions += 1
    sleep(min(time.monotonic() - started, MAX_PAUSE_S))
    return deleted


def _expire_days(engine: sa.Engine, cutoffs: Cutoffs, pruned: Pruned) -> None:
    """PostgreSQL: make the days ahead's partitions, drop the days that ended before the
    cutoff (each query's newest batch kept, and the batches stored within the retention), then
    the kept batches that are neither their query's newest nor stored within it."""
    before_ms = cutoffs.batches_ms
    day_partitions.prepare_ahead(engine, int(time.time() * 1000))
    pruned.transactions += 1
    with engine.connect() as connection:
        days = day_partitions.days(connection)
    for day in days:
        end_ms = (day + 1) * DAY_MS
        if end_ms > before_ms:
            break
        # No batch goes into the day from before its newest batches are kept until it is gone.
        with day_partitions.expiring(engine, day) as autocommit:
            with engine.begin() as connection:
                day_partitions.keep_newest(connection, day)
                if cutoffs.stored_ms is not None:
                    day_partitions.keep_stored(connection, day, cutoffs.stored_ms)
                # Every query: no batch of any before the day's end is stored but a kept one.
                _kept_from(connection, Query.batches_kept_from_ms, None, end_ms)
            pruned.transactions += 1
            for table in day_partitions.TABLES:
                dropped = day_partitions.drop_day(autocommit, table, day)
                pruned.deleted[table] += dropped.rows
                if dropped.estimated:
                    pruned.estimated.add(table)
    with engine.begin() as connection:
        for table, deleted in day_partitions.drop_kept(connection, cutoffs.stored_ms).items():
            pruned.deleted[table] += deleted
    pruned.transactions += 1


def _delete_batches(
    stored_ms: int | None,
    last_row: int,
    query_id: str,
    before_ms: int,
    chunk: int,
    connection: sa.Connection,
    pruned: Pruned,
) -> int:
    """Delete the query's oldest `chunk` batches before the cutoff, but those stored from
    `stored_ms` on and those stored after the prune began (rows after `last_row`), and their
    rows. A batch dated before the cutoff that arrives meanwhile waits for the next prune, so
    that a prune ends however fast such batches come."""
    newest = sa.select(sa.func.max(Batch.batch_id)).where(Batch.query_id == query_id)
    stored_before: sa.ColumnElement[bool] = sa.true()
    if stored_ms is not None:
        stored_before = sa.or_(Batch.stored_at_ms.is_(None), Batch.stored_at_ms < stored_ms)
    oldest = (
        sa.select(Batch.id)
        .where(
            Batch.query_id == query_id,
            Batch.id <= last_row,
            Batch.batch_time_ms < before_ms,
            Batch.batch_id != newest.scalar_subquery(),
            stored_before,
        )
        .order_by(Batch.batch_time_ms)
        .limit(chunk)
    )
    # One statement picks and deletes the batches: a batch replayed meanwhile has a new time,
    # and its new rows are left alone.
    batch_ids = connection.scalars(
        sa.delete(Batch).where(Batch.id.in_(oldest.scalar_subquery())).returning(Batch.batch_id)
    ).all()
    pruned.deleted["batches"] += len(batch_ids)
    if batch_ids:
        for table in BATCH_TABLES:
            where = sa.and_(table.query_id == query_id, table.batch_id.in_(batch_ids))
            _delete(connection, pruned, table, where)
        _kept_from(connection, Query.batches_kept_from_ms, query_id, before_ms)
    return len(batch_ids)


def _delete_rollups(
    tier: Tier,
    stored_ms: int | None,
    query_id: str,
    before_ms: int,
    chunk: int,
    connection: sa.Connection,
    pruned: Pruned,
) -> int:
    """Delete the rollups of the query's oldest `chunk` minutes or hours that ended before
    the cutoff, and before the span of its oldest batch stored from `stored_ms` on."""
    column, query = tier.column(tier.start), tier.column("query_id")
    spans = connection.scalars(
        sa.select(column)
        .where(query == query_id, column <= before_ms - tier.width_ms)
        .distinct()
        .order_by(column)
        .limit(chunk)
    ).all()
    # Looked up only where there is something to delete (a prune mostly finds nothing in a
    # query's tier): the spans are in order, so those spared are the last, and so are all after.
    kept_ms = None
    if spans and stored_ms is not None:
        kept_ms = _oldest_stored(connection, query_id, before_ms, stored_ms)
    if kept_ms is not None:
        spans = [span for span in spans if span < kept_ms - kept_ms % tier.width_ms]
    if spans:
        _delete(connection, pruned, tier.model, sa.and_(query == query_id, column.in_(spans)))
        if tier.width_ms == MINUTE_MS:
            _kept_from(connection, Query.minutes_kept_from_ms, query_id, before_ms)
    return len(spans)


def _oldest_stored(
    connection: sa.Connection, query_id: str, before_ms: int, stored_ms: int
) -> int | None:
    """The time of the query's oldest batch before `before_ms` that was stored from
    `stored_ms` on: the first such in the query's batch times (the batches before a rollup's
    cutoff that are still stored are few, those that expiry kept, and the oldest of them
    usually is one)."""
    return connection.scalar(
        sa.select(Batch.batch_time_ms)
        .where(
            Batch.query_id == query_id,
            Batch.batch_time_ms < before_ms,
            Batch.stored_at_ms >= stored_ms,
        )
        .order_by(Batch.batch_time_ms)
        .limit(1)
    )


def _kept_from(
    connection: sa.Connection, column: Any, query_id: str | None, before_ms: int
) -> None:
    """Note on the query (on every query if None) that its tier is kept from `before_ms` on,
    unless a later cutoff is noted already."""
    statement = sa.update(Query).where(sa.or_(column.is_(None), column < before_ms))
    if query_id is not None:
        statement = statement.where(Query.id == query_id)
    connection.execute(statement.values({column: before_ms}))


def _delete_timer_snapshots(
    query_id: str, before_ms: int, chunk: int, connection: sa.Connection, pruned: Pruned
) -> int:
    """Delete the query's oldest `chunk` timer snapshots before the cutoff."""
    snapshot = TimerSnapshotRow
    newest = (
        sa.select(snapshot.id)
        .where(snapshot.query_id == query_id)
        .order_by(snapshot.taken_at_ms.desc(), snapshot.id.desc())
        .limit(1)
    )
    oldest = (
        sa.select(snapshot.id)
        .where(
            snapshot.query_id == query_id,
            snapshot.taken_at_ms < before_ms,
            snapshot.id != newest.scalar_subquery(),
        )
        .order_by(snapshot.taken_at_ms)
        .limit(chunk)
    )
    return _delete(connection, pruned, snapshot, snapshot.id.in_(oldest.scalar_subquery()))


def _delete_alerts(before_ms: int, chunk: int, connection: sa.Connection, pruned: Pruned) -> int:
    """Delete `chunk` alerts that ended before the cutoff, children first: attempts,
    deliveries, events, then the alerts."""
    # Picking the alerts before deleting their rows is safe: an ended alert changes no more
    # (only a live one moves on or is acknowledged), and without a queued delivery none of
    # its deliveries gets another attempt.
    alert_ids = connection.scalars(_ended_alerts(before_ms).limit(chunk)).all()
    if alert_ids:
        events = sa.select(AlertEvent.id).where(AlertEvent.alert_id.in_(alert_ids))
        deliveries = sa.select(Delivery.id).where(Delivery.alert_event_id.in_(events))
        _delete(connection, pruned, DeliveryAttempt, DeliveryAttempt.delivery_id.in_(deliveries))
        _delete(connection, pruned, Delivery, Delivery.alert_event_id.in_(events))
        _delete(connection, pruned, AlertEvent, AlertEvent.alert_id.in_(alert_ids))
        _delete(connection, pruned, AlertRow, AlertRow.id.in_(alert_ids))
    return len(alert_ids)


def _ended_alerts(before_ms: int) -> sa.Select[Any]:
    """The ids of alerts that ended before the cutoff and have no notification queued."""
    queued = (
        sa.select(Delivery.id)
        .join(AlertEvent, AlertEvent.id == Delivery.alert_event_id)
        .where(
            AlertEvent.alert_id == AlertRow.id,
            Delivery.delivered_at_ms.is_(None),
            Delivery.abandoned_at_ms.is_(None),
        )
    )
    return (
        sa.select(AlertRow.id)
        .where(
            AlertRow.state.in_(ENDED_ALERT_STATES),
            AlertRow.resolved_at_ms < before_ms,
            ~queued.exists(),
        )
        .order_by(AlertRow.id)
    )


def _delete_silences(before_ms: int, chunk: int, connection: sa.Connection, pruned: Pruned) -> int:
    """Delete `chunk` silences that ended before the cutoff."""
    ended = sa.select(Silence.id).where(Silence.until_ms < before_ms).order_by(Silence.id)
    return _delete(
        connection, pruned, Silence, Silence.id.in_(ended.limit(chunk).scalar_subquery())
    )


def _delete(
    connection: sa.Connection, pruned: Pruned, table: Any, where: sa.ColumnElement[bool]
) -> int:
    """Delete a table's rows that match, counted; how many."""
    deleted = connection.execute(sa.delete(table).where(where)).rowcount
    pruned.deleted[table.__tablename__] += deleted
    return deleted
