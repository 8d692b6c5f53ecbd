"""A query's backlog read from its stored batches (store.backlog): the head's arrival found by
bisection over the stored latest offsets, the rates, catch-up time and verdicts over the
window, on data whose every record's arrival is known."""

import sqlalchemy.orm as so

from monitor.health.backlog import Age, Trend, Verdict
from monitor.health.facts import Thresholds
from monitor.store.read.backlog import backlogs
from monitor.store.read.batches import batch_of, latest_batch
from monitor.store.read.read_facts import read_facts
from monitor.store.schema.models import Query
from tests.support.progress import EPOCH, QUERY, write

EVERY_S = 5
ARRIVALS_PER_S = 10


def arrival_ms(offset):
    """Record `offset` of either partition arrived at (offset + 1) tenths of a second."""
    return EPOCH + (offset + 1) * 1000 // ARRIVALS_PER_S


def read_end(t):
    """Partition 0 reads 5 records a second for 300 s, then 30 a second."""
    return 5 * t if t <= 300 else 1_500 + 30 * (t - 300)


def fill(engine, until_s):
    for k, t in enumerate(range(0, until_s + 1, EVERY_S)):
        available = ARRIVALS_PER_S * t
        write(engine, k, t, ends=[read_end(t), available], latests=[available, available])


def read(engine, batch_id, running=True):
    with so.Session(engine) as session:
        batch = batch_of(session, QUERY, batch_id)
        return backlogs(session, batch, batch.batch_time_ms, running)


def test_a_backlog_that_grows_then_drains_has_its_true_age_rates_and_catch_up(engine):
    fill(engine, 360)
    behind = read(engine, 300 // EVERY_S)
    slow, caught_up = (p.backlog for p in behind.partitions)
    assert slow.records == 1_500
    # Its head is record 1,500, which arrived at 150.1 s: it has waited 149.9 s.
    assert (slow.age_ms, slow.age) == (EPOCH + 300_000 - arrival_ms(1_500), Age.INTERPOLATED)
    assert slow.age_ms == 149_900
    assert (slow.trend, slow.verdict, slow.catch_up_ms) == (
        Trend.GROWING,
        Verdict.FALLING_BEHIND,
        None,
    )
    assert (caught_up.records, caught_up.age_ms, caught_up.verdict) == (0, 0, Verdict.OK)

    draining = read(engine, 360 // EVERY_S)
    slow = draining.partitions[0].backlog
    # A minute of draining at 30 a second against 10 arriving: 300 left, 20 a second.
    assert slow.records == 300
    assert slow.age_ms == EPOCH + 360_000 - arrival_ms(read_end(360))
    assert (slow.arrival_rate, slow.read_rate) == (10.0, 30.0)
    assert (slow.trend, slow.verdict, slow.catch_up_ms) == (
        Trend.SHRINKING,
        Verdict.CATCHING_UP,
        15_000,
    )
    query = draining.query
    assert (query.records, query.age_ms, query.catch_up_ms, query.verdict) == (
        300,
        slow.age_ms,
        15_000,
        Verdict.CATCHING_UP,
    )
    assert [p.partition for p in draining.partitions] == ["t/0", "t/1"]


def test_a_head_there_before_the_first_stored_batch_is_at_least_that_old(engine):
    write(engine, 0, 0, ends=[0], latests=[500])
    write(engine, 1, 10, ends=[0], latests=[600])
    write(engine, 2, 20, ends=[0], latests=[700])
    stuck = read(engine, 2).partitions[0].backlog
    assert (stuck.age_ms, stuck.age, stuck.verdict) == (20_000, Age.AT_LEAST, Verdict.STALLED)
    assert read(engine, 2, running=False).partitions[0].backlog.verdict is Verdict.STOPPED


def test_the_facts_the_rules_judge_carry_each_partition_s_verdict(engine):
    fill(engine, 300)
    with so.Session(engine) as session:
        query = session.get_one(Query, QUERY)
        behind = read_facts(
            session, query, latest_batch(session, QUERY), EPOCH + 300_000, Thresholds()
        )
        stopped = read_facts(
            session, query, latest_batch(session, QUERY), EPOCH + 900_000, Thresholds()
        )
    assert [(p.name, p.verdict) for p in behind.partitions] == [
        ("t/0", Verdict.FALLING_BEHIND),
        ("t/1", Verdict.OK),
    ]
    # Silent for longer than the silence threshold, the query's backlog is stopped.
    assert [p.verdict for p in stopped.partitions] == [Verdict.STOPPED, Verdict.OK]
