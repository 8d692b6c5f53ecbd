"""No write waits without end: a lock held elsewhere fails the write after a bound, reported
as the store unavailable, and the retried write stores each event once."""

import time

import pytest
import sqlalchemy as sa
import sqlalchemy.exc as sa_exc

from monitor.collect.progress import parse_progress
from monitor.collect.writer import StoreWriter
from monitor.store.schema.engine import create_engine
from monitor.store.schema.models import Batch
from monitor.store.tiers import day_partitions
from monitor.store.write import query_locks
from monitor.store.write.writes import write_event
from tests.support.progress import fixture_batch, progress_doc, stamp
from tests.support.waiting import wait_until

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)


@pytest.fixture
def short_lock_timeout(monkeypatch):
    monkeypatch.setattr(query_locks, "LOCK_TIMEOUT_MS", 300)


def locked(database_url):
    """A connection holding the batches table as an operator's LOCK TABLE would."""
    holder = create_engine(database_url).connect()
    # Let go after 10 s whatever happens, so that a write that waits on it cannot hang the test.
    holder.exec_driver_sql("SET idle_in_transaction_session_timeout = '10s'")
    holder.exec_driver_sql("LOCK TABLE batches IN ACCESS EXCLUSIVE MODE")
    return holder


def test_a_write_blocked_by_a_lock_fails_after_the_lock_timeout(
    engine, database_url, short_lock_timeout
):
    write_event(engine, fixture_batch(batch_id=0))
    holder = locked(database_url)
    try:
        started = time.monotonic()
        with pytest.raises(sa_exc.OperationalError, match="lock timeout"):
            write_event(engine, fixture_batch(batch_id=1))
        assert time.monotonic() - started < 5
    finally:
        holder.rollback()
        holder.close()


def test_the_writer_reports_the_lock_and_stores_each_event_once_after_it(
    engine, database_url, short_lock_timeout
):
    write_event(engine, fixture_batch(batch_id=0))
    holder = locked(database_url)
    writer = StoreWriter(engine, capacity=100, max_backoff=0.2)
    try:
        for batch_id in (1, 2, 3):
            writer.submit(fixture_batch(batch_id=batch_id))
        wait_until(lambda: writer.stats().retries >= 2, 20, "the writer to retry the lock")
        stats = writer.stats()
        assert not stats.store_available and "lock timeout" in stats.last_error
    finally:
        holder.rollback()
        holder.close()
    assert writer.close(timeout=30)
    stats = writer.stats()
    assert (stats.written, stats.rejected, stats.store_available) == (3, 0, True)
    with engine.connect() as connection:
        stored = connection.scalars(sa.select(Batch.batch_id).order_by(Batch.batch_id)).all()
    assert stored == [0, 1, 2, 3]


def stored_batch_ids(engine, query_id):
    with engine.connect() as connection:
        statement = sa.select(Batch.batch_id).where(Batch.query_id == query_id)
        return sorted(connection.scalars(statement))


def test_a_write_into_a_day_expiring_past_the_lock_timeout_fails_as_unavailable(
    engine, short_lock_timeout
):
    write_event(engine, fixture_batch(batch_id=0))
    expiring_day = day_partitions.day_of(fixture_batch(batch_id=0).batch_time_ms)
    next_day = stamp((expiring_day + 1) * day_partitions.DAY_MS)
    with day_partitions.expiring(engine, expiring_day):
        with pytest.raises(sa_exc.OperationalError, match="lock timeout"):
            write_event(engine, fixture_batch(batch_id=1))
        # Writes into other days do not wait.
        write_event(engine, parse_progress(progress_doc(id="other", timestamp=next_day)))
    write_event(engine, fixture_batch(batch_id=1))
    assert stored_batch_ids(engine, fixture_batch(batch_id=0).query_id) == [0, 1]
    assert stored_batch_ids(engine, "other") == [2]
