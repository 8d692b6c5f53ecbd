"""Prune history older than the retention period, in short transactions that writers slip between.

Batches older than the cutoff go with their state operators, sources, partitions and partition
event times; so do older pending-timer snapshots. Queries and runs are never deleted, nor a
query's newest batch (its rows are what the overview shows, and the next batch's running event
times and health are derived from them) and its newest timer snapshot (its pending timers).

Each transaction deletes at most `chunk` batches (with their rows: about 2 × 64 partition rows
per batch at 64 partitions) or `chunk` timer snapshots, so that a listener's write waits for one
short transaction at most. Between transactions the pruner pauses as long as the last one took
(at most MAX_PAUSE_S): SQLite's busy handler retries a waiting writer after sleeps of up to
100 ms, so with transactions back to back a writer often misses the gaps (measured on SQLite
while others' Spark tests ran: the slowest write 0.8 s without the pauses, 0.3 s with them).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import sqlalchemy as sa

from monitor.store.models import (
    Batch,
    Partition,
    PartitionEventTime,
    Query,
    Source,
    StateOperator,
    TimerSnapshotRow,
)

DAY_MS = 86_400_000
DEFAULT_CHUNK = 32
MAX_PAUSE_S = 0.1
BATCH_TABLES = (StateOperator, Source, Partition, PartitionEventTime)
TABLES = (
    "batches",
    "state_operators",
    "sources",
    "partitions",
    "partition_event_times",
    "timer_snapshots",
)


@dataclass
class Pruned:
    """What a prune deleted, per table, and in how many transactions."""

    deleted: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    transactions: int = 0

    @property
    def total(self) -> int:
        """Rows deleted in every table."""
        return sum(self.deleted.values())


def cutoff_ms(days: int, now_ms: int) -> int:
    """The time before which history is pruned when it is kept for `days` days."""
    return now_ms - days * DAY_MS


def prune(
    engine: sa.Engine,
    before_ms: int,
    chunk: int = DEFAULT_CHUNK,
    sleep: Callable[[float], None] = time.sleep,
) -> Pruned:
    """Delete history from before `before_ms`, `chunk` batches or snapshots per transaction."""
    pruned = Pruned()
    with engine.connect() as connection:
        query_ids = connection.scalars(sa.select(Query.id).order_by(Query.id)).all()
    for query_id in query_ids:
        for delete in (_delete_batches, _delete_timer_snapshots):
            step = functools.partial(delete, query_id, before_ms, chunk)
            deleted = chunk
            while deleted == chunk:
                deleted = _transaction(engine, step, pruned, sleep)
    return pruned


def _transaction(
    engine: sa.Engine,
    step: Callable[[sa.Connection, Pruned], int],
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


def _delete_batches(
    query_id: str, before_ms: int, chunk: int, connection: sa.Connection, pruned: Pruned
) -> int:
    """Delete the query's oldest `chunk` batches before the cutoff and their rows."""
    newest = sa.select(sa.func.max(Batch.batch_id)).where(Batch.query_id == query_id)
    oldest = (
        sa.select(Batch.id)
        .where(
            Batch.query_id == query_id,
            Batch.batch_time_ms < before_ms,
            Batch.batch_id != newest.scalar_subquery(),
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
            result = connection.execute(
                sa.delete(table).where(table.query_id == query_id, table.batch_id.in_(batch_ids))
            )
            pruned.deleted[table.__tablename__] += result.rowcount
    return len(batch_ids)


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
    result = connection.execute(
        sa.delete(snapshot).where(snapshot.id.in_(oldest.scalar_subquery()))
    )
    pruned.deleted["timer_snapshots"] += result.rowcount
    return result.rowcount
