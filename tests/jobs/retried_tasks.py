"""A job for tests: the instrumented pipeline of test_instrument, with every task failing once.

Run as ``python tests/jobs/retried_tasks.py LOG_DIR CHECKPOINT DATABASE_URL MARKERS``. It needs
its own SparkSession: only a ``local[N,F]`` master retries failed tasks, and the tests share a
``local[2]`` one. Every task of batch 1 and later measures all of its rows, leaves a marker
file in MARKERS and fails on its first attempt; the second attempt succeeds. The last line
printed is JSON: the query id and Spark's numRowsDroppedByWatermark over the run.
"""

import json
import os
import sys

from pyspark.sql import SparkSession

import monitor
from monitor.spark.instrument import instrument
from streaming.partitioned_log import register


def fail_first_attempts(markers):
    """A pass-through that fails each task's first attempt once its rows were measured."""

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


def main(log_dir, checkpoint, database_url, markers):
    spark = (
        SparkSession.builder.master("local[2,2]")
        .appName("wmon-retried-tasks")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    handle = monitor.attach(spark, database_url)
    source = (
        spark.readStream.format("partitioned_log")
        .option("path", log_dir)
        .option("subscribe", "telemetry")
        # 100 records of each partition a batch: three batches, two of them retried, and the
        # second retried one starts from the state the first left.
        .option("maxOffsetsPerTrigger", 300)
        .load()
    )
    measured = instrument(source, checkpoint=checkpoint, delay="10 seconds")
    query = (
        measured.mapInArrow(fail_first_attempts(markers), measured.schema)
        .withWatermark("timestamp", "10 seconds")
        .dropDuplicates(["key", "timestamp"])
        .writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination()
    finally:
        handle.detach()
    dropped = sum(
        op["numRowsDroppedByWatermark"] for p in query.recentProgress for op in p["stateOperators"]
    )
    print(json.dumps({"query_id": str(query.id), "dropped": dropped}))
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
