"""Each rule on a real streaming query playing the matching scenario: when it fires and resolves,
and that a healthy run raises nothing."""

import threading
import time
from contextlib import contextmanager

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

import monitor
from monitor.alerts.runner import LEASE, AlertRunner
from monitor.store.models import AlertEvent, AlertRow, Lease
from streaming.demo import stop_between_batches
from streaming.log import PartitionedLog
from streaming.scenarios import FAST, IDLE, LATE, SLOW, STALLED, play
from tests.helpers import unique_name, wait_until

pytestmark = [pytest.mark.spark, pytest.mark.e2e]
# What happens here is Spark's and the evaluator's; the store path runs on both stores elsewhere.
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
WAIT = 120
TRAFFIC = dict(partitions=3, records=900, rate=30.0)


def live_alerts(engine, rule):
    """The firing alerts of `rule`, by partition ('' for the query)."""
    with so.Session(engine) as session:
        rows = session.scalars(
            sa.select(AlertRow).where(AlertRow.rule == rule, AlertRow.state == "firing")
        )
        return {row.partition: row for row in rows}


def transitions(engine):
    with so.Session(engine) as session:
        rows = session.execute(
            sa.select(AlertRow.rule, AlertRow.partition, AlertEvent.transition)
            .join(AlertEvent, AlertEvent.alert_id == AlertRow.id)
            .order_by(AlertEvent.id)
        )
        return [tuple(row) for row in rows]


@contextmanager
def monitored(spark, engine, database_url, log_dir, checkpoint, name, rules=None, fail=False):
    """A query over scenario `name` (event times from now on), the monitor and the evaluator."""
    scenario = play(name, PartitionedLog(log_dir), start_ms=int(time.time() * 1000), **TRAFFIC)
    handle = monitor.attach(spark, database_url, idle_timeout=1, stall_timeout=2)
    source = spark.readStream.format("partitioned_log").options(**scenario.source_options(log_dir))
    measured = monitor.instrument(source.load(), checkpoint=checkpoint, delay="10 seconds")
    deduplicated = measured.withWatermark("timestamp", "10 seconds").dropDuplicates(
        ["key", "timestamp"]
    )
    writer = deduplicated.writeStream.queryName(unique_name(name)).option(
        "checkpointLocation", checkpoint
    )
    if fail:
        writer = writer.foreachBatch(_fail_in_batch_3)
    else:
        writer = writer.format("noop")
    query = writer.trigger(processingTime="500 milliseconds").start()
    runner = AlertRunner(engine, rules, interval_s=0.25)
    stop = threading.Event()
    evaluating = threading.Thread(target=runner.run, args=(stop,))
    evaluating.start()
    try:
        yield scenario, query
    finally:
        stop_between_batches(query)
        handle.detach()
        stop.set()
        evaluating.join(30)


def _fail_in_batch_3(batch, batch_id):
    # Every partition is read, as Spark requires of a stateful query's foreachBatch.
    batch.write.format("noop").mode("append").save()
    if batch_id == 3:
        raise RuntimeError("the scooter table is gone")


@SQLITE_ONLY
def test_a_healthy_run_raises_no_alert(spark, engine, database_url, log_dir, checkpoint):
    with monitored(spark, engine, database_url, log_dir, checkpoint, "steady") as (_, query):
        wait_until(
            lambda: query.lastProgress and query.lastProgress["batchId"] >= 6, WAIT, "6 batches"
        )
        time.sleep(1)  # one more round of evaluation over the newest batches
        with so.Session(engine) as session:
            assert session.get(Lease, LEASE) is not None, "the evaluator never ran"
        assert transitions(engine) == []


@SQLITE_ONLY
def test_a_stalled_partition_fires_and_resolves_when_the_query_stops(
    spark, engine, database_url, log_dir, checkpoint, tmp_path
):
    rules = tmp_path / "rules.yml"
    rules.write_text("rules:\n  offset_lag: {threshold: 250, for: 0s}\n")
    with monitored(
        spark, engine, database_url, log_dir, checkpoint, "stalled_partition", rules
    ) as (scenario, query):
        stalled = wait_until(lambda: live_alerts(engine, "partition_stalled"), WAIT, "a stall")
        assert set(stalled) == {f"telemetry/{p}" for p in scenario.with_role(STALLED)}
        # The held-back partition's 300 records never get read.
        lag = wait_until(lambda: live_alerts(engine, "offset_lag"), WAIT, "offset lag")
        [held_back] = scenario.with_role(STALLED)
        assert lag[""].value >= scenario.partitions[held_back].records
        # Stopped, the query's partitions are nobody's concern; its stopping is.
        stop_between_batches(query)
        wait_until(lambda: live_alerts(engine, "query_terminated"), 30, "the query to stop")
        wait_until(lambda: not live_alerts(engine, "partition_stalled"), 30, "the stall to end")
    stalls = [t for t in transitions(engine) if t[0] == "partition_stalled"]
    assert stalls == [("partition_stalled", "telemetry/1", "firing")] + [
        ("partition_stalled", "telemetry/1", "resolved")
    ]


@SQLITE_ONLY
def test_an_idle_partition_fires(spark, engine, database_url, log_dir, checkpoint):
    with monitored(spark, engine, database_url, log_dir, checkpoint, "idle_partition") as (
        scenario,
        _,
    ):
        idle = wait_until(lambda: live_alerts(engine, "partition_idle"), WAIT, "an idle partition")
        assert set(idle) == {f"telemetry/{p}" for p in scenario.with_role(IDLE)}
        assert not live_alerts(engine, "partition_stalled"), "a partition without work is idle"


@SQLITE_ONLY
def test_a_skewed_backfill_fires_late_records_skew_age_and_a_stalled_watermark(
    spark, engine, database_url, log_dir, checkpoint, tmp_path
):
    rules = tmp_path / "rules.yml"
    rules.write_text(
        "rules:\n"
        "  watermark_skew: {threshold: 5s, for: 0s}\n"
        "  watermark_age: {threshold: 5s, for: 0s}\n"
    )
    with monitored(spark, engine, database_url, log_dir, checkpoint, "skewed_backfill", rules) as (
        scenario,
        _,
    ):
        wait_until(lambda: live_alerts(engine, "watermark_skew"), WAIT, "skew to fire")
        # W = max event time - 10 s, and event times start now: older than 5 s at once.
        wait_until(lambda: live_alerts(engine, "watermark_age"), WAIT, "the watermark's age")
        # Once the fast partition is read, W waits while the slow ones work off their backlog.
        wait_until(lambda: live_alerts(engine, "watermark_stalled"), WAIT, "W to stall")
        late = wait_until(lambda: live_alerts(engine, "late_records"), WAIT, "late records")
        slow = {f"telemetry/{p}" for p in scenario.with_role(SLOW)}
        assert late and set(late) <= slow
        assert not {f"telemetry/{p}" for p in scenario.with_role(FAST)} & set(late)
        assert all(alert.value > 0 for alert in late.values())


@SQLITE_ONLY
def test_a_late_burst_fires_late_records_on_its_partition_only(
    spark, engine, database_url, log_dir, checkpoint
):
    with monitored(spark, engine, database_url, log_dir, checkpoint, "late_burst") as (
        scenario,
        query,
    ):
        late = wait_until(lambda: live_alerts(engine, "late_records"), WAIT, "the burst")
        assert set(late) == {f"telemetry/{p}" for p in scenario.with_role(LATE)}


@SQLITE_ONLY
def test_a_killed_query_fires_query_failed(spark, engine, database_url, log_dir, checkpoint):
    with monitored(spark, engine, database_url, log_dir, checkpoint, "steady", fail=True) as _:
        failed = wait_until(lambda: live_alerts(engine, "query_failed"), WAIT, "the failure")
    assert failed[""].message == "the query failed: RuntimeError: the scooter table is gone"
