"""Late records behind a window aggregation, against what Spark's own output shows it dropped.

The expected counts come from Spark alone: what a batch aggregation of all the input counts in
each (window, partition), less what the streaming aggregation kept there, read from its output.
No window arithmetic of ours goes into them.
"""

import json
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest
from pyspark.sql import functions as F

import monitor
from tests.support.spark_queries import skewed_log, unique_name
from tests.support.stores import stored_event_times

pytestmark = pytest.mark.spark
WAIT = 120
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# Event time advances 2 s per record in partition 0, 0.8 s in 1 and 0.25 s in 2. Read at the
# same rate in records, partition 0 drags the watermark ahead and the other two fall behind it:
# their later records arrive in windows the watermark has passed, some of them half kept. Some
# of partition 1's are older than the watermark in a window it has not passed: Spark keeps them.
SPACING_MS = {0: 2_000, 1: 800, 2: 250}
RECORDS = 24
PER_TRIGGER = 6
DELAY = WINDOW = "5 seconds"


@pytest.fixture
def log(log_dir):
    return skewed_log(log_dir, SPACING_MS, RECORDS)


def counts_per_window(df):
    """Records per (event-time window, partition)."""
    return df.groupBy(F.window("timestamp", WINDOW), "partition").count()


def counted_in_all_input(spark, log):
    """What a batch aggregation of every record counts per (window start, partition)."""
    rows = [
        (partition, EPOCH + timedelta(milliseconds=record.timestamp_ms))
        for partition in SPACING_MS
        for _, record in log.read("telemetry", partition, 0, RECORDS)
    ]
    df = spark.createDataFrame(rows, "partition INT, timestamp TIMESTAMP")
    return {(r.window.start, r.partition): r["count"] for r in counts_per_window(df).collect()}


def kept_by_streaming(spark, log_dir, checkpoint):
    """Run the instrumented aggregation over the log: the query, and what it kept per window.

    Keyed by (window start, partition). In update mode a window is emitted whenever its count
    changes, so its last count is what Spark kept of it; a window all of whose records were
    dropped is never emitted.
    """
    kept = {}

    def keep(batch, batch_id):
        for row in batch.collect():
            kept[(row.window.start, row.partition)] = row["count"]

    caps = {str(partition): PER_TRIGGER for partition in SPACING_MS}
    source = (
        spark.readStream.format("partitioned_log")
        .option("path", str(log_dir))
        .option("subscribe", "telemetry")
        .option("maxOffsetsPerPartition", json.dumps(caps))
        .load()
    )
    measured = monitor.instrument(source, checkpoint=checkpoint, delay=DELAY, window=WINDOW)
    query = (
        counts_per_window(measured.withWatermark("timestamp", DELAY))
        .writeStream.queryName(unique_name("windows"))
        .outputMode("update")
        .foreachBatch(keep)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(WAIT), "the query did not finish"
    return query, kept


def stored_late(engine, query_id):
    """Late records stored per partition over all batches, partitions without any left out."""
    late = Counter()
    for row in stored_event_times(engine, str(query_id)):
        late[row.partition] += row.late_records
    return +late


# One store is enough: this is about what Spark drops; both stores are written the same way.
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_late_records_behind_a_window_aggregation_are_those_spark_dropped(
    spark, log, log_dir, checkpoint, database_url, engine
):
    handle = monitor.attach(spark, database_url)
    try:
        query, kept = kept_by_streaming(spark, log_dir, checkpoint)
    finally:
        handle.detach()
    counted = counted_in_all_input(spark, log)
    dropped = {key: count - kept.get(key, 0) for key, count in counted.items()}
    dropped_per_partition = Counter()
    for (_, partition), count in dropped.items():
        dropped_per_partition[f"telemetry/{partition}"] += count

    assert stored_late(engine, query.id) == +dropped_per_partition
    # The data must exercise what this is about: records dropped in two partitions, and a
    # window Spark kept some records of and dropped others.
    assert len(+dropped_per_partition) == 2
    assert any(0 < dropped[key] < counted[key] for key in kept)
