"""Each scenario on real Spark: stored late records per batch and partition are those Spark dropped.

Each record is its own deduplication key, so dropDuplicates drops a record only as late, and emits
every other in the batch that reads it: what a batch read from a partition (by the offsets in its
progress) less what it emitted from there is what Spark dropped.
"""

from collections import Counter

import pytest

import monitor
from streaming.log import PartitionedLog
from streaming.scenarios import FAST, LATE, SLOW, play
from tests.support.spark_queries import read_by_spark, unique_name, without_no_data_batches
from tests.support.stores import stored_event_times

pytestmark = [pytest.mark.spark, pytest.mark.e2e]
SCENARIOS = [
    "steady",
    "skewed_backfill",
    "idle_partition",
    "stalled_partition",
    "late_burst",
    "future_timestamp",
]


# Spark's side is the same whatever the store: every scenario on SQLite, one on PostgreSQL too.
@pytest.mark.parametrize(
    "name, database_url",
    [(name, "sqlite") for name in SCENARIOS] + [("late_burst", "postgresql")],
    indirect=["database_url"],
)
def test_stored_late_records_are_exact_in_every_scenario(
    spark, log_dir, checkpoint, database_url, engine, name
):
    log = PartitionedLog(log_dir)
    # 30 s of event time read 3 s of it per trigger: about ten batches, each of them planned by
    # a Python worker. The delay (10 s) still lies between the disorder (2 s) and the late
    # burst's lateness (20 s), and the future record leaves half the traffic to lose.
    scenario = play(name, log, partitions=3, records=900, rate=30.0, trigger_seconds=3.0)
    handle = monitor.attach(spark, database_url)
    emitted = Counter()

    def count(batch, batch_id):
        for row in batch.select("partition").collect():
            emitted[(batch_id, f"telemetry/{row.partition}")] += 1

    reader = spark.readStream.format("partitioned_log")
    for key, value in scenario.source_options(log_dir).items():
        reader = reader.option(key, value)
    measured = monitor.instrument(reader.load(), checkpoint=checkpoint, delay="10 seconds")
    with without_no_data_batches(spark):
        query = (
            measured.withWatermark("timestamp", "10 seconds")
            .dropDuplicates(["partition", "offset", "timestamp"])
            .writeStream.queryName(unique_name(name))
            .foreachBatch(count)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
    try:
        assert query.awaitTermination(180), "the query did not finish"
    finally:
        handle.detach()
    rows = stored_event_times(engine, str(query.id))
    late = {(r.batch_id, r.partition): r.late_records for r in rows if r.late_records}
    read = read_by_spark(query)
    assert late == {key: n - emitted[key] for key, n in read.items() if n != emitted[key]}
    spark_dropped = sum(
        op["numRowsDroppedByWatermark"] for p in query.recentProgress for op in p["stateOperators"]
    )
    assert sum(late.values()) == spark_dropped
    late_partitions = {int(partition.split("/")[1]) for _, partition in late}
    if name == "skewed_backfill":
        assert late_partitions and late_partitions <= set(scenario.with_role(SLOW))
        assert not late_partitions & set(scenario.with_role(FAST))
    elif name == "late_burst":
        assert late_partitions == set(scenario.with_role(LATE))
    elif name == "future_timestamp":
        # Halfway through, the watermark jumps two hours ahead: every partition loses the rest.
        assert late_partitions == set(scenario.partitions)
    else:
        assert late == {}, f"{name} should lose no records"
