"""Pending timers of a transformWithStateInPandas query, from its checkpoint, on real Spark."""

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

import monitor
from monitor.store.schema.models import TimerSnapshotRow
from streaming.log import LogRecord, PartitionedLog
from streaming.scooters import OFFLINE_EVENTS, NaiveOfflineDetector
from tests.support.spark_queries import unique_name
from wmon.main import main

pytestmark = pytest.mark.spark
START_MS = 1_700_000_000_000


def test_pending_timers_are_read_from_the_checkpoint(
    spark, rocksdb, log_dir, checkpoint, database_url, engine, capsys
):
    log = PartitionedLog(log_dir)
    # Keys a0..a9 report until the end; keys b0..b4 stop after 20 s of event time, so their
    # timers (newest + 30 s) fire once the watermark passes them.
    log.append(
        "telemetry", 0, [LogRecord(f"a{i % 10}", "{}", START_MS + i * 1000) for i in range(120)]
    )
    log.append(
        "telemetry", 1, [LogRecord(f"b{i % 5}", "{}", START_MS + i * 1000) for i in range(20)]
    )
    handle = monitor.attach(spark, database_url)
    name = unique_name("timers")
    source = (
        spark.readStream.format("partitioned_log")
        .option("path", str(log_dir))
        .option("subscribe", "telemetry")
        .option("maxOffsetsPerTrigger", 40)
        .load()
    )
    query = (
        source.withWatermark("timestamp", "5 seconds")
        .groupBy("key")
        .transformWithStateInPandas(
            NaiveOfflineDetector(offline_after_ms=30_000), OFFLINE_EVENTS, "Append", "EventTime"
        )
        .writeStream.queryName(name)
        .format("memory")
        .outputMode("append")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        watch = handle.watch_timers(query, checkpoint, interval=1.0, due_within="1 minute")
        assert query.awaitTermination(300), "the query did not finish"
        snapshot = watch.snapshot()
        assert handle.flush(30)
    finally:
        handle.detach()

    timers = (
        spark.read.format("statestore")
        .option("path", checkpoint)
        .option("readRegisteredTimers", "true")
        .load()
        .collect()
    )
    assert snapshot.pending == len(timers) == 10, "the a-keys wait, the b-keys' timers fired"
    assert snapshot.next_expiry_ms == min(t["expiration_timestamp_ms"] for t in timers)
    horizon = snapshot.watermark_ms + 60_000
    assert snapshot.due == sum(t["expiration_timestamp_ms"] <= horizon for t in timers) == 10
    with so.Session(engine) as session:
        stored = session.scalars(
            sa.select(TimerSnapshotRow)
            .where(TimerSnapshotRow.query_id == str(query.id))
            .order_by(TimerSnapshotRow.taken_at_ms)
        ).all()
    assert stored[-1].pending == 10 and stored[-1].due == 10
    assert len(stored) >= 2, "the background watch took no snapshot while the query ran"
    offline = {
        row["scooter_id"]
        for row in spark.sql(f"SELECT scooter_id FROM {name} WHERE event = 'offline'").collect()
    }
    assert offline == {f"b{k}" for k in range(5)}
    assert main(["timers", str(query.id), "--database-url", database_url]) == 0
    assert "pending timers" in capsys.readouterr().out
