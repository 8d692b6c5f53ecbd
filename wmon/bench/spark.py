"""The Spark side's figures: the instrumented operator's overhead and the listener's callback
time in a real streaming run."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from wmon.bench.collector import milliseconds


def spark_figures(args: argparse.Namespace) -> None:
    """The instrumented operator's overhead and the listener in a real Spark run."""
    if args.overhead_records > 0:
        print(
            f"instrumented operator on the scooter pipeline, {args.overhead_records:,} records, "
            "best of 3 runs each:",
            flush=True,
        )
        plain, instrumented = instrument_overhead(args.overhead_records)
        print(
            f"  plain {plain:,.0f} records/s, instrumented {instrumented:,.0f} records/s: "
            f"overhead {100 * (plain / instrumented - 1):.1f}%"
        )
    if args.spark_seconds > 0:
        print(f"real Spark run, {args.spark_seconds} s, {args.partitions} partitions:", flush=True)
        ours, pyspark_path = spark_callback_times(args.spark_seconds, args.partitions)
        print(
            f"  wmon listener callback (Py4J round trip included), {len(ours)} events:",
            milliseconds(ours),
        )
        print(
            f"  PySpark's default listener path, {len(pyspark_path)} progress events:",
            milliseconds(pyspark_path),
        )


def windowed_counts(spark: Any, log_path: Path, max_offsets: int | None) -> Any:
    """Telemetry counted per partition in 10-second event-time windows, 10 s watermark delay."""
    from pyspark.sql import functions as F

    reader = (
        spark.readStream.format("partitioned_log")
        .option("path", str(log_path))
        .option("subscribe", "telemetry")
    )
    if max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", max_offsets)
    return (
        reader.load()
        .withWatermark("timestamp", "10 seconds")
        .groupBy(F.window("timestamp", "10 seconds"), "partition")
        .count()
    )


def spark_callback_times(seconds: int, partitions: int) -> tuple[list[float], list[float]]:
    """Real Spark: our listener's callback times next to PySpark's own event conversion."""
    import pyspark.sql.streaming.listener as pyspark_listener
    from pyspark import SparkContext
    from pyspark.sql.streaming import StreamingQueryListener

    import monitor
    from streaming.demo import spark_session
    from streaming.generator import generate
    from streaming.log import PartitionedLog

    class _NoOpListener(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None: ...
        def onQueryProgress(self, event: Any) -> None: ...
        def onQueryTerminated(self, event: Any) -> None: ...

    class TimedPySparkPath(pyspark_listener.JStreamingQueryListener):
        """PySpark's wrapper, timed: field-by-field conversion, then a no-op callback."""

        times: list[float] = []

        def onQueryProgress(self, jevent: Any) -> None:
            started = time.perf_counter()
            super().onQueryProgress(jevent)
            self.times.append(time.perf_counter() - started)

    work = Path(tempfile.mkdtemp(prefix="wmon-bench-"))
    generate(PartitionedLog(work / "log"), partitions=partitions, records=200_000, rate=1000.0)
    spark = spark_session("wmon-bench")
    baseline = _NoOpListener()
    jvm = SparkContext._jvm
    assert jvm is not None
    baseline._jlistenerobj = jvm.org.apache.spark.sql.streaming.PythonStreamingQueryListenerWrapper(
        TimedPySparkPath(baseline)
    )
    spark.streams.addListener(baseline)
    handle = monitor.attach(spark, f"sqlite:///{work / 'wmon.db'}")
    query = (
        windowed_counts(spark, work / "log", 5_000)
        .writeStream.format("noop")
        .option("checkpointLocation", str(work / "checkpoint"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    time.sleep(seconds)
    query.stop()
    handle.detach()
    spark.streams.removeListener(baseline)
    spark.stop()
    return list(handle.listener.times.recent), TimedPySparkPath.times


def instrument_overhead(records: int, rounds: int = 3) -> tuple[float, float]:
    """Records/s of the scooter pipeline (buffered offline detection), plain and instrumented.

    The two run alternately in one SparkSession, `rounds` times each, and the best run of each
    counts, so that both see the same warm JVM and the same machine load.
    """
    from streaming.demo import spark_session
    from streaming.generator import generate
    from streaming.log import PartitionedLog
    from streaming.scooters import ROCKSDB_PROVIDER, BufferedOfflineDetector, scooter_pipeline

    work = Path(tempfile.mkdtemp(prefix="wmon-overhead-"))
    generate(PartitionedLog(work / "log"), partitions=4, records=records, rate=1000.0)
    spark = spark_session("wmon-overhead")
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
    best = {False: float("inf"), True: float("inf")}
    for round_number in range(rounds):
        for instrumented in (False, True):
            checkpoint = str(work / f"checkpoint-{instrumented}-{round_number}")
            pipeline = scooter_pipeline(
                spark,
                str(work / "log"),
                checkpoint,
                BufferedOfflineDetector(),
                instrumented=instrumented,
            )
            query = (
                pipeline.writeStream.format("noop")
                .outputMode("append")
                .option("checkpointLocation", checkpoint)
                .trigger(availableNow=True)
                .start()
            )
            started = time.perf_counter()
            query.awaitTermination()
            best[instrumented] = min(best[instrumented], time.perf_counter() - started)
    spark.stop()
    return records / best[False], records / best[True]
