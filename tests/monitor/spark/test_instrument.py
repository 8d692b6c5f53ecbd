"""The instrumented operator on real Spark: exact late records per partition, skewed backfill.

Late records are checked against what Spark's output shows it dropped: every record has its own
key, so dropDuplicates drops it only as late and otherwise emits it in the batch that reads it. What
a batch read from a partition (by the offsets in its progress) less what it emitted from there is
what Spark dropped. Behind a window aggregation, see test_late_oracle.py.
"""

import os
from collections import Counter

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so
from pyspark.errors import StreamingQueryException

import monitor
from monitor.spark.instrument import instrument
from monitor.spark.measuring import Measuring
from monitor.spark.operator_python import measured_in_python
from monitor.store.schema.models import Batch
from tests.support.spark_queries import (
    START_MS,
    expected_late,
    read_by_spark,
    skewed_log,
    unique_name,
)
from tests.support.stores import stored_event_times

pytestmark = pytest.mark.spark
WAIT = 180
# Event time advances 1 s per record in partition 0, 0.5 s in 1 and 0.2 s in 2: read at the same
# rate in records, partition 0 drags the watermark ahead of the slower ones, as in a backfill.
SPACING_MS = {0: 1_000, 1: 500, 2: 200}
RECORDS = 300


@pytest.fixture
def skewed(log_dir):
    return skewed_log(log_dir, SPACING_MS, RECORDS)


def run(spark, log_dir, checkpoint, database_url, shape, per_trigger=90):
    """Run the query to the end of the log, `per_trigger` records a batch: the query, and its
    rows per (batch, partition)."""
    handle = monitor.attach(spark, database_url)
    emitted = Counter()

    def count(batch, batch_id):
        for row in batch.select("partition").collect():
            emitted[(batch_id, f"telemetry/{row.partition}")] += 1

    source = (
        spark.readStream.format("partitioned_log")
        .option("path", str(log_dir))
        .option("subscribe", "telemetry")
        .option("maxOffsetsPerTrigger", per_trigger)
        .load()
    )
    query = (
        shape(source)
        .writeStream.queryName(unique_name("backfill"))
        .foreachBatch(count)
        .outputMode("append")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(WAIT), "the query did not finish"
    finally:
        handle.detach()
    return query, emitted


def stored(engine, query_id):
    rows = stored_event_times(engine, str(query_id))
    return {(row.batch_id, row.partition): row for row in rows}


def dropped_by_spark(query):
    return sum(
        op["numRowsDroppedByWatermark"] for p in query.recentProgress for op in p["stateOperators"]
    )


def deduplicated(checkpoint):
    """The pipeline whose drops Spark counts row by row: instrumented, then dropDuplicates."""

    def shape(source):
        measured = instrument(source, checkpoint=checkpoint, delay="10 seconds")
        return measured.withWatermark("timestamp", "10 seconds").dropDuplicates(
            ["key", "timestamp"]
        )

    return shape


def test_late_records_are_exact_behind_drop_duplicates(
    spark, skewed, log_dir, checkpoint, database_url, engine
):
    query, emitted = run(spark, log_dir, checkpoint, database_url, deduplicated(checkpoint))
    rows = stored(engine, query.id)
    late = {key: row.late_records for key, row in rows.items() if row.late_records}
    read = read_by_spark(query)
    assert late == {key: n - emitted[key] for key, n in read.items() if n != emitted[key]}
    total = sum(late.values())
    assert total > 0 and total == dropped_by_spark(query)

    last = max(batch for batch, _ in rows)
    per_partition = {
        name: rows[(last, name)] for name in ("telemetry/0", "telemetry/1", "telemetry/2")
    }
    assert per_partition["telemetry/0"].late_records_total == 0, "the fastest loses nothing"
    assert per_partition["telemetry/2"].late_records_total > 0, "the slowest loses records"
    assert sum(row.late_records_total for row in per_partition.values()) == total
    for partition, spacing in SPACING_MS.items():
        row = per_partition[f"telemetry/{partition}"]
        assert row.max_event_time_ms == START_MS + (RECORDS - 1) * spacing
        assert row.partition_watermark_ms == row.max_event_time_ms - 10_000
    batches = {batch for batch, _ in rows}
    assert all((batch, name) in rows for batch in batches for name in per_partition)
    assert sum(row.records for row in rows.values()) == RECORDS * len(SPACING_MS)
    with so.Session(engine) as session:
        final = session.scalars(
            sa.select(Batch).where(Batch.query_id == str(query.id), Batch.batch_id == last)
        ).one()
    watermarks = [row.partition_watermark_ms for row in per_partition.values()]
    assert final.watermark_skew_ms == max(watermarks) - min(watermarks) > 0
    assert final.flink_watermark_ms == min(watermarks) < final.watermark_ms
    samples = [tuple(s) for row in rows.values() for s in row.late_samples]
    assert samples and all(
        key.startswith("scooter-") and offset is not None for key, _, offset in samples
    )


# What the operator measured and what the store derived from it; the batch time and the time
# lag (now - M_p) of a replayed batch are, rightly, those of the replay.
MEASURED = (
    "records",
    "min_event_ms",
    "max_event_ms",
    "late_records",
    "late_watermark_ms",
    "delay_ms",
    "max_event_time_ms",
    "partition_watermark_ms",
    "late_records_total",
    "late_samples",
)


def measured(rows):
    return {key: {name: getattr(row, name) for name in MEASURED} for key, row in rows.items()}


def test_a_batch_replayed_after_a_restart_is_counted_once(
    spark, skewed, log_dir, checkpoint, database_url, engine
):
    first, _ = run(spark, log_dir, checkpoint, database_url, deduplicated(checkpoint))
    before = measured(stored(engine, first.id))
    # The run ends with a batch that reads nothing (Spark's no-data batch); the one before
    # it reads records, some of them late.
    *_, last, no_data = [p["batchId"] for p in first.recentProgress]
    assert first.recentProgress[-1]["numInputRows"] == 0
    assert any(before[(last, f"telemetry/{p}")]["late_records"] for p in SPACING_MS)
    # As if the driver died after running `last` and before committing it: Spark runs it again.
    for folder, batch in (("offsets", no_data), ("commits", no_data), ("commits", last)):
        for name in (str(batch), f".{batch}.crc"):
            os.remove(os.path.join(checkpoint, folder, name))

    second, _ = run(spark, log_dir, checkpoint, database_url, deduplicated(checkpoint))
    assert second.id == first.id and second.runId != first.runId
    assert [p["batchId"] for p in second.recentProgress] == [last, no_data]
    assert measured(stored(engine, second.id)) == before
    assert sum(row["late_records"] for row in before.values()) == dropped_by_spark(first)


def fail_first_attempts(markers):
    """A pass-through that fails each task's first attempt once its rows were measured: every
    task of batch 1 and later leaves a marker file in `markers` and fails, the second attempt
    succeeds (the session's `local[2,2]` master tries a task twice)."""

    def pass_through(batches):
        from pyspark import TaskContext

        context = TaskContext.get()
        batch_id = int(context.getLocalProperty("streaming.sql.batchId"))
        # Drain the input first: the failed attempt has then measured every row of its task.
        rows = list(batches)
        if batch_id >= 1 and context.attemptNumber() == 0:
            open(os.path.join(markers, f"{batch_id}-{context.partitionId()}"), "w").close()
            raise RuntimeError("wmon test: a task's first attempt fails")
        yield from rows

    return pass_through


# One store is enough: this is about Spark discarding a failed attempt's observed metrics; the
# write path is the one the tests above check on both stores.
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("operator", ["jvm", "python"])
def test_a_retried_task_is_counted_once(
    spark, skewed, log_dir, checkpoint, database_url, engine, tmp_path, monkeypatch, operator
):
    monkeypatch.setenv("WMON_OPERATOR", operator)
    markers = tmp_path / "failed-attempts"
    markers.mkdir()

    def shape(source):
        measured = instrument(source, checkpoint=checkpoint, delay="10 seconds")
        retried = measured.mapInArrow(fail_first_attempts(str(markers)), measured.schema)
        return retried.withWatermark("timestamp", "10 seconds").dropDuplicates(
            ["key", "timestamp"]
        )

    # 100 records of each partition a batch: three batches, two of them retried, and the second
    # retried one starts from the state the first left. Spark logs each failed attempt with its
    # stack as an error: not in the suite's output.
    spark.sparkContext.setLogLevel("FATAL")
    try:
        query, _ = run(spark, log_dir, checkpoint, database_url, shape, per_trigger=300)
    finally:
        spark.sparkContext.setLogLevel("ERROR")

    rows = stored(engine, query.id)
    batches_read = {batch for (batch, _), row in rows.items() if row.records}
    failed = {int(name.split("-")[0]) for name in os.listdir(markers)}
    assert failed == batches_read - {0}, "every task of batch 1 on should have failed once"
    late = {key: row.late_records for key, row in rows.items() if row.late_records}
    assert late == expected_late(skewed, checkpoint)
    assert sum(late.values()) == dropped_by_spark(query) > 0
    assert sum(row.records for row in rows.values()) == RECORDS * len(SPACING_MS)


def test_columns_that_are_not_there_are_named(spark, skewed, log_dir, checkpoint):
    """At once where the DataFrame can be analysed; when the first rows arrive where it must
    not be (on Spark Connect, in a pipeline's flow function), with the same words."""
    source = (
        spark.readStream.format("partitioned_log")
        .option("path", str(log_dir))
        .option("subscribe", "telemetry")
        .load()
    )
    with pytest.raises(ValueError, match="instrument: no event-time column 'seen_at'"):
        instrument(source, event_time="seen_at", checkpoint=checkpoint)
    measuring = Measuring(checkpoint, "timestamp", "shard", None, None, None, 10_000, None, 0)
    query = (
        measured_in_python(source, measuring)
        .writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(StreamingQueryException, match="instrument: no partition column 'shard'"):
        query.awaitTermination(WAIT)
