"""The Spark side's figures: the instrumented operator's overhead (operator.py) and the
listener's callback time in a real streaming run."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.collect_path import milliseconds
from benchmarks.operator import operator_figures


def spark_figures(args: argparse.Namespace) -> None:
    """The instrumented operator's overhead and the listener in a real Spark run."""
    operator_figures(args)
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
