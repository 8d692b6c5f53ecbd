"""A query's batches over the window read against its run's trigger (store.trigger_pace), as
the facts give them to the pages, the scrape and the API."""

import sqlalchemy.orm as so

from monitor.events import QueryStarted
from monitor.health.facts import Thresholds
from monitor.store.read.batches import latest_batch
from monitor.store.read.read_facts import read_facts
from monitor.store.schema.models import Query, Run
from monitor.store.write.writes import write_event
from tests.support.progress import EPOCH, batch_event

Q = "trigger-q"


def started(run_id, trigger=None, interval_ms=None, at_ms=EPOCH):
    return QueryStarted(Q, run_id, "paced", at_ms, trigger, interval_ms)


def slow_batches(engine, run_id, first, count, at_ms):
    """Batches every 2 s whose sink (addBatch) takes 600 ms more each time from 1 s."""
    for k in range(count):
        add = 1_000 + 600 * k
        stages = {"addBatch": add, "latestOffset": 40, "walCommit": 30}
        event = batch_event(
            Q, first + k, at_ms + 2_000 * k, run_id=run_id, duration_ms=add + 100, stages=stages
        )
        write_event(engine, event)


def facts(engine, now_ms):
    with so.Session(engine) as session:
        query = session.get_one(Query, Q)
        return read_facts(session, query, latest_batch(session, Q), now_ms, Thresholds())


def test_batches_slower_than_their_trigger_are_found_with_the_stage_that_grew(engine):
    write_event(engine, started("run-1", "ProcessingTime", 2_000))
    slow_batches(engine, "run-1", 0, 6, EPOCH)
    pace = facts(engine, EPOCH + 12_000).pace
    assert pace is not None
    assert (pace.trigger, pace.interval_ms, pace.batches) == ("ProcessingTime", 2_000, 6)
    # Durations 1.1, 1.7, 2.3, 2.9, 3.5, 4.1 s: the median 2.6 s, four over 2 s.
    assert (pace.duration_ms, pace.slower, pace.behind) == (2_600, 4, True)
    assert (pace.stage, pace.stage_from_ms, pace.stage_to_ms) == ("addBatch", 1_600, 3_400)


def test_a_restart_is_judged_by_its_own_trigger_and_batches(engine):
    write_event(engine, started("run-1", "ProcessingTime", 2_000))
    slow_batches(engine, "run-1", 0, 4, EPOCH)
    # Restarted on a trigger of 10 s, which its batches keep.
    write_event(engine, started("run-2", "ProcessingTime", 10_000, at_ms=EPOCH + 9_000))
    slow_batches(engine, "run-2", 4, 3, EPOCH + 10_000)
    pace = facts(engine, EPOCH + 16_000).pace
    assert pace is not None
    assert (pace.interval_ms, pace.batches, pace.duration_ms) == (10_000, 3, 1_700)
    assert (pace.slower, pace.behind) == (0, False)


def test_a_way_in_that_cannot_tell_the_trigger_keeps_what_another_told(engine):
    write_event(engine, started("run-1", "ProcessingTime", 2_000))
    write_event(engine, started("run-1"))  # the same start, from an event log
    slow_batches(engine, "run-1", 0, 3, EPOCH)
    with so.Session(engine) as session:
        run = session.get_one(Run, "run-1")
        assert (run.trigger, run.trigger_interval_ms) == ("ProcessingTime", 2_000)


def test_without_a_known_trigger_the_durations_are_shown_and_nothing_judged(engine):
    write_event(engine, started("run-1"))
    slow_batches(engine, "run-1", 0, 4, EPOCH)
    pace = facts(engine, EPOCH + 8_000).pace
    assert pace is not None
    assert (pace.trigger, pace.duration_ms, pace.behind) == (None, 2_000, None)
    assert pace.stage == "addBatch"
