"""Spark Connect, first class: a job on a real local Connect server, monitored from its client
(`attach` through the collector) and by the JVM listener in the server's settings, stores the
same rows both ways; the instrumented operator, run on the server's Python workers, counts the
late records exactly as Spark drops them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import upgrade
from tests.support.real_collector import INGEST_TOKEN, serving_collector
from tests.support.stores import row_differences, stored_rows
from tests.support.waiting import wait_until
from wmon.submit import PACKAGED_JAR

pytestmark = pytest.mark.spark
REPOSITORY = Path(__file__).resolve().parents[3]
# Each way stamps a run's end, and when its events arrived, by its own clock; only the server
# can read the trigger.
WHEN_ENDED = ("terminated_at_ms", "updated_at_ms", "clock_behind_ms")
TRIGGER = ("trigger", "trigger_interval_ms")


def migrated(path: Path) -> sa.Engine:
    engine = create_engine(f"sqlite:///{path}")
    upgrade(engine)
    return engine


def run_connect_job(settings: dict, tmp_path: Path) -> dict:
    """Run tests/support/connect_job.py in its own process; what it reported."""
    path, out = tmp_path / "settings.json", tmp_path / "reported.json"
    path.write_text(json.dumps({**settings, "out": str(out)}))
    env = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    env.pop("SPARK_REMOTE", None)
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.connect_job", str(path)],
        cwd=REPOSITORY,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return {**json.loads(out.read_text()), "log": done.stderr}


def test_a_connect_job_is_recorded_from_its_client_and_its_server(tmp_path, log_dir, checkpoint):
    from_client, from_server = migrated(tmp_path / "client.db"), migrated(tmp_path / "server.db")
    with (
        serving_collector(str(from_client.url)) as client_url,
        serving_collector(str(from_server.url)) as server_url,
    ):
        reported = run_connect_job(
            {
                "collector": client_url,
                "token": INGEST_TOKEN,
                "server_conf": {
                    "spark.sql.shuffle.partitions": "2",
                    "spark.jars": str(PACKAGED_JAR),
                    "spark.sql.streaming.streamingQueryListeners": "wmon.spark.WatermarkListener",
                    "spark.wmon.url": server_url,
                    "spark.wmon.token": INGEST_TOKEN,
                },
                "log_dir": str(log_dir),
                "checkpoint": checkpoint,
            },
            tmp_path,
        )
        query_id = reported["query_id"]
        wait_until(
            lambda: stored_rows(from_server, query_id)["queries"][0]["status"] == "terminated",
            60,
            "the server's listener's delivery of the query's end",
        )
    assert reported["flushed"], reported["log"][-4000:]
    assert "in the Spark Connect server's Python workers" in reported["log"]
    assert "this is a Spark Connect session" in reported["jvm_refused"]

    client = stored_rows(from_client, query_id, leave_out=WHEN_ENDED + TRIGGER)
    server = stored_rows(from_server, query_id, leave_out=WHEN_ENDED + TRIGGER)
    assert len(client["batches"]) == len(reported["progress"]) > 0
    assert row_differences(client, server) == []
    dropped = sum(
        operator["numRowsDroppedByWatermark"]
        for progress in reported["progress"]
        for operator in progress["stateOperators"]
    )
    late = sum(row["late_records"] for row in client["batch_event_times"])
    assert late == dropped == reported["burst"]
    with from_client.connect() as connection:
        senders = connection.execute(sa.text("SELECT id FROM senders")).scalars().all()
    assert senders == [reported["app_id"]]
