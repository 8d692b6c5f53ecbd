"""A streaming job on a local Spark Connect server, written as a user would write one, for
tests/monitor/spark/test_connect.py: a Connect server cannot start in a process that already
has a classic session, so it runs here, in its own.

    python -m tests.support.connect_job SETTINGS.json

SETTINGS names the collector `attach` posts to, the server's own settings (the JVM listener's,
say), the partitioned log and checkpoint, and where to write what Spark reported.
"""

import json
import logging
import os
import sys
import time

from pyspark.sql import SparkSession

import monitor
from streaming.log import PartitionedLog
from streaming.partitioned_log import register
from streaming.scenarios import play


def main(path: str) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    started = time.monotonic()
    with open(path) as file:
        settings = json.load(file)
    builder = SparkSession.builder.remote("local[2]")
    for key, value in settings["server_conf"].items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    logging.info("connect server up after %.1f s", time.monotonic() - started)
    register(spark)
    handle = monitor.attach(spark, settings["collector"], token=settings["token"])
    scenario = play(
        "late_burst",
        PartitionedLog(settings["log_dir"]),
        partitions=2,
        records=400,
        rate=40.0,
        burst_records=20,
        **{"trigger_seconds": 1.0},
    )
    reader = spark.readStream.format("partitioned_log").options(
        **scenario.source_options(settings["log_dir"])
    )
    # A Connect client cannot reach the server's JVM, wherever the jar is: asked for the JVM
    # operator, instrument says so rather than measuring elsewhere.
    os.environ["WMON_OPERATOR"] = "jvm"
    try:
        monitor.instrument(reader.load(), checkpoint=settings["checkpoint"])
        jvm_refused = None
    except RuntimeError as error:
        jvm_refused = str(error)
    del os.environ["WMON_OPERATOR"]
    measured = monitor.instrument(
        reader.load(), checkpoint=settings["checkpoint"], delay="10 seconds"
    )
    query = (
        measured.withWatermark("timestamp", "10 seconds")
        .dropDuplicates(["key", "timestamp"])
        .writeStream.queryName("connect-deduplicated")
        .format("noop")
        .outputMode("append")
        .option("checkpointLocation", settings["checkpoint"])
        .trigger(processingTime="300 milliseconds")
        .start()
    )
    query.processAllAvailable()
    logging.info("query done after %.1f s", time.monotonic() - started)
    query.stop()
    flushed = handle.flush(60)
    handle.detach(60)
    progress = [json.loads(p.json) for p in query.recentProgress]
    with open(settings["out"], "w") as file:
        json.dump(
            {
                "query_id": str(query.id),
                "app_id": spark.conf.get("spark.app.id"),
                "flushed": flushed,
                "progress": progress,
                "burst": scenario.burst.records,
                "jvm_refused": jvm_refused,
            },
            file,
        )
    logging.info("flushed after %.1f s", time.monotonic() - started)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
