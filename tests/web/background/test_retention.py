"""The dashboard server prunes history on a schedule, from its first request on, and what
its collector is sent meanwhile is stored, even into the day being expired."""

import dataclasses
import functools
import json
import logging
import threading
import time

import pytest
import sqlalchemy as sa

import web
from monitor.collect.sender import HttpSender
from monitor.store.schema.models import Batch, QueryMinute, RejectedEvent, TimerSnapshotRow
from monitor.store.tiers.day_partitions import TABLES
from monitor.store.tiers.minutes import TIERS
from monitor.store.tiers.prune import Retention, prune
from monitor.store.write.writes import write_events
from tests.support.progress import batch_event, progress_event, stamp
from tests.support.real_collector import INGEST_TOKEN
from tests.support.retention import CUTOFF, DAY, NEW, NOW, OLD, write_batch, write_snapshot
from tests.support.serving import served
from tests.support.waiting import wait_until
from web import create_app
from wmon.main import main


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
# How many batches each backfill has sent and not yet had stored, at most.
IN_FLIGHT = 20
# A batch of each backfill every 50 ms at most. A prune deletes what was stored before it
# began, pausing as long as each chunk took: senders as fast as the store took them kept it
# about as busy as they, so each prune had more to delete than the one before (1,578 batches
# in 10 s alone, 50 s beside the rest of the suite).
SEND_EVERY_S = 0.05


def backfilled(query_id, batch_id):
    """A batch of a backfill, dated on the oldest day: the day each prune expires."""
    return progress_event(
        query_id, batch_id, f"{query_id}-run", timestamp=stamp(OLD + batch_id * 100)
    )


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
                # By the batches' times alone: sent now, the backfill is stored within the
                # retention, and would stay whatever its time.
                cutoffs = BACKFILL_RETENTION.cutoffs(NOW)
                pruned.append(prune(engine, dataclasses.replace(cutoffs, stored_ms=None)))

        pruning = threading.Thread(target=prune_as_batches_come)
        pruning.start()
        sent = 0
        while pruning.is_alive():
            # Batches keep arriving while each prune runs, and no more than IN_FLIGHT are
            # in flight, so that the senders never run far ahead of what the store has taken.
            if max(sender.stats().pending for sender in senders) < IN_FLIGHT:
                for sender, query_id in zip(senders, BACKFILLS, strict=True):
                    sender.submit(backfilled(query_id, sent))
                sent += 1
            time.sleep(SEND_EVERY_S)
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


THREE_YEARS = 3 * 365 * DAY


def history_of(engine, query_id):
    """The query's batch ids in each per-batch table and its spans in each rollup tier."""
    with engine.connect() as connection:
        batches = {
            table: sorted(
                connection.scalars(
                    sa.text(f"SELECT batch_id FROM {table} WHERE query_id = :q"), {"q": query_id}
                )
            )
            for table in TABLES
        }
        spans = {
            tier.model.__tablename__: sorted(
                connection.scalars(
                    sa.select(tier.column(tier.start)).where(tier.column("query_id") == query_id)
                )
            )
            for tier in TIERS
        }
    return batches | spans


# A driver whose clock is three years behind, reporting as it happens: before batches were kept
# by when they were stored, the next `wmon prune` deleted all of its batches but the newest, and
# all of its minutes and hours, seconds after they were acknowledged.
def test_batches_stored_within_the_retention_stay_whatever_their_time(
    database_url, engine, capsys, monkeypatch
):
    for tier in ("BATCHES_HOURS", "DAYS", "HOURS_DAYS"):
        monkeypatch.delenv(f"WMON_RETENTION_{tier}", raising=False)
    now = time.time_ns() // 1_000_000
    times = [now - THREE_YEARS + batch_id * 1_000 for batch_id in range(6)]
    event_times = {0: (5, times[0] - 3_000, times[0], 0)}
    behind = [
        batch_event("behind", batch_id, at_ms, dropped=1, event_times=event_times)
        for batch_id, at_ms in enumerate(times)
    ]
    write_events(engine, behind, arrived_at_ms=now)
    old = now - 40 * DAY
    for batch_id, at_ms in enumerate([old, old + 1_000, old + 60_000, now]):
        write_batch(engine, "old", batch_id, at_ms)
    kept, old_before = history_of(engine, "behind"), history_of(engine, "old")

    assert main(["prune", "--database-url", database_url]) == 0

    assert history_of(engine, "behind") == kept
    assert all(kept.values()), kept
    # The old query's batches go but its newest, and its 40-day-old minutes (hours are kept
    # 400 days).
    assert history_of(engine, "old") == old_before | dict.fromkeys(TABLES, [3]) | {
        table: [minute]
        for table, minute in (
            ("partition_minutes", now - now % 60_000),
            ("query_minutes", now - now % 60_000),
        )
    }
    # Its reads find them: its history in the API, `wmon batches`.
    app = create_app({"DATABASE_URL": database_url})
    try:
        series = app.test_client().get("/api/queries/behind/batches").get_json()["series"]
    finally:
        web.stop(app)
    assert sum(series["batches"]) == 6, series
    capsys.readouterr()
    assert main(["batches", "behind", "--json", "--database-url", database_url]) == 0
    assert [row["batch_id"] for row in json.loads(capsys.readouterr().out)] == list(range(6))
