"""Noticing what was written to the store: new batches, replayed ones, timers, query rows."""

import json

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.events import QueryTerminated, TimerSnapshot
from monitor.store.schema.models import Batch
from monitor.store.signals.row_watch import batch_watch, query_watch, timer_watch
from monitor.store.write.writes import write_event
from tests.support.progress import batch_event

T0 = 1_795_316_400_000


def looked(engine, watch):
    with so.Session(engine) as session:
        changed = watch.look(session)
    watch.accept()
    return changed


def test_the_first_look_takes_the_store_as_seen(engine):
    write_event(engine, batch_event("q", 0, T0))
    watch = batch_watch()
    assert looked(engine, watch) == []
    write_event(engine, batch_event("q", 1, T0 + 1_000))
    [new] = looked(engine, watch)
    assert looked(engine, watch) == []
    assert new > 0


def batch_row_ids(engine):
    with so.Session(engine) as session:
        return dict(session.execute(sa.select(Batch.batch_id, Batch.id)).all())


def test_a_replayed_batch_is_noticed_even_with_its_old_row_id(engine):
    write_event(engine, batch_event("q", 0, T0))
    write_event(engine, batch_event("q", 1, T0 + 1_000))
    watch = batch_watch()
    assert looked(engine, watch) == []
    before = batch_row_ids(engine)
    # The latest batch again, from a restarted run.
    write_event(engine, batch_event("q", 1, T0 + 5_000, run_id="run-2", rows=7))
    after = batch_row_ids(engine)
    if engine.dialect.name == "sqlite":
        assert after[1] == before[1]  # the replaced row's id again: a max id would not move
    assert looked(engine, watch) == [after[1]]
    assert looked(engine, watch) == []


def test_rows_older_than_the_newest_kept_ones_are_settled(engine):
    watch = batch_watch(keep=2)
    for i in range(5):
        write_event(engine, batch_event("q", i, T0 + i * 1_000))
    looked(engine, watch)
    ids = batch_row_ids(engine)
    assert watch.seen(ids[0], ()) and watch.seen(ids[2], ())
    assert not watch.seen(ids[4], ())  # kept: seen only with its content
    with so.Session(engine) as session:
        newest = session.get(Batch, ids[4])
        assert watch.seen(ids[4], watch.fingerprint(newest))


def test_a_look_that_is_not_accepted_is_repeated(engine):
    watch = batch_watch()
    assert looked(engine, watch) == []
    write_event(engine, batch_event("q", 0, T0))
    with so.Session(engine) as session:
        [new] = watch.look(session)  # say the push of it failed: no accept()
        assert not watch.seen(new, watch.fingerprint(session.get(Batch, new)))
    assert looked(engine, watch) == [new]
    assert looked(engine, watch) == []


def test_timer_snapshots_and_query_rows(engine):
    write_event(engine, batch_event("q", 0, T0))
    timers, queries = timer_watch(), query_watch()
    assert looked(engine, timers) == [] and looked(engine, queries) == []
    write_event(engine, TimerSnapshot("q", "run-1", T0 + 1, None, 3, None, 0, 0))
    assert len(looked(engine, timers)) == 1 and looked(engine, queries) == []
    write_event(engine, QueryTerminated("q", "run-1", T0 + 2, "boom"))
    assert looked(engine, queries) == ["q"] and looked(engine, timers) == []


def test_a_watch_goes_on_from_what_another_had_seen(engine):
    """As the dashboard's watcher hands the live push on: through JSON, to a new watch that
    reports exactly what the first had not."""
    write_event(engine, batch_event("q", 0, T0))
    batches, queries = batch_watch(), query_watch()
    assert looked(engine, batches) == [] and looked(engine, queries) == []
    write_event(engine, batch_event("q", 1, T0 + 1_000))
    assert len(looked(engine, batches)) == 1 and looked(engine, queries) == ["q"]
    write_event(engine, batch_event("q", 2, T0 + 2_000))
    write_event(engine, QueryTerminated("q", "run-1", T0 + 3_000, "boom"))

    batches_after, queries_after = batch_watch(), query_watch()
    batches_after.go_on_from(json.loads(json.dumps(batches.seen_rows())))
    queries_after.go_on_from(json.loads(json.dumps(queries.seen_rows())))
    assert looked(engine, batches_after) == [batch_row_ids(engine)[2]]
    assert looked(engine, queries_after) == ["q"]
    assert looked(engine, batches_after) == [] and looked(engine, queries_after) == []
