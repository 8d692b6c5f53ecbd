"""The dashboard server prunes history on a schedule, from its first request on."""

import logging

import pytest
import sqlalchemy as sa

import web
from monitor.store.models import Batch, TimerSnapshotRow
from monitor.store.prune import Retention
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
