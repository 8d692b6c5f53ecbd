"""Each batch stored exactly once, whatever order, however often and from however many
senders it arrives; a restart supersedes only what an older run stored."""

import random
import threading

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.events import QueryStarted
from monitor.store.schema.engine import create_engine
from monitor.store.schema.models import Batch, Query, Run
from monitor.store.write.lineage import Admission, Placement, RunSpan, place
from monitor.store.write.writes import write_event, write_events
from tests.support.progress import batch_event
from tests.support.stores import stored_event_times, stored_partitions

QUERY = "44444444-4444-4444-4444-444444444444"
T0 = 1_795_316_400_000  # 2026-11-22T03:00:00Z


def batch(batch_id, run="r1", late=0, at_ms=None):
    """Batch `batch_id` of `run`: 10 records a batch from offset 10 * id, `late` of them late."""
    return batch_event(
        QUERY,
        batch_id,
        at_ms if at_ms is not None else T0 + batch_id * 1_000,
        run_id=run,
        starts=[10 * batch_id],
        ends=[10 * (batch_id + 1)],
        latests=[1_000],
        event_times={0: (10, T0, T0 + batch_id, late)},
        delay_ms=1_000,
        late_watermark_ms=T0,
    )


def stored(engine):
    """(batch id, run) of every stored batch, and whether anything is flagged rewound."""
    with so.Session(engine) as session:
        batches = session.execute(
            sa.select(Batch.batch_id, Batch.run_id).order_by(Batch.batch_id)
        ).all()
        rewound = session.scalar(sa.select(sa.func.count()).where(Batch.watermark_rewound))
    rewound += sum(row.rewound for row in stored_partitions(engine))
    return [tuple(row) for row in batches], rewound


def late_totals(engine):
    return {row.batch_id: row.late_records_total for row in stored_event_times(engine)}


def test_a_batch_that_arrives_after_a_later_one_of_its_run_deletes_nothing(engine):
    for batch_id in (0, 1, 2, 3, 5):
        write_event(engine, batch(batch_id))
    write_event(engine, batch(4))
    assert stored(engine) == ([(n, "r1") for n in range(6)], 0)
    with so.Session(engine) as session:
        assert session.get_one(Query, QUERY).last_batch_id == 5


def test_an_identical_replay_changes_nothing(engine):
    for batch_id in range(3):
        write_event(engine, batch(batch_id))
    before = stored(engine)
    assert write_event(engine, batch(0)).repeated == 1
    assert write_events(engine, [batch(2), batch(2), batch(1)]).repeated == 3
    assert stored(engine) == before == ([(0, "r1"), (1, "r1"), (2, "r1")], 0)


def test_a_late_batch_adds_itself_to_the_running_totals_of_later_ones(engine):
    write_event(engine, batch(0, late=1))
    write_event(engine, batch(2, late=4))
    write_event(engine, batch(3, late=0))
    assert late_totals(engine) == {0: 1, 2: 5, 3: 5}
    write_event(engine, batch(1, late=2))
    assert late_totals(engine) == {0: 1, 1: 3, 2: 7, 3: 7}


def test_a_restart_supersedes_the_older_runs_batches_and_its_late_ones_are_stale(engine):
    for batch_id in range(5):
        write_event(engine, batch(batch_id))
    # Restored from the checkpoint of batch 2: run r2 reads batch 3 again, a minute later,
    # from before where batch 4 had started: its partition is rewound.
    write_event(engine, batch(3, run="r2", at_ms=T0 + 60_000))
    assert stored(engine) == ([(0, "r1"), (1, "r1"), (2, "r1"), (3, "r2")], 1)
    # The old run's batches 4 and 5, delivered late, belong to the superseded lineage.
    written = write_events(engine, [batch(4), batch(5)])
    assert (written.stored, written.stale) == (0, 2)
    # Its batch 1 delivered late again is a repeat; r2 goes on.
    assert write_event(engine, batch(1)).repeated == 1
    write_event(engine, batch(4, run="r2", at_ms=T0 + 61_000))
    assert stored(engine) == ([(0, "r1"), (1, "r1"), (2, "r1"), (3, "r2"), (4, "r2")], 1)
    with so.Session(engine) as session:
        query = session.get_one(Query, QUERY)
        assert (query.run_id, query.last_batch_id) == ("r2", 4)
        spans = {
            run.run_id: (run.first_batch_id, run.last_batch_id)
            for run in session.scalars(sa.select(Run))
        }
        assert spans == {"r1": (0, 2), "r2": (3, 4)}


def test_an_older_runs_start_arriving_late_does_not_take_the_query_back(engine):
    write_event(engine, QueryStarted(QUERY, "r2", "q", T0 + 600_000))
    write_event(engine, QueryStarted(QUERY, "r1", "q", T0))
    write_event(engine, batch(0, run="r1"))
    with so.Session(engine) as session:
        assert session.get_one(Query, QUERY).run_id == "r2"


def write_busy(engine, event, attempts=5):
    """Write an event as the product's writers do: again when the store was too busy to take
    it (SQLite's lock held past its busy timeout by the others)."""
    for attempt in range(attempts):
        try:
            return write_event(engine, event)
        except sa.exc.OperationalError as error:
            if "database is locked" not in str(error) or attempt == attempts - 1:
                raise
    return None


def send_concurrently(url, groups):
    """Write each group of events from its own thread and engine, all at once."""
    engines = [create_engine(url) for _ in groups]
    start = threading.Barrier(len(groups))
    errors = []

    def send(engine, events):
        start.wait()
        try:
            for event in events:
                write_busy(engine, event)
        except Exception as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    threads = [
        threading.Thread(target=send, args=pair) for pair in zip(engines, groups, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    for engine in engines:
        engine.dispose()
    return errors


def test_one_querys_batches_from_many_senders_at_once_are_each_stored_once(database_url):
    """Twenty senders post one query's batches, each in its own order, some twice."""
    events = [batch(n) for n in range(60)]
    order = random.Random(25)
    groups = [order.sample(events, 12) for _ in range(20)]
    posted = {event.batch_id for group in groups for event in group}
    assert send_concurrently(database_url, groups) == []
    engine = create_engine(database_url)
    assert stored(engine) == ([(n, "r1") for n in sorted(posted)], 0)
    totals = late_totals(engine)
    assert sorted(totals) == sorted(posted)
    engine.dispose()


@pytest.mark.parametrize(
    ("run", "others", "batch_id", "expected"),
    [
        (RunSpan("r1", 10, 10, 0, 4), [], 5, Placement(Admission.STORE)),
        (RunSpan("r1", 10, 10, 0, 4), [], 3, Placement(Admission.STORE_UNLESS_STORED)),
        (RunSpan("r1", 10, 10, 0, 4), [RunSpan("r2", 20, 20, 3, 6)], 5, Placement(Admission.STALE)),
        (
            RunSpan("r1", 10, 10, 0, 4),
            [RunSpan("r2", 20, 20, 3, 6)],
            1,
            Placement(Admission.STORE_UNLESS_STORED),
        ),
        (
            RunSpan("r2", 20, 20, None, None),
            [RunSpan("r1", 10, 10, 0, 4)],
            3,
            Placement(Admission.STORE, ("r1",)),
        ),
        (
            RunSpan("r2", 20, 20, None, None),
            [RunSpan("r1", 10, 10, 0, 4)],
            5,
            Placement(Admission.STORE),
        ),
        (
            RunSpan("r2", 20, 20, None, None),
            [RunSpan("r1", 10, 10, None, None)],
            0,
            Placement(Admission.STORE),
        ),
        (
            RunSpan("b", 10, 10, None, None),
            [RunSpan("a", 10, 10, 0, 4)],
            2,
            Placement(Admission.STORE, ("a",)),
        ),
        # r2 restarted on a host whose clock is 30 s behind r1's: heard of later, it is newer.
        (
            RunSpan("r2", 5_000, 90_000, None, None),
            [RunSpan("r1", 35_000, 40_000, 0, 4)],
            3,
            Placement(Admission.STORE, ("r1",)),
        ),
        (
            RunSpan("r1", 0, 90_000, 0, 4),
            [RunSpan("r2", 86_400_000, 40_000, 3, 9)],
            5,
            Placement(Admission.STALE),
        ),
    ],
    ids=[
        "next-in-its-run",
        "inside-its-run",
        "above-a-later-runs-start",
        "below-a-later-runs-start",
        "restart-below-an-older-run",
        "restart-after-an-older-run",
        "older-run-with-nothing-stored",
        "same-start-the-run-id-decides",
        "clocks-skewed-within-a-minute-arrival-decides",
        "clocks-a-day-apart-they-decide",
    ],
)
def test_where_a_batch_belongs(run, others, batch_id, expected):
    assert place(run, others, batch_id) == expected
