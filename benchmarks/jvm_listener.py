"""`python -m benchmarks`, the JVM listener: how long its callbacks hold Spark's listener bus
thread in a real streaming query, while it posts to a real collector.

The listener is built through py4j from a SparkConf, as Spark builds one named in
`spark.sql.streaming.streamingQueryListeners`, and added to the session's listener bus; Spark
calls it on the bus thread as it calls any listener. The times are its own
(`WatermarkListener.callbackNanos()`), read back through py4j after the query stopped.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.http_ingest import TOKEN, collector
from wmon.submit import built_jar

# Long enough for the first batch of the query below, or a few more, on a busy machine.
DELIVERY_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class BusTimes:
    """The listener's callback times on the bus thread and what it delivered."""

    seconds: list[float]
    stats: dict[str, int]


def spark_session() -> Any:
    """A local SparkSession with the listener's jar on its class path."""
    from streaming.demo import spark_session as session

    return session("wmon-bench-jvm-listener", 2, {"spark.jars": str(built_jar())})


def dedup_query(spark: Any, checkpoint: Path) -> Any:
    """rate → watermark → dropDuplicates → noop, a batch every 100 ms: a progress event each."""
    return (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 1000)
        .option("numPartitions", 2)
        .load()
        .withWatermark("timestamp", "10 seconds")
        .dropDuplicates(["value", "timestamp"])
        .writeStream.format("noop")
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="100 milliseconds")
        .start()
    )


def new_listener(spark: Any, url: str) -> Any:
    """A WatermarkListener posting to the collector at `url`, built as Spark builds one."""
    conf = spark._jvm.org.apache.spark.SparkConf(False)
    conf.set("spark.wmon.url", url).set("spark.wmon.token", TOKEN)
    return spark._jvm.wmon.spark.WatermarkListener(conf)


def delivered_all(listener: Any, timeout: float) -> dict[str, int]:
    """The listener's counters once its queue is empty (or the timeout has passed)."""
    deadline = time.monotonic() + timeout
    while True:
        stats = {str(key): int(value) for key, value in dict(listener.stats()).items()}
        if stats["pending"] == 0 or time.monotonic() > deadline:
            return stats
        time.sleep(0.1)


def run_for(query: Any, seconds: float) -> None:
    """Let the query run `seconds`, and at least until its first batch is done (a short run on
    a busy machine would end before it), then stop it."""
    deadline = time.monotonic() + DELIVERY_TIMEOUT_S
    time.sleep(seconds)
    while query.lastProgress is None and time.monotonic() < deadline:
        time.sleep(0.1)
    query.stop()


def bus_times(spark: Any, seconds: int) -> BusTimes:
    """Run the query for `seconds` with a listener posting to a collector over SQLite; the
    listener's callback times in seconds and its counters once all was delivered."""
    with (
        tempfile.TemporaryDirectory(prefix="wmon-bench-jvm-") as folder,
        collector(f"sqlite:///{folder}/collector.db") as base,
    ):
        listener = new_listener(spark, base)
        streams = spark._jsparkSession.streams()
        streams.addListener(listener)
        try:
            run_for(dedup_query(spark, Path(folder) / "checkpoint"), seconds)
            # The terminated event is on its way through the bus: let the bus empty first.
            spark._jsc.sc().listenerBus().waitUntilEmpty(int(DELIVERY_TIMEOUT_S * 1000))
            stats = delivered_all(listener, DELIVERY_TIMEOUT_S)
            nanos = list(listener.callbackNanos())
        finally:
            streams.removeListener(listener)
            listener.close()
    return BusTimes([n / 1e9 for n in nanos], stats)
