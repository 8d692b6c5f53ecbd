"""History retention on SQLite and PostgreSQL: what goes, what stays, in short transactions."""

import itertools
import re
import threading
import time

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.alerts.rules import RULES
from monitor.store.schema.engine import create_engine
from monitor.store.schema.models import (
    AlertEvent,
    AlertRow,
    Batch,
    BatchEventTimes,
    BatchOffsets,
    Delivery,
    DeliveryAttempt,
    PartitionHour,
    PartitionMinute,
    Query,
    Run,
    Silence,
    Source,
    StateOperator,
    TimerSnapshotRow,
)
from monitor.store.tiers.day_partitions import AHEAD_DAYS, day_of, partition_name
from monitor.store.tiers.prune import MAX_PAUSE_S, TABLES, Cutoffs, prune
from tests.support.bulk_history import fill
from tests.support.retention import CUTOFF, DAY, NEW, NOW, OLD, write_batch, write_snapshot
from tests.support.stores import stored_event_times
from tests.support.waiting import wait_until
from wmon.main import main

BATCH_TABLES = (Batch, StateOperator, Source, BatchOffsets, BatchEventTimes)
BATCH_TABLE_NAMES = [table.__tablename__ for table in BATCH_TABLES]
ALERT_TABLES = ("alerts", "alert_events", "deliveries", "delivery_attempts")
NOTHING = dict.fromkeys(TABLES, 0)
ONLY_SQLITE = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
ONLY_POSTGRESQL = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)


def by_day(engine):
    """Whether the store's batches expire by whole days (PostgreSQL's: store.day_partitions)."""
    return engine.dialect.name == "postgresql"


def start_of_day(time_ms):
    return time_ms - time_ms % DAY


def alert_counts(alerts, events, deliveries, attempts):
    """Rows in each alert table."""
    return dict(zip(ALERT_TABLES, [alerts, events, deliveries, attempts], strict=True))


# An alert as write_alert stores it. Resolved: pending, firing and resolved events, the two
# last notified to one receiver, one attempt each. Cancelled: pending and cancelled events,
# never notified.
RESOLVED_ALERT_ROWS = alert_counts(1, 3, 2, 2)
CANCELLED_ALERT_ROWS = alert_counts(1, 2, 0, 0)
NO_ROWS = alert_counts(0, 0, 0, 0)


def batch_ids(engine, query_id):
    """The batch ids left in each table keyed by (query, batch)."""
    with engine.connect() as connection:
        return {
            table.__tablename__: sorted(
                set(connection.scalars(sa.select(table.batch_id).where(table.query_id == query_id)))
            )
            for table in BATCH_TABLES
        }


def snapshot_times(engine, query_id):
    with engine.connect() as connection:
        statement = sa.select(TimerSnapshotRow.taken_at_ms).where(
            TimerSnapshotRow.query_id == query_id
        )
        return sorted(connection.scalars(statement))


def count(engine, table):
    with engine.connect() as connection:
        return connection.scalar(sa.select(sa.func.count()).select_from(table))


# One alert per rule and query may be live: the alerts written one after another are each of
# another rule.
RULE_NAMES = itertools.cycle(sorted(RULES))
TRANSITIONS = {
    "pending": ["pending"],
    "firing": ["pending", "firing"],
    "resolved": ["pending", "firing", "resolved"],
    "cancelled": ["pending", "cancelled"],
}


def write_alert(engine, state, ended_ms=None, outcome="delivered"):
    """An alert of query q in `state`, of the next rule, a minute per transition
    up to `ended_ms` (or OLD); each notified transition (firing, resolved) has a delivery to
    one receiver with one attempt; the last one's is `outcome` ('delivered', 'abandoned' or
    'queued': failed, to be retried), the ones before it delivered."""
    transitions = TRANSITIONS[state]
    start_ms = (ended_ms or OLD) - 60_000 * len(transitions)
    with so.Session(engine) as session:
        if session.get(Query, "q") is None:
            session.add(Query(id="q", run_id="run-1", status="active", updated_at_ms=OLD))
            session.flush()
        alert = AlertRow(
            rule=next(RULE_NAMES),
            query_id="q",
            partitions=["t/1"],
            held_at_ms=ended_ms or OLD,
            severity="warning",
            state=state,
            active_since_ms=start_ms,
            resolved_at_ms=ended_ms,
            message="stalled",
        )
        session.add(alert)
        session.flush()
        for n, transition in enumerate(transitions, start=1):
            at_ms = start_ms + 60_000 * n
            event = AlertEvent(alert_id=alert.id, transition=transition, at_ms=at_ms, message="")
            session.add(event)
            if transition in ("firing", "resolved"):
                session.flush()
                last = n == len(transitions)
                write_delivery(session, event.id, at_ms, outcome if last else "delivered")
        session.commit()
        return alert.id


def write_delivery(session, event_id, at_ms, outcome):
    delivery = Delivery(
        alert_event_id=event_id,
        receiver="ops",
        created_at_ms=at_ms,
        attempts=1,
        next_attempt_at_ms=at_ms + 1_000,
        delivered_at_ms=at_ms if outcome == "delivered" else None,
        abandoned_at_ms=at_ms if outcome == "abandoned" else None,
    )
    session.add(delivery)
    session.flush()
    ok = outcome == "delivered"
    session.add(
        DeliveryAttempt(
            delivery_id=delivery.id,
            at_ms=at_ms,
            duration_ms=5,
            ok=ok,
            status_code=200 if ok else 503,
        )
    )


def alert_rows(engine, alert_id):
    """How many rows of the alert are left in each alert table."""
    events = sa.select(AlertEvent.id).where(AlertEvent.alert_id == alert_id)
    deliveries = sa.select(Delivery.id).where(Delivery.alert_event_id.in_(events))
    statements = [
        sa.select(AlertRow).where(AlertRow.id == alert_id),
        events,
        deliveries,
        sa.select(DeliveryAttempt).where(DeliveryAttempt.delivery_id.in_(deliveries)),
    ]
    with engine.connect() as connection:
        return {
            table: connection.scalar(sa.select(sa.func.count()).select_from(statement.subquery()))
            for table, statement in zip(ALERT_TABLES, statements, strict=True)
        }


def minutes(engine, query_id):
    """The minutes of the query's partitions' rollup rows left, a row per minute."""
    with engine.connect() as connection:
        return sorted(
            connection.scalars(
                sa.select(PartitionMinute.minute_ms).where(PartitionMinute.query_id == query_id)
            )
        )


def hours(engine, query_id):
    """The hours of the query's partitions' hourly rollup rows left, a row per hour."""
    with engine.connect() as connection:
        return sorted(
            connection.scalars(
                sa.select(PartitionHour.hour_ms).where(PartitionHour.query_id == query_id)
            )
        )


def write_silence(engine, until_ms):
    with so.Session(engine) as session:
        session.add(Silence(rule="partition_stalled", created_at_ms=OLD - DAY, until_ms=until_ms))
        session.commit()


def test_rows_before_the_cutoff_go_and_the_rest_stay(engine):
    for batch_id, at_ms in enumerate([OLD, OLD + 1_000, CUTOFF - 1, CUTOFF, NEW]):
        write_batch(engine, "q", batch_id, at_ms)
    for at_ms in (OLD, CUTOFF - 1, CUTOFF, NEW):
        write_snapshot(engine, "q", at_ms)

    pruned = prune(engine, Cutoffs.at(CUTOFF))

    # PostgreSQL drops the days that ended before the cutoff: CUTOFF - 1 is on the cutoff's day.
    batches, kept_from = (2, start_of_day(CUTOFF)) if by_day(engine) else (3, CUTOFF)
    assert pruned.deleted == NOTHING | dict.fromkeys(BATCH_TABLE_NAMES, batches) | {
        "partition_minutes": 2,
        "partition_hours": 2,
        "query_minutes": 2,
        "query_hours": 2,
        "timer_snapshots": 2,
    }
    assert batch_ids(engine, "q") == dict.fromkeys(BATCH_TABLE_NAMES, list(range(batches, 5)))
    assert minutes(engine, "q") == [CUTOFF, NEW], "minutes from the cutoff on stay"
    assert hours(engine, "q") == [CUTOFF, NEW], "so do hours"
    assert snapshot_times(engine, "q") == [CUTOFF, NEW]
    assert (count(engine, Query), count(engine, Run)) == (1, 1)
    with so.Session(engine) as session:
        query = session.get(Query, "q")
        assert (query.batches_kept_from_ms, query.minutes_kept_from_ms) == (kept_from, CUTOFF)


def test_pruning_again_deletes_nothing(engine):
    for batch_id in range(3):
        write_batch(engine, "q", batch_id, OLD + batch_id * 1_000)
    write_batch(engine, "q", 3, NEW)
    first = prune(engine, Cutoffs.at(CUTOFF))
    again = prune(engine, Cutoffs.at(CUTOFF))
    assert first.deleted["batches"] == 3
    assert again.deleted == NOTHING and again.total == 0
    assert batch_ids(engine, "q")["batches"] == [3]


def test_a_query_keeps_its_newest_batch_and_timer_snapshot(engine):
    for batch_id in range(3):
        write_batch(engine, "stopped", batch_id, OLD + batch_id * 1_000, late=2)
    write_snapshot(engine, "stopped", OLD)
    write_snapshot(engine, "stopped", OLD + 1_000)
    write_batch(engine, "busy", 0, OLD)
    write_batch(engine, "busy", 1, NEW)
    queries_and_runs = (count(engine, Query), count(engine, Run))

    prune(engine, Cutoffs.at(CUTOFF))

    assert batch_ids(engine, "stopped") == dict.fromkeys(BATCH_TABLE_NAMES, [2])
    assert snapshot_times(engine, "stopped") == [OLD + 1_000]
    assert batch_ids(engine, "busy") == dict.fromkeys(BATCH_TABLE_NAMES, [1])
    assert (count(engine, Query), count(engine, Run)) == queries_and_runs


def test_batches_stored_within_the_retention_go_once_stored_before_it(engine):
    # A driver three years behind, its batches stored now: kept (on PostgreSQL beside their
    # dropped day) with their rollups while they were stored after the cutoff, then gone.
    now = time.time_ns() // 1_000_000
    behind = now - 3 * 365 * DAY
    for batch_id in range(3):
        write_batch(engine, "behind", batch_id, behind + batch_id * 1_000)
    with engine.begin() as connection:
        connection.execute(sa.update(Batch).values(stored_at_ms=now))
    before = (batch_ids(engine, "behind"), minutes(engine, "behind"), hours(engine, "behind"))

    kept = prune(engine, Cutoffs(now - DAY, now - DAY, now - DAY, stored_ms=now - DAY))
    assert (batch_ids(engine, "behind"), minutes(engine, "behind"), hours(engine, "behind")) == (
        before
    )
    assert kept.deleted["batches"] == 0 and kept.deleted["partition_minutes"] == 0

    prune(engine, Cutoffs(now - DAY, now - DAY, now - DAY, stored_ms=now + 1))
    assert batch_ids(engine, "behind") == dict.fromkeys(BATCH_TABLE_NAMES, [2])
    assert (minutes(engine, "behind"), hours(engine, "behind")) == ([], [])


def partitions_of(engine, table):
    """The names of a PostgreSQL table's partitions."""
    with engine.connect() as connection:
        return set(
            connection.scalars(
                sa.text(
                    "SELECT child.relname FROM pg_inherits "
                    "JOIN pg_class child ON child.oid = pg_inherits.inhrelid "
                    "JOIN pg_class parent ON parent.oid = pg_inherits.inhparent "
                    "WHERE parent.relname = :table"
                ),
                {"table": table},
            )
        )


def kept_batches(engine):
    with engine.connect() as connection:
        return sorted(connection.execute(sa.text("SELECT query_id, batch_id FROM batches_kept")))


@ONLY_POSTGRESQL
def test_expiry_drops_partitions_on_postgresql_and_leaves_the_newest_batch_of_every_query(
    engine,
):
    # Days the store had no partition for: the write path makes them.
    for batch_id, at_ms in enumerate([OLD - 2 * DAY, OLD - DAY, OLD, NEW]):
        write_batch(engine, "busy", batch_id, at_ms)
    for batch_id in range(3):
        write_batch(engine, "stopped", batch_id, OLD - DAY + batch_id * 1_000, late=2)
    old_days = [day_of(OLD - 2 * DAY), day_of(OLD - DAY), day_of(OLD)]
    assert all(
        partition_name("batches", day) in partitions_of(engine, "batches") for day in old_days
    )

    pruned = prune(engine, Cutoffs.at(CUTOFF))

    assert {table: pruned.deleted[table] for table in BATCH_TABLE_NAMES} == dict.fromkeys(
        BATCH_TABLE_NAMES, 5
    )
    today = day_of(time.time_ns() // 1_000_000)
    for table in BATCH_TABLE_NAMES:
        partitions = partitions_of(engine, table)
        assert not {partition_name(table, day) for day in old_days} & partitions
        ahead = {partition_name(table, day) for day in range(today, today + AHEAD_DAYS + 1)}
        assert {partition_name(table, day_of(NEW)), f"{table}_kept", *ahead} <= partitions
    assert batch_ids(engine, "busy") == dict.fromkeys(BATCH_TABLE_NAMES, [3])
    assert batch_ids(engine, "stopped") == dict.fromkeys(BATCH_TABLE_NAMES, [2])
    assert kept_batches(engine) == [("stopped", 2)]
    with so.Session(engine) as session:
        kept_from = {
            query.id: query.batches_kept_from_ms for query in session.scalars(sa.select(Query))
        }
    assert kept_from == dict.fromkeys(["busy", "stopped"], start_of_day(CUTOFF))

    # The kept batch carries the running figures on, and goes once a newer one is stored.
    write_batch(engine, "stopped", 3, NEW, late=1)
    [total] = [
        row.late_records_total
        for row in stored_event_times(engine, "stopped")
        if (row.batch_id, row.partition) == (3, "t/0")
    ]
    assert total == 2 * 3 + 1
    again = prune(engine, Cutoffs.at(CUTOFF))
    assert {table: again.deleted[table] for table in BATCH_TABLE_NAMES} == dict.fromkeys(
        BATCH_TABLE_NAMES, 1
    )
    assert batch_ids(engine, "stopped") == dict.fromkeys(BATCH_TABLE_NAMES, [3])
    assert kept_batches(engine) == []


def detach_interrupted(engine, table, day):
    """Leave `table`'s partition for `day` pending detach, as an expiry stopped while it waited
    for a reader of the table leaves it."""
    name = partition_name(table, day)
    detacher = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    pid = detacher.scalar(sa.text("SELECT pg_backend_pid()"))
    with engine.begin() as reader:
        reader.execute(sa.text(f"SELECT count(*) FROM {table}"))
        failed = []

        def detach():
            try:
                detacher.exec_driver_sql(
                    f"ALTER TABLE {table} DETACH PARTITION {name} CONCURRENTLY"
                )
            except sa.exc.OperationalError as error:
                failed.append(error)

        thread = threading.Thread(target=detach)
        thread.start()
        wait_until(lambda: waiting_for_lock(engine, pid), 10, "the detach to wait for the reader")
        reader.execute(sa.text("SELECT pg_cancel_backend(:pid)"), {"pid": pid})
        thread.join(timeout=10)
    detacher.close()
    assert failed and detaching(engine, name)


def waiting_for_lock(engine, pid):
    with engine.connect() as connection:
        statement = "SELECT wait_event_type FROM pg_stat_activity WHERE pid = :pid"
        return connection.scalar(sa.text(statement), {"pid": pid}) == "Lock"


def detaching(engine, name):
    """Whether the partition `name` is pending detach."""
    with engine.connect() as connection:
        statement = "SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = to_regclass(:name)"
        return connection.scalar(sa.text(statement), {"name": name})


@ONLY_POSTGRESQL
def test_a_batch_into_a_day_whose_expiry_was_interrupted_is_stored(engine):
    write_batch(engine, "q", 0, OLD)
    detach_interrupted(engine, "sources", day_of(OLD))

    write_batch(engine, "q", 1, OLD + 1_000)

    # The partition detaching went as its expiry would have had it, and the day was made again.
    assert detaching(engine, partition_name("sources", day_of(OLD))) is False
    assert batch_ids(engine, "q") == dict.fromkeys(BATCH_TABLE_NAMES, [0, 1]) | {"sources": [1]}
    prune(engine, Cutoffs.at(CUTOFF))
    assert batch_ids(engine, "q") == dict.fromkeys(BATCH_TABLE_NAMES, [1])


def test_a_batch_after_pruning_continues_the_running_figures(engine):
    for batch_id in range(3):
        write_batch(engine, "q", batch_id, OLD + batch_id * 1_000, late=2)
    prune(engine, Cutoffs.at(CUTOFF))
    write_batch(engine, "q", 3, NEW, late=1)
    [total] = [
        row.late_records_total
        for row in stored_event_times(engine)
        if (row.batch_id, row.partition) == (3, "t/0")
    ]
    assert total == 2 * 3 + 1


@ONLY_SQLITE
def test_each_transaction_deletes_one_chunk(engine):
    fill(engine, "q", OLD, batches=100, partitions=4)
    fill(engine, "q", NEW, batches=1, partitions=4, first_batch=100)
    commits = []
    sa.event.listen(engine, "commit", lambda _connection: commits.append(1))
    left, pauses = [], []

    def between_transactions(seconds):
        pauses.append(seconds)
        left.append(count(engine, Batch))

    pruned = prune(engine, Cutoffs.at(CUTOFF), chunk=10, sleep=between_transactions)

    # Ten full chunks; the eleventh finds less than a chunk, so batches are done; then the two
    # minutes and the hour they were in, of the partitions and of the query, timer snapshots,
    # alerts and silences, one transaction each.
    assert left == [91, 81, 71, 61, 51, 41, 31, 21, 11, 1, 1, 1, 1, 1, 1, 1, 1, 1]
    assert pruned.transactions == len(commits) == 18
    assert (pruned.deleted["partition_minutes"], pruned.deleted["partition_hours"]) == (2, 1)
    assert (pruned.deleted["query_minutes"], pruned.deleted["query_hours"]) == (2, 1)
    assert (pruned.deleted["batch_offsets"], pruned.deleted["batch_event_times"]) == (100, 100)
    assert all(0 <= pause <= MAX_PAUSE_S for pause in pauses)


# A backfill writing batches dated before the cutoff as fast as a prune deletes them: before a
# prune deleted only what was stored when it began, it went on as long as they came.
@ONLY_SQLITE
def test_a_prune_ends_however_fast_batches_dated_before_the_cutoff_arrive(engine):
    for batch_id in range(3):
        write_batch(engine, "q", batch_id, OLD + batch_id * 1_000)
    arriving = iter(range(3, 53))

    def two_batches_arrive(_seconds):
        for batch_id in itertools.islice(arriving, 2):
            write_batch(engine, "q", batch_id, OLD + batch_id * 1_000)

    prune(engine, Cutoffs.at(CUTOFF), chunk=2, sleep=two_batches_arrive)

    arrived = batch_ids(engine, "q")["batches"]
    assert arrived[0] == 3 and arrived == list(range(3, arrived[-1] + 1)), arrived


def batches_of(engine, query_id):
    with engine.connect() as connection:
        return connection.scalar(
            sa.select(sa.func.count()).select_from(Batch).where(Batch.query_id == query_id)
        )


@ONLY_SQLITE
def test_writers_go_on_between_the_transactions_of_a_long_prune(engine, database_url):
    fill(engine, "old", OLD, batches=1_500, partitions=64)
    writer = create_engine(database_url)
    done, written = threading.Event(), []

    def write_live_batches():
        while not done.is_set():
            write_batch(writer, "live", len(written), NEW + len(written) * 1_000)
            written.append(1)
            time.sleep(0.02)

    pauses = []

    def between_transactions(seconds):
        pauses.append((batches_of(engine, "old"), len(written)))
        time.sleep(seconds)

    thread = threading.Thread(target=write_live_batches)
    thread.start()
    wait_until(lambda: written, 30, "the first live batch")
    pruned = prune(engine, Cutoffs.at(CUTOFF), sleep=between_transactions)
    done.set()
    thread.join(timeout=30)
    writer.dispose()

    assert pruned.deleted["batch_offsets"] == 1_499
    # The live batches stored by each pause while old batches were still being deleted (32 a
    # transaction): they went in between those transactions, not only before or after them.
    # How long they waited is the benchmarks' to measure (docs/benchmarks.md).
    stored = [count for left, count in pauses if left > 1]
    assert sum(after > before for before, after in itertools.pairwise(stored)) >= 5, stored
    assert batch_ids(engine, "live")["batches"] == list(range(len(written)))


def test_alerts_that_ended_before_the_cutoff_go_with_all_their_rows(engine):
    gone = [
        write_alert(engine, "resolved", OLD),
        write_alert(engine, "resolved", CUTOFF - 1),
        write_alert(engine, "resolved", OLD, outcome="abandoned"),
        write_alert(engine, "cancelled", OLD),
    ]
    kept = {
        write_alert(engine, "resolved", CUTOFF): RESOLVED_ALERT_ROWS,
        write_alert(engine, "resolved", NEW): RESOLVED_ALERT_ROWS,
        write_alert(engine, "cancelled", NEW): CANCELLED_ALERT_ROWS,
    }

    pruned = prune(engine, Cutoffs.at(CUTOFF))

    # Three resolved alerts (3 events, 2 deliveries, 2 attempts each) and a cancelled one.
    assert pruned.deleted == NOTHING | alert_counts(4, 3 * 3 + 2, 3 * 2, 3 * 2)
    assert [alert_rows(engine, alert_id) for alert_id in gone] == [NO_ROWS] * 4
    assert {alert_id: alert_rows(engine, alert_id) for alert_id in kept} == kept
    assert prune(engine, Cutoffs.at(CUTOFF)).deleted == NOTHING


def test_live_alerts_stay_with_all_their_rows_however_old(engine):
    pending = write_alert(engine, "pending")
    firing = write_alert(engine, "firing")
    # Even one whose row says it was resolved long ago, should a writer ever leave one so.
    odd = write_alert(engine, "firing")
    with engine.begin() as connection:
        connection.execute(sa.update(AlertRow).where(AlertRow.id == odd).values(resolved_at_ms=OLD))

    pruned = prune(engine, Cutoffs.at(OLD + 100 * DAY))

    assert pruned.deleted == NOTHING
    assert alert_rows(engine, pending) == alert_counts(1, 1, 0, 0)
    assert alert_rows(engine, firing) == alert_rows(engine, odd) == alert_counts(1, 2, 1, 1)


@pytest.mark.parametrize("done", ["delivered_at_ms", "abandoned_at_ms"])
def test_an_old_alert_whose_notification_is_queued_stays_until_it_is_done(engine, done):
    queued = write_alert(engine, "resolved", OLD, outcome="queued")
    delivered = write_alert(engine, "resolved", OLD)

    assert prune(engine, Cutoffs.at(CUTOFF)).deleted["alerts"] == 1
    assert alert_rows(engine, queued) == RESOLVED_ALERT_ROWS
    assert alert_rows(engine, delivered) == NO_ROWS

    undone = sa.and_(Delivery.delivered_at_ms.is_(None), Delivery.abandoned_at_ms.is_(None))
    with engine.begin() as connection:
        assert (
            connection.execute(sa.update(Delivery).where(undone).values({done: NEW})).rowcount == 1
        )
    assert prune(engine, Cutoffs.at(CUTOFF)).deleted == NOTHING | RESOLVED_ALERT_ROWS
    assert alert_rows(engine, queued) == NO_ROWS


def test_silences_that_ended_before_the_cutoff_go(engine):
    for until_ms in (OLD, CUTOFF - 1, CUTOFF, NEW, NOW + DAY):
        write_silence(engine, until_ms)

    assert prune(engine, Cutoffs.at(CUTOFF)).deleted == NOTHING | {"silences": 2}
    with engine.connect() as connection:
        left = sorted(connection.scalars(sa.select(Silence.until_ms)))
    assert left == [CUTOFF, NEW, NOW + DAY]


def test_alerts_and_silences_go_one_chunk_per_transaction(engine):
    for n in range(25):
        write_alert(engine, "resolved", OLD + n)
    write_alert(engine, "firing")
    for n in range(12):
        write_silence(engine, OLD + n)
    commits = []
    sa.event.listen(engine, "commit", lambda _connection: commits.append(1))
    left = []

    def between_transactions(_seconds):
        left.append((count(engine, AlertRow), count(engine, Silence)))

    pruned = prune(engine, Cutoffs.at(CUTOFF), chunk=10, sleep=between_transactions)

    # Query q's batches, its four tiers of rollups and timer snapshots (none), then 10, 10 and
    # 5 alerts, 10 and 2 silences. On PostgreSQL batches go by day, without pauses: the days
    # ahead made, no day dropped, no kept batch.
    per_query = 5 if by_day(engine) else 6
    assert left == [(26, 12)] * per_query + [(16, 12), (6, 12), (1, 12), (1, 2), (1, 0)]
    assert pruned.transactions == len(commits) == (12 if by_day(engine) else 11)
    assert pruned.deleted == NOTHING | {
        table: 25 * rows for table, rows in RESOLVED_ALERT_ROWS.items()
    } | {"silences": 12}


def test_wmon_prune_prints_what_it_deleted(database_url, engine, capsys, monkeypatch):
    for tier in ("BATCHES_HOURS", "DAYS", "HOURS_DAYS"):
        monkeypatch.delenv(f"WMON_RETENTION_{tier}", raising=False)
    now = time.time_ns() // 1_000_000
    for batch_id, days_ago in enumerate([40, 20, 0]):
        write_batch(engine, "q", batch_id, now - days_ago * DAY)
    write_alert(engine, "resolved", now - 40 * DAY)
    write_silence(engine, now - 40 * DAY)

    assert main(["prune", "--database-url", database_url]) == 0
    printed = capsys.readouterr().out.splitlines()
    (header, *tiers, blank), lines = printed[:5], printed[5:]
    # PostgreSQL: the days ahead made, the two old days dropped, no kept batch to drop.
    transactions = 11 if by_day(engine) else 8
    assert re.fullmatch(rf"store \S+: pruned in {transactions} transactions", header)
    assert blank == ""
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"
    for line, kept in zip(tiers, ("48 hours", "30 days", "400 days"), strict=True):
        assert re.fullmatch(rf"  \w+ +before {stamp} \({kept} kept\)", line), line
    deleted = {line.split()[0]: int(line.split()[1]) for line in lines}
    assert list(deleted) == list(TABLES)
    # Both older batches (two days are kept), the 40-day-old minute of the query and of its
    # partitions (a row each; 30 days are kept), no hour (400 days are).
    assert deleted == NOTHING | dict(zip(BATCH_TABLE_NAMES, [2, 2, 2, 2, 2], strict=True)) | (
        RESOLVED_ALERT_ROWS | {"silences": 1, "partition_minutes": 1, "query_minutes": 1}
    )
    assert batch_ids(engine, "q")["batches"] == [2]

    args = ["--batches-hours", "100", "--days", "3", "--hours-days", "2"]
    assert main(["prune", *args, "--database-url", database_url]) == 0
    out = capsys.readouterr().out
    # A finer tier is kept no longer than the minutes, the hours no shorter.
    assert "(72 hours kept)" in out and out.count("(3 days kept)") == 2
    assert len(hours(engine, "q")) == 1, "the 20-day-old hour goes, the newest stays"


def test_wmon_prune_wants_at_least_a_day(database_url, capsys):
    with pytest.raises(SystemExit) as exit_status:
        main(["prune", "--days", "0", "--database-url", database_url])
    assert exit_status.value.code == 2
    assert "--days: must be between 1 and 36500, not 0" in capsys.readouterr().err
