"""The dashboard server prunes history on a schedule, from its first request on, and what
its collector is sent meanwhile is stored, even into the day being expired."""

import functools
import logging
import threading
import time

import pytest
import sqlalchemy as sa

import web
from benchmarks.serving import served
from monitor.collect.sender import HttpSender
from monitor.collect.spark_events import PROGRESS, named
from monitor.store.models import Batch, QueryMinute, RejectedEvent, TimerSnapshotRow
from monitor.store.prune import Retention, prune
from tests.support.progress import progress_doc, stamp
from tests.support.real_collector import INGEST_TOKEN
from tests.support.retention import CUTOFF, DAY, NEW, NOW, OLD, write_batch, write_snapshot
from tests.support.waiting import wait_until
from web import create_app


@pytest.fixture
def app_config():
    return {"CLOCK": lambda: NOW, "RETENTION": Retention(30 * 24, 30), "PRUNE_INTERVAL_S": 0.05}


def rows(engine, column):
    with engine.connect() as connection:
        return sorted(connection.scalars(sa.select(column)))


def test_pruning_starts_with_the_first_request_and_repeats(app, engine):
    write_batch(engine, "q", 0, OLD)
    # The day before the cutoff's last moment: gone on both stores (PostgreSQL drops whole days).
    write_batch(engine, "q", 1, CUTOFF - CUTOFF % DAY - 1)
    write_batch(engine, "q", 2, NEW)
    write_snapshot(engine, "q", NEW)
    assert rows(engine, Batch.batch_id) == [0, 1, 2]  # nothing runs before a request

    assert app.test_client().get("/api/queries").status_code == 200
    wait_until(lambda: rows(engine, Batch.batch_id) == [2], 10, "the old batches to go")
    write_snapshot(engine, "q", OLD)
    wait_until(lambda: rows(engine, TimerSnapshotRow.taken_at_ms) == [NEW], 10, "the next prune")


def test_a_failed_prune_is_logged_and_the_next_one_still_runs(tmp_path, caplog):
    app = create_app(
        {"DATABASE_URL": f"sqlite:///{tmp_path / 'empty.db'}", "PRUNE_INTERVAL_S": 0.05}
    )
    with caplog.at_level(logging.WARNING, logger="web.background.retention"):
        app.test_client().get("/api/queries")
        wait_until(
            lambda: len([r for r in caplog.records if "cannot prune" in r.message]) >= 2,
            10,
            "two failed prunes",
        )
    web.stop(app)


def test_the_retention_of_each_tier_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("WMON_RETENTION_BATCHES_HOURS", "12")
    monkeypatch.setenv("WMON_RETENTION_DAYS", "7")
    monkeypatch.setenv("WMON_RETENTION_HOURS_DAYS", "90")
    app = create_app({"DATABASE_URL": f"sqlite:///{tmp_path / 'wmon.db'}"})
    assert (app.config["RETENTION"], app.config["PRUNE_INTERVAL_S"]) == (Retention(12, 7, 90), 3600)


def test_by_default_batches_are_kept_two_days_minutes_30_and_hours_400(monkeypatch, tmp_path):
    for tier in ("BATCHES_HOURS", "DAYS", "HOURS_DAYS"):
        monkeypatch.delenv(f"WMON_RETENTION_{tier}", raising=False)
    app = create_app({"DATABASE_URL": f"sqlite:///{tmp_path / 'wmon.db'}"})
    assert app.config["RETENTION"] == Retention(48, 30, 400)


# Batches are kept 30 days (on PostgreSQL, whole days go), their rollups 40: every batch
# acknowledged is in the rollups, whether its day was expired after it was stored or not.
BACKFILL_RETENTION = Retention(30 * 24, 40)
BACKFILLS = ("backfill-0", "backfill-1", "backfill-2")
PRUNES = 5


def backfilled(query_id, batch_id):
    """A batch of a backfill, dated on the oldest day: the day each prune expires."""
    doc = progress_doc(id=query_id, runId=f"{query_id}-run", batchId=batch_id)
    return named(PROGRESS, {"progress": doc | {"timestamp": stamp(OLD + batch_id * 100)}})


def rolled_up_batches(engine):
    """How many batches of each backfill the per-minute rollups hold."""
    with engine.connect() as connection:
        return dict(
            connection.execute(
                sa.select(QueryMinute.query_id, sa.func.sum(QueryMinute.batches))
                .where(QueryMinute.query_id.in_(BACKFILLS))
                .group_by(QueryMinute.query_id)
            ).all()
        )


def more_stored(engine, than):
    """Whether the rollups hold more of the backfills' batches than `than`."""
    return sum(rolled_up_batches(engine).values()) > than


# A backfill (or a replay, or a driver whose clock is behind) sends batches into the day that
# each prune expires, on PostgreSQL by dropping its partitions, on SQLite by deleting its rows.
# Before the writers and the pruner agreed on the day (store.day_partitions), PostgreSQL
# refused 5 to 18 of each sender's 302 to 547 batches in six runs as invalid ("no partition of
# relation … found for row"): set aside, never sent again.
def test_batches_sent_into_the_day_being_expired_are_stored(database_url, engine):
    for day in range(4):
        write_batch(engine, "history", day, OLD + day * DAY)
    config = {
        "DATABASE_URL": database_url,
        "INGEST_TOKEN": INGEST_TOKEN,
        "CLOCK": lambda: NOW,
        "RETENTION": BACKFILL_RETENTION,
    }
    with served(config) as url:
        senders = [
            HttpSender(url, INGEST_TOKEN, query_id, capacity=10_000, max_backoff=0.2)
            for query_id in BACKFILLS
        ]
        pruned = []

        def prune_as_batches_come():
            for _ in range(PRUNES):
                than = sum(rolled_up_batches(engine).values()) + len(BACKFILLS)
                wait_until(functools.partial(more_stored, engine, than), 30, "more batches")
                pruned.append(prune(engine, BACKFILL_RETENTION.cutoffs(NOW)))

        pruning = threading.Thread(target=prune_as_batches_come)
        pruning.start()
        sent = 0
        while pruning.is_alive():
            for sender, query_id in zip(senders, BACKFILLS, strict=True):
                sender.submit(backfilled(query_id, sent))
            sent += 1
            time.sleep(0.01)
        assert all(sender.close(timeout=60) for sender in senders)

    # Each prune expired the oldest day with batches sent into it, while it went too.
    assert len(pruned) == PRUNES and all(p.deleted["batches"] for p in pruned), pruned
    stats = [sender.stats() for sender in senders]
    assert [(s.written, s.rejected, s.dropped) for s in stats] == [(sent, 0, 0)] * 3, stats
    assert rows(engine, RejectedEvent.id) == []
    # Every acknowledged batch is in the rollups; the newest of each backfill is kept.
    assert rolled_up_batches(engine) == dict.fromkeys(BACKFILLS, sent)
    with engine.connect() as connection:
        newest = connection.execute(
            sa.select(Batch.query_id, sa.func.max(Batch.batch_id))
            .where(Batch.query_id.in_(BACKFILLS))
            .group_by(Batch.query_id)
        ).all()
    assert dict(newest) == dict.fromkeys(BACKFILLS, sent - 1)
