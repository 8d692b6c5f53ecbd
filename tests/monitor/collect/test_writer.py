"""The background store writer on real SQLite and PostgreSQL: order, overflow, outages, closing."""

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.collect.writer import StoreWriter
from monitor.events import Event, QueryStarted, QueryTerminated
from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import is_current, upgrade
from monitor.store.schema.models import Batch, Query, RejectedEvent, Run
from monitor.store.write.writes import write_events
from tests.support.network import closed_port
from tests.support.progress import fixture_batch, progress_event
from tests.support.stores import sqlite_locked
from tests.support.waiting import wait_until

QUERY, RUN = "11111111-1111-1111-1111-111111111111", "run-1"
WAIT_S = 10.0  # generous upper bound for anything that should take milliseconds


def lifecycle(batches: int) -> list[Event]:
    """A run: started, `batches` batches numbered from 0, terminated."""
    return [
        QueryStarted(QUERY, RUN, "telemetry_windows", 1_000),
        *(fixture_batch(QUERY, n, RUN) for n in range(batches)),
        QueryTerminated(QUERY, RUN, 9_000),
    ]


def stored_batch_ids(engine: sa.Engine) -> list[int]:
    """Batch ids in the order their rows were inserted."""
    with so.Session(engine) as session:
        return list(session.scalars(sa.select(Batch.batch_id).order_by(Batch.id)))


def stored_query(engine: sa.Engine) -> tuple[Any, ...]:
    with so.Session(engine) as session:
        query = session.get(Query, QUERY)
        runs = session.scalar(sa.select(sa.func.count()).select_from(Run))
        if query is None:
            return (None, runs)
        return (query.status, query.name, query.last_batch_id, query.terminated_at_ms, runs)


@pytest.fixture
def writers() -> Iterator[Callable[..., StoreWriter]]:
    """Make writers that are always closed at the end of the test, so no thread outlives it."""
    made: list[StoreWriter] = []

    def make(engine: sa.Engine, **options: Any) -> StoreWriter:
        writer = StoreWriter(engine, **{"capacity": 100, "max_backoff": 0.1, **options})
        made.append(writer)
        return writer

    yield make
    for writer in made:
        writer.close(timeout=0.5)


def test_every_submitted_event_is_written_in_order(engine: sa.Engine, writers: Any) -> None:
    writer = writers(engine)
    events = lifecycle(batches=5)
    for event in events:
        writer.submit(event)
    assert writer.flush(timeout=WAIT_S)
    stats = writer.stats()
    assert (stats.written, stats.pending, stats.dropped, stats.rejected) == (7, 0, 0, 0)
    assert (stats.retries, stats.store_available, stats.last_error) == (0, True, None)
    assert stored_batch_ids(engine) == [0, 1, 2, 3, 4]
    # Terminated was written last: had it come before a batch, the query would not show it.
    assert stored_query(engine) == ("terminated", "telemetry_windows", 4, 9_000, 1)


def test_a_full_buffer_drops_the_oldest_waiting_events(
    engine: sa.Engine, writers: Any, caplog: pytest.LogCaptureFixture
) -> None:
    entered, gate = threading.Event(), threading.Event()
    written: list[int] = []

    def blocking_write(engine: sa.Engine, events: Any) -> None:
        entered.set()
        assert gate.wait(WAIT_S), "the test never opened the gate"
        write_events(engine, events)
        written.extend(event.batch_id for event in events)

    writer = writers(engine, capacity=3, write=blocking_write)
    writer.submit(fixture_batch(QUERY, 0, RUN))
    assert entered.wait(WAIT_S), "the writer never started writing batch 0"
    for batch_id in range(1, 10):
        writer.submit(fixture_batch(QUERY, batch_id, RUN))
    stats = writer.stats()
    # Batch 0 is in flight, 7-9 wait in the buffer, 1-6 were pushed out.
    assert (stats.written, stats.pending, stats.dropped) == (0, 4, 6)
    gate.set()
    assert writer.flush(timeout=WAIT_S)
    stats = writer.stats()
    assert (stats.written, stats.pending, stats.dropped, stats.rejected) == (4, 0, 6, 0)
    assert written == [0, 7, 8, 9]
    assert stored_batch_ids(engine) == [0, 7, 8, 9]
    warnings = [r.getMessage() for r in caplog.records if r.name == "monitor.collect.writer"]
    assert warnings == ["wmon: store buffer full, 1 events dropped so far"]


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[tuple[Path, sa.Engine]]:
    """A migrated SQLite store whose engine gives up on a lock after 50 ms, not 5 s."""
    path = tmp_path / "wmon.db"
    engine = create_engine(f"sqlite:///{path}")
    upgrade(engine)
    # connect_args={"timeout": ...} would be overridden by the engine's own PRAGMA busy_timeout
    # on connect; a later connect listener runs after it and wins.
    sa.event.listen(engine, "connect", lambda dbapi, _: dbapi.execute("PRAGMA busy_timeout=50"))
    engine.dispose()
    yield path, engine
    engine.dispose()


def test_sqlite_locked_then_released_loses_and_repeats_nothing(
    sqlite_store: tuple[Path, sa.Engine], writers: Any, caplog: pytest.LogCaptureFixture
) -> None:
    path, engine = sqlite_store
    with sqlite_locked(path):
        writer = writers(engine)
        for event in lifecycle(batches=3):
            writer.submit(event)
        wait_until(lambda: writer.stats().retries >= 3, WAIT_S, "the writer has retried 3 times")
        stats = writer.stats()
        assert (stats.written, stats.pending, stats.dropped, stats.rejected) == (0, 5, 0, 0)
        assert stats.store_available is False
    assert writer.flush(timeout=WAIT_S)
    stats = writer.stats()
    assert (stats.written, stats.pending, stats.dropped, stats.rejected) == (5, 0, 0, 0)
    assert stats.store_available is True
    assert stored_batch_ids(engine) == [0, 1, 2]
    assert stored_query(engine) == ("terminated", "telemetry_windows", 2, 9_000, 1)
    messages = [r.getMessage() for r in caplog.records if r.name == "monitor.collect.writer"]
    assert len(messages) == 2
    assert messages[0].startswith("wmon: store unavailable, retrying: ")
    assert messages[1] == "wmon: store available again"


def test_the_last_error_says_why_the_store_is_unavailable(
    sqlite_store: tuple[Path, sa.Engine], writers: Any, caplog: pytest.LogCaptureFixture
) -> None:
    path, engine = sqlite_store
    with sqlite_locked(path):
        writer = writers(engine)
        writer.submit(QueryStarted(QUERY, RUN, "telemetry_windows", 1_000))
        wait_until(lambda: writer.stats().retries >= 1, WAIT_S, "the writer has retried once")
        last_error = writer.stats().last_error
        [warning] = [r.getMessage() for r in caplog.records if r.name == "monitor.collect.writer"]
    assert last_error is not None and "database is locked" in last_error
    assert warning.startswith("wmon: store unavailable, retrying: ")
    assert "database is locked" in warning


def test_postgresql_unreachable_keeps_events_and_close_reports_them(
    writers: Any, caplog: pytest.LogCaptureFixture
) -> None:
    port = closed_port()
    engine = create_engine(f"postgresql://postgres@127.0.0.1:{port}/wmon")
    writer = writers(engine)
    for event in lifecycle(batches=3):
        writer.submit(event)
    wait_until(lambda: writer.stats().retries >= 3, WAIT_S, "the writer has retried 3 times")
    stats = writer.stats()
    assert (stats.written, stats.pending, stats.dropped, stats.rejected) == (0, 5, 0, 0)
    assert stats.store_available is False
    assert stats.last_error is not None and f"port {port} failed" in stats.last_error
    started = time.monotonic()
    assert writer.close(timeout=0.3) is False
    assert time.monotonic() - started < 3.0
    stats = writer.stats()
    assert (stats.written, stats.pending, stats.dropped) == (0, 5, 0)
    assert "wmon: writer closed with 5 events not written" in [
        r.getMessage() for r in caplog.records
    ]
    engine.dispose()


def test_a_rejected_event_does_not_hold_up_the_ones_after_it(
    engine: sa.Engine, writers: Any, caplog: pytest.LogCaptureFixture
) -> None:
    def write_all_but_batch_1(engine: sa.Engine, events: Any) -> None:
        if any(getattr(event, "batch_id", None) == 1 for event in events):
            raise ValueError("batch 1 is corrupt")
        write_events(engine, events)

    writer = writers(engine, write=write_all_but_batch_1)
    for event in lifecycle(batches=3):
        writer.submit(event)
    assert writer.flush(timeout=WAIT_S)
    stats = writer.stats()
    assert (stats.written, stats.pending, stats.dropped, stats.rejected) == (4, 0, 0, 1)
    assert (stats.retries, stats.store_available, stats.last_error) == (
        0,
        True,
        "batch 1 is corrupt",
    )
    assert stored_batch_ids(engine) == [0, 2]
    assert stored_query(engine) == ("terminated", "telemetry_windows", 2, 9_000, 1)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [r.getMessage() for r in errors] == [
        "wmon: could not store BatchProgress: batch 1 is corrupt"
    ]


def test_the_writer_migrates_an_empty_store_first(empty_database_url: str, writers: Any) -> None:
    engine = create_engine(empty_database_url)
    assert not is_current(engine)
    writer = writers(engine)
    for event in lifecycle(batches=2):
        writer.submit(event)
    assert writer.flush(timeout=WAIT_S)
    assert is_current(engine)
    assert writer.stats().written == 4
    assert stored_batch_ids(engine) == [0, 1]
    engine.dispose()


def test_close_after_flush_and_submit_after_close(engine: sa.Engine, writers: Any) -> None:
    writer = writers(engine)
    writer.submit(QueryStarted(QUERY, RUN, "telemetry_windows", 1_000))
    writer.submit(fixture_batch(QUERY, 0, RUN))
    assert writer.flush(timeout=WAIT_S)
    assert writer.close(timeout=WAIT_S) is True
    writer.submit(fixture_batch(QUERY, 1, RUN))
    writer.submit(QueryTerminated(QUERY, RUN, 9_000))
    stats = writer.stats()
    assert (stats.written, stats.pending, stats.dropped, stats.rejected) == (2, 0, 2, 0)
    assert writer.flush(timeout=0.1)
    assert stored_batch_ids(engine) == [0]
    assert stored_query(engine) == ("active", "telemetry_windows", 0, None, 1)


def test_waiting_events_are_written_together_in_one_transaction(
    engine: sa.Engine, writers: Any
) -> None:
    entered, gate = threading.Event(), threading.Event()
    groups: list[list[int]] = []

    def recording_write(engine: sa.Engine, events: Any) -> None:
        entered.set()
        assert gate.wait(WAIT_S), "the test never opened the gate"
        write_events(engine, events)
        groups.append([event.batch_id for event in events])

    writer = writers(engine, capacity=200, write=recording_write)
    writer.submit(fixture_batch(QUERY, 0, RUN))
    assert entered.wait(WAIT_S), "the writer never started writing batch 0"
    for batch_id in range(1, 150):
        writer.submit(fixture_batch(QUERY, batch_id, RUN))
    gate.set()
    assert writer.flush(timeout=WAIT_S)
    assert groups == [[0], list(range(1, 101)), list(range(101, 150))]
    assert stored_batch_ids(engine) == list(range(150))
    assert writer.stats().written == 150


def test_spark_json_the_store_cannot_take_is_set_aside_and_the_rest_written(
    engine: sa.Engine, writers: Any
) -> None:
    """As `attach` with a store submits them: Spark's events in their JSON form."""
    writer = writers(engine)
    good, unreadable = progress_event(batch_id=0), progress_event(batchId="one")
    for item in (good, unreadable, progress_event(batch_id=1)):
        writer.submit(item)
    assert writer.flush(timeout=30)
    assert (writer.stats().written, writer.stats().rejected) == (2, 1)
    with so.Session(engine) as session:
        [aside] = session.scalars(sa.select(RejectedEvent)).all()
        assert session.scalars(sa.select(Batch.batch_id).order_by(Batch.batch_id)).all() == [0, 1]
    assert (aside.origin, json.loads(aside.document)) == ("in-process listener", unreadable)
    assert aside.error == "progress field 'batchId' must be int, not 'one'"
