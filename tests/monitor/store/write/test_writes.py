import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.events import QueryIdle, QueryStarted, QueryTerminated
from monitor.store.read.batches import recent_batches
from monitor.store.read.partitions import partition_states
from monitor.store.read.queries import find_query, list_queries
from monitor.store.schema.models import Batch, Query, Run, Source, StateOperator
from monitor.store.write.writes import write_event
from tests.support.progress import fixture_batch
from tests.support.stores import stored_partitions

QUERY, RUN, RUN2 = "11111111-1111-1111-1111-111111111111", "run-1", "run-2"


def count(engine, table):
    with so.Session(engine) as session:
        return session.scalar(sa.select(sa.func.count()).select_from(table))


def query_row(engine):
    with so.Session(engine) as session:
        return session.get(Query, QUERY)


def test_a_batch_is_stored_with_its_operators_sources_and_partitions(engine):
    write_event(engine, fixture_batch(QUERY, 3, RUN))
    with so.Session(engine) as session:
        [row] = recent_batches(session, QUERY, 10)
        assert (row.batch_id, row.run_id, row.num_input_rows) == (3, RUN, 40)
        assert row.watermark_ms == 1795316249318 and row.durations_ms["walCommit"] == 47
        [source] = session.scalars(sa.select(Source)).all()
        assert (source.kind, source.description) == ("kafka", "KafkaV2[Subscribe[telemetry]]")
        assert [
            (p.partition, p.end_offset, p.offset_lag) for p in partition_states(session, [row])[3]
        ] == [("telemetry/0", 1020, 4), ("telemetry/1", 960, 0), ("telemetry/2", 900, 600)]
        assert session.scalars(sa.select(StateOperator.operator_name)).all() == ["stateStoreSave"]
    assert query_row(engine).status == "active" and query_row(engine).last_batch_id == 3


def test_a_replayed_batch_replaces_its_rows(engine):
    write_event(engine, fixture_batch(QUERY, 5, RUN))
    write_event(engine, fixture_batch(QUERY, 6, RUN))
    write_event(engine, fixture_batch(QUERY, 6, RUN2, numInputRows=7))
    assert count(engine, Batch) == 2 and count(engine, Source) == 2
    assert len(stored_partitions(engine)) == 6 and count(engine, StateOperator) == 2
    with so.Session(engine) as session:
        replayed = session.scalars(sa.select(Batch).where(Batch.batch_id == 6)).one()
        assert (replayed.run_id, replayed.num_input_rows) == (RUN2, 7)


def test_query_lifecycle_start_idle_progress_termination(engine):
    write_event(engine, QueryStarted(QUERY, RUN, "telemetry_windows", 1_000))
    assert query_row(engine).status == "active"
    write_event(engine, QueryIdle(QUERY, RUN, 2_000))
    assert query_row(engine).status == "idle"
    write_event(engine, fixture_batch(QUERY, 0, RUN))
    assert query_row(engine).status == "active"
    write_event(engine, QueryTerminated(QUERY, RUN, 3_000, "boom: table missing", "X_ERROR"))
    query = query_row(engine)
    assert (query.status, query.exception, query.error_class) == (
        "failed",
        "boom: table missing",
        "X_ERROR",
    )
    with so.Session(engine) as session:
        run = session.get(Run, RUN)
        assert (run.started_at_ms, run.last_idle_at_ms, run.terminated_at_ms) == (
            1_000,
            2_000,
            3_000,
        )


def test_idle_events_never_touch_batch_rows(engine):
    write_event(engine, fixture_batch(QUERY, 0, RUN))
    with so.Session(engine) as session:
        before = [
            (b.batch_id, b.batch_time_ms, b.num_input_rows)
            for b in session.scalars(sa.select(Batch))
        ]
    write_event(engine, QueryIdle(QUERY, RUN, 9_999_999_999_999))
    with so.Session(engine) as session:
        after = [
            (b.batch_id, b.batch_time_ms, b.num_input_rows)
            for b in session.scalars(sa.select(Batch))
        ]
    assert after == before and count(engine, Batch) == 1


def test_a_restart_starts_a_new_run_and_clears_the_old_failure(engine):
    write_event(engine, QueryStarted(QUERY, RUN, "q", 1_000))
    write_event(engine, QueryTerminated(QUERY, RUN, 2_000, "boom", None))
    write_event(engine, QueryStarted(QUERY, RUN2, "q", 3_000))
    query = query_row(engine)
    assert (query.run_id, query.status, query.exception) == (RUN2, "active", None)
    assert count(engine, Run) == 2


def test_a_stopped_query_stays_terminated_when_an_old_runs_event_arrives(engine):
    write_event(engine, QueryStarted(QUERY, RUN, "q", 1_000))
    write_event(engine, QueryTerminated(QUERY, RUN, 2_000))
    write_event(engine, fixture_batch(QUERY, 4, RUN))
    assert query_row(engine).status == "terminated"


def test_a_replayed_start_of_an_ended_run_changes_nothing(engine):
    """The issue's probe: started, batch 0, terminated, then the same start again (a sender's
    retry) made the query active again, its end forgotten, and was counted as stored."""
    start = QueryStarted(QUERY, RUN, "q", 1_000)
    write_event(engine, start)
    write_event(engine, fixture_batch(QUERY, 0, RUN))
    write_event(engine, QueryTerminated(QUERY, RUN, 2_000))
    before = query_row(engine)
    written = write_event(engine, start)
    after = query_row(engine)
    assert (written.stored, written.repeated) == (0, 1)
    assert (after.status, after.terminated_at_ms, after.updated_at_ms) == (
        "terminated",
        2_000,
        before.updated_at_ms,
    )


def test_a_start_that_arrives_after_its_runs_batch_is_stored_once(engine):
    write_event(engine, fixture_batch(QUERY, 0, RUN))
    written = write_event(engine, QueryStarted(QUERY, RUN, "q", 1_000))
    assert (written.stored, written.repeated) == (1, 0)
    assert write_event(engine, QueryStarted(QUERY, RUN, "q", 1_000)).repeated == 1
    with so.Session(engine) as session:
        assert session.get(Run, RUN).started_at_ms == 1_000


def test_a_start_that_arrives_after_its_runs_end_leaves_it_ended(engine):
    write_event(engine, fixture_batch(QUERY, 0, RUN))
    write_event(engine, QueryTerminated(QUERY, RUN, 2_000, "boom", None))
    assert write_event(engine, QueryStarted(QUERY, RUN, "q", 1_000)).stored == 1
    query = query_row(engine)
    assert (query.status, query.terminated_at_ms, query.started_at_ms) == ("failed", 2_000, 1_000)


def test_the_newest_runs_end_stands_whatever_order_its_events_arrive_in(engine):
    """A restart's run ends before its start and batch reach the store: the query is the
    new run, ended, and a replay of the end is a repeat."""
    write_event(engine, QueryStarted(QUERY, RUN, "q", 1_000))
    write_event(engine, fixture_batch(QUERY, 0, RUN))
    end = QueryTerminated(QUERY, RUN2, 900_000, "boom", "X_ERROR")
    write_event(engine, end)
    assert query_row(engine).status == "active", "the run it ends is not known to be newer yet"
    write_event(engine, fixture_batch(QUERY, 1, RUN2, timestamp="2026-11-22T03:10:00.000Z"))
    query = query_row(engine)
    assert (query.run_id, query.status, query.terminated_at_ms) == (RUN2, "failed", 900_000)
    assert write_event(engine, end).repeated == 1


def test_find_query_by_id_or_name_and_list(engine):
    write_event(engine, QueryStarted(QUERY, RUN, "telemetry_windows", 1_000))
    write_event(engine, QueryStarted("22222222-2222-2222-2222-222222222222", "r", "other", 5_000))
    with so.Session(engine) as session:
        assert find_query(session, QUERY).name == "telemetry_windows"
        assert find_query(session, "telemetry_windows").id == QUERY
        assert [q.name for q in list_queries(session)] == ["other", "telemetry_windows"]


def test_recent_batches_are_the_last_ones_oldest_first(engine):
    for batch_id in range(6):
        write_event(engine, fixture_batch(QUERY, batch_id, RUN))
    with so.Session(engine) as session:
        assert [b.batch_id for b in recent_batches(session, QUERY, 3)] == [3, 4, 5]
        assert recent_batches(session, "no-such-query", 3) == []
