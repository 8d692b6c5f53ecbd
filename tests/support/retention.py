"""History for retention tests: days either side of a 30-day cutoff, batches and snapshots."""

import sqlalchemy as sa

from monitor.events import TimerSnapshot
from monitor.store.schema.models import Batch
from monitor.store.write.writes import write_event
from tests.support.progress import batch_event

DAY = 86_400_000
NOW = 1_795_316_400_000
CUTOFF = NOW - 30 * DAY
OLD = CUTOFF - DAY
NEW = CUTOFF + DAY


def write_batch(engine, query_id, batch_id, at_ms, late=0):
    """A batch with one operator, one source, two partitions and their event times, stored
    at its time, as a driver's whose clock is right is (a batch stored within the retention
    stays, whatever its time: store.prune)."""
    event_times = {0: (5, at_ms - 3_000, at_ms - 1_000, late), 1: (5, at_ms - 4_000, at_ms, 0)}
    ends = (10 * batch_id, 10 * batch_id)
    event = batch_event(query_id, batch_id, at_ms, ends=ends, dropped=1, event_times=event_times)
    write_event(engine, event)
    with engine.begin() as connection:
        connection.execute(
            sa.update(Batch)
            .where(Batch.query_id == query_id, Batch.batch_id == batch_id)
            .values(stored_at_ms=at_ms)
        )


def write_snapshot(engine, query_id, at_ms):
    """A timer snapshot of run-1 of the query."""
    write_event(engine, TimerSnapshot(query_id, "run-1", at_ms, None, 3, None, 60_000, 0))
