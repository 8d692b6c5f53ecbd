"""History retention on SQLite and PostgreSQL: what goes, what stays, in short transactions."""

import re
import threading
import time

import pytest
import sqlalchemy as sa

from monitor.cli import main
from monitor.events import TimerSnapshot
from monitor.store.engine import create_engine
from monitor.store.models import (
    Batch,
    Partition,
    PartitionEventTime,
    Query,
    Run,
    Source,
    StateOperator,
    TimerSnapshotRow,
)
from monitor.store.prune import MAX_PAUSE_S, TABLES, cutoff_ms, prune
from monitor.store.synthetic import fill
from monitor.store.writes import write_event
from tests.web_events import batch_event

DAY = 86_400_000
NOW = 1_795_316_400_000
CUTOFF = cutoff_ms(30, NOW)
OLD = CUTOFF - DAY
NEW = CUTOFF + DAY
BATCH_TABLES = (Batch, StateOperator, Source, Partition, PartitionEventTime)


def write_batch(engine, query_id, batch_id, at_ms, late=0):
    """A batch with one operator, one source, two partitions and their event times."""
    event_times = {0: (5, at_ms - 3_000, at_ms - 1_000, late), 1: (5, at_ms - 4_000, at_ms, 0)}
    ends = (10 * batch_id, 10 * batch_id)
    event = batch_event(query_id, batch_id, at_ms, ends=ends, dropped=1, event_times=event_times)
    write_event(engine, event)


def write_snapshot(engine, query_id, at_ms):
    write_event(engine, TimerSnapshot(query_id, "run-1", at_ms, None, 3, None, 60_000, 0))


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


def test_rows_before_the_cutoff_go_and_the_rest_stay(engine):
    for batch_id, at_ms in enumerate([OLD, OLD + 1_000, CUTOFF - 1, CUTOFF, NEW]):
        write_batch(engine, "q", batch_id, at_ms)
    for at_ms in (OLD, CUTOFF - 1, CUTOFF, NEW):
        write_snapshot(engine, "q", at_ms)

    pruned = prune(engine, CUTOFF)

    assert pruned.deleted == {
        "batches": 3,
        "state_operators": 3,
        "sources": 3,
        "partitions": 6,
        "partition_event_times": 6,
        "timer_snapshots": 2,
    }
    assert batch_ids(engine, "q") == dict.fromkeys(TABLES[:-1], [3, 4])
    assert snapshot_times(engine, "q") == [CUTOFF, NEW]
    assert (count(engine, Query), count(engine, Run)) == (1, 1)


def test_pruning_again_deletes_nothing(engine):
    for batch_id in range(3):
        write_batch(engine, "q", batch_id, OLD + batch_id * 1_000)
    write_batch(engine, "q", 3, NEW)
    first = prune(engine, CUTOFF)
    again = prune(engine, CUTOFF)
    assert first.deleted["batches"] == 3
    assert again.deleted == dict.fromkeys(TABLES, 0) and again.total == 0
    assert batch_ids(engine, "q")["batches"] == [3]


def test_a_query_keeps_its_newest_batch_and_timer_snapshot(engine):
    for batch_id in range(3):
        write_batch(engine, "stopped", batch_id, OLD + batch_id * 1_000, late=2)
    write_snapshot(engine, "stopped", OLD)
    write_snapshot(engine, "stopped", OLD + 1_000)
    write_batch(engine, "busy", 0, OLD)
    write_batch(engine, "busy", 1, NEW)
    queries_and_runs = (count(engine, Query), count(engine, Run))

    prune(engine, CUTOFF)

    assert batch_ids(engine, "stopped") == dict.fromkeys(TABLES[:-1], [2])
    assert snapshot_times(engine, "stopped") == [OLD + 1_000]
    assert batch_ids(engine, "busy") == dict.fromkeys(TABLES[:-1], [1])
    assert (count(engine, Query), count(engine, Run)) == queries_and_runs


def test_a_batch_after_pruning_continues_the_running_figures(engine):
    for batch_id in range(3):
        write_batch(engine, "q", batch_id, OLD + batch_id * 1_000, late=2)
    prune(engine, CUTOFF)
    write_batch(engine, "q", 3, NEW, late=1)
    with engine.connect() as connection:
        total = connection.scalar(
            sa.select(PartitionEventTime.late_records_total).where(
                PartitionEventTime.batch_id == 3, PartitionEventTime.partition == "t/0"
            )
        )
    assert total == 2 * 3 + 1


def test_each_transaction_deletes_one_chunk(engine):
    fill(engine, "q", OLD, batches=100, partitions=4)
    fill(engine, "q", NEW, batches=1, partitions=4, first_batch=100)
    commits = []
    sa.event.listen(engine, "commit", lambda _connection: commits.append(1))
    left, pauses = [], []

    def between_transactions(seconds):
        pauses.append(seconds)
        left.append(count(engine, Batch))

    pruned = prune(engine, CUTOFF, chunk=10, sleep=between_transactions)

    # Ten full chunks; the eleventh finds less than a chunk, so batches are done; then timers.
    assert left == [91, 81, 71, 61, 51, 41, 31, 21, 11, 1, 1, 1]
    assert pruned.transactions == len(commits) == 12
    assert pruned.deleted["partitions"] == pruned.deleted["partition_event_times"] == 400
    assert all(0 <= pause <= MAX_PAUSE_S for pause in pauses)


def test_writers_are_not_held_up_by_a_long_prune(engine, database_url):
    fill(engine, "old", OLD, batches=1_500, partitions=64)
    writer = create_engine(database_url)
    done = threading.Event()
    writes = []

    def write_live_batches():
        batch_id = 0
        while not done.is_set():
            started = time.monotonic()
            write_batch(writer, "live", batch_id, NEW + batch_id * 1_000)
            writes.append((started, time.monotonic()))
            batch_id += 1
            time.sleep(0.02)

    thread = threading.Thread(target=write_live_batches)
    thread.start()
    time.sleep(0.2)
    prune_started = time.monotonic()
    pruned = prune(engine, CUTOFF)
    prune_ended = time.monotonic()
    done.set()
    thread.join(timeout=30)
    writer.dispose()

    assert pruned.deleted["partitions"] == 1_499 * 64
    during = [end for start, end in writes if prune_started < start and end < prune_ended]
    slowest = max(end - start for start, end in writes)
    # Writes went on while the prune ran, each waiting for one short transaction at most: in
    # one transaction (about 0.5 s here) the prune would hold a SQLite writer for most of it.
    assert len(during) >= 5
    assert slowest < min(1.0, (prune_ended - prune_started) / 4), (slowest, len(during))
    assert batch_ids(engine, "live")["batches"] == list(range(len(writes)))


def test_wmon_prune_prints_what_it_deleted(database_url, engine, capsys, monkeypatch):
    monkeypatch.delenv("WMON_RETENTION_DAYS", raising=False)
    now = time.time_ns() // 1_000_000
    for batch_id, days_ago in enumerate([40, 20, 0]):
        write_batch(engine, "q", batch_id, now - days_ago * DAY)

    assert main(["prune", "--database-url", database_url]) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(
        r"store \S+: pruned history before \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC "
        r"\(30 days kept\) in 2 transactions",
        header,
    )
    deleted = {line.split()[0]: int(line.split()[1]) for line in lines}
    assert deleted == dict(zip(TABLES, [1, 1, 1, 2, 2, 0], strict=True))

    assert main(["prune", "--days", "10", "--database-url", database_url]) == 0
    assert "(10 days kept)" in capsys.readouterr().out
    assert batch_ids(engine, "q")["batches"] == [2]


def test_wmon_prune_wants_at_least_a_day(database_url, capsys):
    with pytest.raises(SystemExit) as exit_status:
        main(["prune", "--days", "0", "--database-url", database_url])
    assert exit_status.value.code == 2
    assert "--days: must be at least 1, not 0" in capsys.readouterr().err
