"""Scenarios on real Spark: idle and stalled partitions, skew and Flink's watermark as built."""

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

import monitor
from monitor.store.schema.models import Batch
from streaming.log import PartitionedLog
from streaming.scenarios import play
from tests.support.spark_queries import start_partition_counts
from tests.support.stores import stored_event_times, stored_partitions
from tests.support.waiting import wait_until

# Spark's side; the health derivation in the store runs on both stores in test_health_store.py.
pytestmark = [
    pytest.mark.spark,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),
]
WAIT = 180


def run_until(spark, scenario, log_dir, checkpoint, database_url, done, **timeouts):
    """Play a scenario through the instrumented windowed count until `done(query)` holds."""
    handle = monitor.attach(spark, database_url, **timeouts)
    query = start_partition_counts(spark, scenario, log_dir, checkpoint)
    try:
        wait_until(lambda: done(query), WAIT, "the scenario to play out")
    finally:
        query.stop()
        handle.detach()
    return query


def run_until_idle(spark, scenario, log_dir, checkpoint, database_url, engine, partition):
    """Play a scenario until `partition` alone is marked idle in a batch (idle after 1 s, never
    stalled)."""

    def idle_alone(query):
        states = partition_states(engine, query.id)
        return any(idle == {partition} for idle, _, _ in states.values())

    return run_until(
        spark,
        scenario,
        log_dir,
        checkpoint,
        database_url,
        idle_alone,
        stall_timeout=600,
        idle_timeout=1,
    )


def partition_states(engine, query_id):
    """Per batch: (partitions marked idle, partitions marked stalled, their offset lags)."""
    rows = stored_partitions(engine, str(query_id))
    states = {}
    for row in rows:
        idle, stalled, lags = states.setdefault(row.batch_id, (set(), set(), {}))
        lags[row.partition] = row.offset_lag
        if row.idle:
            idle.add(row.partition)
        if row.stalled:
            stalled.add(row.partition)
    return states


def batch_and_watermarks(engine, query_id, batch_id):
    """A stored batch, and its partition watermarks by partition."""
    with so.Session(engine) as session:
        batch = session.scalars(
            sa.select(Batch).where(Batch.query_id == str(query_id), Batch.batch_id == batch_id)
        ).one()
    watermarks = {
        row.partition: row.partition_watermark_ms
        for row in stored_event_times(engine, str(query_id))
        if row.batch_id == batch_id
    }
    return batch, watermarks


def test_a_held_back_partition_is_stalled_and_never_idle(
    spark, log_dir, checkpoint, database_url, engine
):
    scenario = play(
        "stalled_partition",
        PartitionedLog(log_dir),
        partitions=3,
        records=900,
        rate=60.0,
        stalled_partition=1,
    )
    query = run_until(
        spark,
        scenario,
        log_dir,
        checkpoint,
        database_url,
        lambda q: len(q.recentProgress) >= 12,
        stall_timeout=1,
        idle_timeout=60,
    )
    states = partition_states(engine, query.id)
    last = states[max(states)]
    assert last[1] == {"telemetry/1"}, last
    assert all("telemetry/1" not in idle for idle, _, _ in states.values())
    assert all(lags["telemetry/1"] > 0 for _, _, lags in states.values())


def test_a_drained_partition_without_new_data_is_idle_and_left_out_of_flinks_watermark(
    spark, log_dir, checkpoint, database_url, engine
):
    scenario = play(
        "idle_partition",
        PartitionedLog(log_dir),
        partitions=3,
        records=1_200,
        rate=60.0,
        idle_partition=1,
    )

    query = run_until_idle(
        spark, scenario, log_dir, checkpoint, database_url, engine, "telemetry/1"
    )
    states = partition_states(engine, query.id)
    for idle, _, lags in states.values():
        assert all(lags[name] == 0 for name in idle), "a partition with a backlog is never idle"
    batch_id = min(b for b, (idle, _, _) in states.items() if idle == {"telemetry/1"})
    batch, watermarks = batch_and_watermarks(engine, query.id, batch_id)
    active_names = [name for name in watermarks if name != "telemetry/1"]
    active = [watermarks[name] for name in active_names]
    assert batch.flink_watermark_ms == min(active)
    # Skew leaves the idle partition out too, unless it drives Spark's watermark.
    driver = batch.watermark_driver_partition
    counted = [w for name, w in watermarks.items() if name in (driver, *active_names)]
    assert batch.watermark_skew_ms == max(counted) - min(counted)


def test_a_fast_partition_that_drained_and_went_idle_still_counts_in_the_skew(
    spark, log_dir, checkpoint, database_url, engine
):
    # telemetry/0 is read ten times as fast as the others: it drains first and goes idle,
    # holding Spark's watermark ahead while the others work through their backlog.
    scenario = play("skewed_backfill", PartitionedLog(log_dir), partitions=3, records=900)

    query = run_until_idle(
        spark, scenario, log_dir, checkpoint, database_url, engine, "telemetry/0"
    )
    states = partition_states(engine, query.id)
    batch_id = min(b for b, (idle, _, _) in states.items() if idle == {"telemetry/0"})
    batch, watermarks = batch_and_watermarks(engine, query.id, batch_id)
    assert batch.watermark_driver_partition == "telemetry/0"
    slow = [watermarks["telemetry/1"], watermarks["telemetry/2"]]
    assert batch.flink_watermark_ms == min(slow)
    assert batch.watermark_skew_ms == watermarks["telemetry/0"] - min(slow)
    assert batch.watermark_skew_ms > max(slow) - min(slow)
