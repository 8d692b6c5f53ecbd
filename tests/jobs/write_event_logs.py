"""A job for tests: real Spark event logs of one tiny streaming query, in every format we read.

Run as ``python tests/jobs/write_event_logs.py OUT``. One process, one JVM: for each variant
the SparkSession is stopped and built again with that variant's event-log settings, and the
same query runs (three input files -> watermark -> window count -> noop, one file a batch).
Each variant's log goes to ``OUT/<variant>/``; just before the session stops (the app is still
running) the log is copied as it is to ``OUT/inprogress/<variant>/``. The last line printed is
JSON: ``{variant: application id}``.
"""

import json
import os
import shutil
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

# variant -> the event-log settings that differ from Spark's defaults (rolling, zstd).
VARIANTS = {
    "zstd": {},
    "lz4": {"spark.eventLog.compression.codec": "lz4"},
    "snappy": {"spark.eventLog.compression.codec": "snappy"},
    "plain": {"spark.eventLog.compress": "false"},
    "single_zstd": {"spark.eventLog.rolling.enabled": "false"},
    "lzf": {"spark.eventLog.compression.codec": "lzf"},
}

ROWS = [
    # (file, event times in seconds): the watermark (10 s) passes the first windows on the way.
    ("0.json", [1, 2, 3, 12]),
    ("1.json", [15, 21, 4, 25]),
    ("2.json", [31, 33, 40, 44]),
]


def write_input(directory):
    """Three small JSON files, one micro-batch each."""
    os.makedirs(directory)
    for name, seconds in ROWS:
        with open(os.path.join(directory, name), "w") as out:
            for second in seconds:
                out.write(json.dumps({"ts": f"2026-01-01 00:00:{second:02d}", "n": second}) + "\n")


def session(log_dir, settings):
    """A fresh SparkSession that writes its event log to log_dir."""
    os.makedirs(log_dir)
    builder = (
        SparkSession.builder.master("local[1]")
        .appName("wmon-event-logs")
        .config("spark.ui.enabled", "false")
        # No batch without data after the last file: whether Spark runs one to move the
        # watermark depends on timing, and every run must log the same three batches.
        .config("spark.sql.streaming.noDataMicroBatches.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", "file://" + log_dir)
    )
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_query(spark, input_dir, checkpoint):
    """The streaming query: one input file a batch until the input is drained."""
    events = (
        spark.readStream.schema("ts timestamp, n long")
        .option("maxFilesPerTrigger", 1)
        .json(input_dir)
        .withWatermark("ts", "10 seconds")
        .groupBy(F.window("ts", "10 seconds"))
        .count()
    )
    query = (
        events.writeStream.format("noop")
        .outputMode("append")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()


def main(out):
    """Write every variant's event log under out."""
    input_dir = os.path.join(out, "input")
    write_input(input_dir)
    apps = {}
    for variant, settings in VARIANTS.items():
        log_dir = os.path.join(out, variant)
        spark = session(log_dir, settings)
        run_query(spark, input_dir, os.path.join(out, "checkpoints", variant))
        apps[variant] = spark.sparkContext.applicationId
        shutil.copytree(log_dir, os.path.join(out, "inprogress", variant))
        spark.stop()
        # The next builder must not find this session's options or context.
        SparkSession._instantiatedSession = None
        SparkSession._activeSession = None
    print(json.dumps(apps))


if __name__ == "__main__":
    main(*sys.argv[1:])
