"""`wmon bench`: the listener's time per progress event, the store's sustained ingest rate, the
instrumented operator's overhead, and the dashboard's latency and history (bench_live.py,
bench_history.py)."""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from monitor.listener import WatermarkListener
from monitor.progress import parse_progress
from monitor.store.engine import create_engine
from monitor.store.migrate import upgrade
from monitor.store.scratch import scratch_database
from monitor.writer import StoreWriter

DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"


def add_bench_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of `wmon bench`."""
    parser.add_argument(
        "--events", type=int, default=2_000, help="progress events per measurement (default 2000)"
    )
    parser.add_argument(
        "--partitions", type=int, default=64, help="source partitions per event (default 64)"
    )
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get("WMON_TEST_POSTGRES_URL", DEFAULT_POSTGRES),
        help="a PostgreSQL server where a scratch database may be made",
    )
    parser.add_argument("--no-postgres", action="store_true", help="skip PostgreSQL")
    parser.add_argument(
        "--spark-seconds",
        type=int,
        default=60,
        help="length of the real Spark run (default 60; 0 skips it)",
    )
    parser.add_argument(
        "--overhead-records",
        type=int,
        default=100_000,
        help="records per run of the instrumented-operator overhead test (default 100000; 0 skips)",
    )
    _add_dashboard_arguments(parser)
    return parser


def _add_dashboard_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dashboard",
        action="store_true",
        help="measure only the dashboard: store-to-browser latency and opening a day of history",
    )
    parser.add_argument(
        "--clients",
        type=int,
        default=100,
        help="Socket.IO clients watching one query (default 100; 0 skips the latency test)",
    )
    parser.add_argument(
        "--client-processes",
        type=int,
        default=4,
        help="processes the clients are spread over (default 4)",
    )
    parser.add_argument(
        "--live-seconds",
        type=int,
        default=60,
        help="batches written, one a second, while the clients watch (default 60)",
    )
    parser.add_argument(
        "--history-hours",
        type=int,
        default=24,
        help="hours of 1-second batches the History page opens (default 24; 0 skips)",
    )
    parser.add_argument(
        "--history-points",
        type=int,
        default=800,
        help="points per series (default 800, what a History chart 1,600 pixels wide asks for)",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path("var/bench"),
        help="where the filled SQLite history store is kept for the next run (default var/bench)",
    )


def synthetic_progress(
    query_id: str, run_id: str, batch_id: int, partitions: int, time_ms: int
) -> dict[str, Any]:
    """A progress document shaped like Spark's for a Kafka source with `partitions` partitions."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time_ms / 1000))
    end = {str(p): 1000 * (batch_id + 1) + p for p in range(partitions)}
    return {
        "id": query_id,
        "runId": run_id,
        "name": "bench",
        "timestamp": f"{stamp}.000Z",
        "batchId": batch_id,
        "numInputRows": 1000 * partitions,
        "inputRowsPerSecond": 1000.0,
        "processedRowsPerSecond": 2000.0,
        "durationMs": {"addBatch": 700, "latestOffset": 3, "triggerExecution": 900},
        "eventTime": {
            "min": f"{stamp}.000Z",
            "max": f"{stamp}.500Z",
            "avg": f"{stamp}.250Z",
            "watermark": f"{stamp}.000Z",
        },
        "stateOperators": [
            {
                "operatorName": "stateStoreSave",
                "numRowsTotal": 10,
                "numRowsDroppedByWatermark": 1,
                "memoryUsedBytes": 2048,
                "customMetrics": {},
            }
        ],
        "sources": [
            {
                "description": "KafkaV2[Subscribe[telemetry]]",
                "startOffset": {"telemetry": {p: v - 1000 for p, v in end.items()}},
                "endOffset": {"telemetry": end},
                "latestOffset": {"telemetry": {p: v + 50 for p, v in end.items()}},
                "numInputRows": 1000 * partitions,
            }
        ],
        "sink": {"description": "NoopTable"},
        "observedMetrics": {},
    }


def _ms(samples: Sequence[float]) -> str:
    if not samples:
        # A short --spark-seconds on a busy machine may end before a progress event arrives.
        return "no samples"
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"p50 {statistics.median(ordered) * 1000:.3f} ms, p99 {p99 * 1000:.3f} ms, "
        f"max {ordered[-1] * 1000:.3f} ms"
    )


def _events(count: int, partitions: int) -> list[str]:
    query_id, run_id, now_ms = str(uuid.uuid4()), str(uuid.uuid4()), int(time.time() * 1000)
    return [
        json.dumps(
            {
                "progress": synthetic_progress(
                    query_id, run_id, batch, partitions, now_ms + batch * 1000
                )
            }
        )
        for batch in range(count)
    ]


def listener_time(database_url: str, count: int, partitions: int) -> list[float]:
    """Seconds our listener spends per progress event, with a real writer busy beside it."""
    engine = create_engine(database_url)
    upgrade(engine)
    writer = StoreWriter(engine, capacity=count + 1)
    listener = WatermarkListener(writer.submit)
    for text in _events(count, partitions):
        listener.handle("progress", functools.partial(json.loads, text))
    writer.close(timeout=600)
    engine.dispose()
    return list(listener.times.recent)


def ingest_rate(database_url: str, count: int, partitions: int) -> tuple[float, float]:
    """Batches and partition rows written per second through the writer, sustained."""
    engine = create_engine(database_url)
    upgrade(engine)
    batches = [parse_progress(json.loads(text)["progress"]) for text in _events(count, partitions)]
    writer = StoreWriter(engine, capacity=count + 1)
    started = time.perf_counter()
    for batch in batches:
        writer.submit(batch)
    if not writer.close(timeout=3600):
        raise RuntimeError(f"the writer did not finish: {writer.stats()}")
    elapsed = time.perf_counter() - started
    engine.dispose()
    return count / elapsed, count * partitions / elapsed


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


def run_bench(args: argparse.Namespace) -> None:
    """Run every measurement asked for and print the figures the README quotes."""
    if not args.dashboard:
        collector_figures(args)
    dashboard_figures(args)


def collector_figures(args: argparse.Namespace) -> None:
    """The listener, the store's ingest, the instrumented operator and a real Spark run."""
    with tempfile.TemporaryDirectory(prefix="wmon-bench-") as folder:
        sqlite_url = f"sqlite:///{folder}/bench.db"
        print(f"listener, {args.events} progress events x {args.partitions} partitions:")
        print("  handling per event:", _ms(listener_time(sqlite_url, args.events, args.partitions)))
        batches, rows = ingest_rate(f"sqlite:///{folder}/ingest.db", args.events, args.partitions)
        print(f"store ingest, SQLite: {batches:,.0f} batches/s = {rows:,.0f} partition rows/s")
    if not args.no_postgres:
        with scratch_database(args.postgres_url, "wmon_bench") as url:
            batches, rows = ingest_rate(url, args.events, args.partitions)
            print(
                f"store ingest, PostgreSQL: {batches:,.0f} batches/s = {rows:,.0f} partition rows/s"
            )
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
            f"  wmon listener callback (Py4J round trip included), {len(ours)} events:", _ms(ours)
        )
        print(
            f"  PySpark's default listener path, {len(pyspark_path)} progress events:",
            _ms(pyspark_path),
        )


def dashboard_figures(args: argparse.Namespace) -> None:
    """Store-to-browser latency with many clients, and a History page opening a day."""
    from monitor.bench_history import history_figures
    from monitor.bench_live import live_figures

    if args.clients > 0:
        live_figures(args)
    if args.history_hours > 0:
        history_figures(args)


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
