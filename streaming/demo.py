"""The demo job: live scooter telemetry, a watermarked windowed count, the monitor attached."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from streaming.generator import follow
from streaming.log import PartitionedLog

QUERY_NAME = "scooter_telemetry_windows"


@dataclass(frozen=True)
class DemoOptions:
    """What `wmon demo` runs: where, for how long, and how much data."""

    workdir: Path
    seconds: int = 0
    partitions: int = 4
    rate: float = 200.0
    backlog_seconds: int = 30
    max_offsets_per_trigger: int = 500
    database_url: str | None = None


def spark_session(app_name: str = "wmon-demo") -> Any:
    """A local SparkSession whose Python workers use this interpreter."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from streaming.partitioned_log import register

    spark = (
        SparkSession.builder.master("local[*]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


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


def run_demo(options: DemoOptions) -> None:
    """Run the demo until Ctrl-C (or options.seconds), printing what the monitor stores."""
    import monitor

    workdir = options.workdir.resolve()
    log_path, checkpoint = workdir / "log", workdir / "checkpoint"
    stop = threading.Event()
    threading.Thread(
        target=follow,
        name="telemetry",
        daemon=True,
        kwargs={
            "log": PartitionedLog(log_path),
            "stop": stop,
            "partitions": options.partitions,
            "rate": options.rate,
            "start_ms": int((time.time() - options.backlog_seconds) * 1000),
        },
    ).start()
    print(
        f"demo: writing scooter telemetry to {log_path} ({options.partitions} partitions, "
        f"{options.rate:g} records/s); starting Spark...",
        flush=True,
    )
    spark = spark_session()
    handle = monitor.attach(spark, options.database_url)
    query = (
        windowed_counts(spark, log_path, options.max_offsets_per_trigger)
        .writeStream.queryName(QUERY_NAME)
        .format("noop")
        .outputMode("append")
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="1 second")
        .start()
    )
    print(f"demo: query {QUERY_NAME} ({query.id}) is monitored in {handle.database_url}")
    print(
        f"demo: running for {options.seconds} s"
        if options.seconds
        else "demo: press Ctrl-C to stop",
        flush=True,
    )
    try:
        _watch(query, handle, options.seconds)
    finally:
        stop.set()
        stop_between_batches(query)
        detached = handle.detach()
        spark.stop()
        _print_summary(handle, detached)


def stop_between_batches(query: Any, timeout: float = 15.0) -> None:
    """Stop a query once its running batch is done, so Spark does not abort a write midway."""
    deadline = time.monotonic() + timeout
    while query.isActive and query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(0.05)
    query.stop()


def _interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def _watch(query: Any, handle: Any, seconds: int) -> None:
    """Print a line per batch, read back from the store, until stopped."""
    signal.signal(signal.SIGTERM, _interrupt)
    deadline = time.monotonic() + seconds if seconds else None
    printed = -1
    try:
        while query.isActive and (deadline is None or time.monotonic() < deadline):
            progress = query.lastProgress
            if progress and progress["batchId"] != printed:
                printed = progress["batchId"]
                handle.flush(5)
                print(batch_line(handle.engine, str(query.id), printed), flush=True)
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("\ndemo: stopping", flush=True)


def batch_line(engine: sa.Engine, query_id: str, batch_id: int) -> str:
    """One line about a stored batch: its watermark, rows and each partition's offset lag."""
    from monitor.store.models import Batch
    from monitor.store.reads import batch_partitions
    from monitor.tables import iso_time

    with so.Session(engine) as session:
        batch = session.scalars(
            sa.select(Batch).where(Batch.query_id == query_id, Batch.batch_id == batch_id)
        ).first()
        if batch is None:
            return f"batch {batch_id}: not stored yet"
        lags = ", ".join(
            f"{p.partition}={p.offset_lag}" for p in batch_partitions(session, query_id, batch_id)
        )
        return (
            f"batch {batch_id}: watermark {iso_time(batch.watermark_ms)}, "
            f"{batch.num_input_rows} rows, offset lag {lags or '-'}"
        )


def _print_summary(handle: Any, detached: bool) -> None:
    stats = handle.stats()
    unwritten = "" if detached else f" ({stats.pending} could not be written)"
    print(f"demo: stored {stats.written} events in {handle.database_url}{unwritten}")
    print(
        f"demo: inspect them with: wmon queries | wmon batches {QUERY_NAME} | "
        f"wmon partitions {QUERY_NAME}"
    )
