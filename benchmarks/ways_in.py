"""`python -m benchmarks`, the three ways in: the JVM listener's time on Spark's listener bus
thread, the collector's throughput over HTTP, and the speed of an event-log backfill."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.collect_path import milliseconds
from tests.support.databases import scratch_database

MB = 1_000_000


def ways_in_figures(args: argparse.Namespace, spark: Any = None) -> None:
    """Print the figures of the three ways in; the JVM listener's in `spark`, if given, else in
    a session of its own."""
    if args.spark_seconds > 0:
        listener_figures(args.spark_seconds, spark)
    collector_figures(args)
    backfill_figures(args)


def listener_figures(seconds: int, spark: Any = None) -> None:
    """The JVM listener's time per callback on Spark's bus, in a real query of `seconds`."""
    from benchmarks.jvm_listener import bus_times, spark_session

    print(
        f"JVM listener on Spark's listener bus, {seconds} s of rate -> watermark -> "
        "dropDuplicates -> noop (100 ms trigger), posting to a collector over SQLite:",
        flush=True,
    )
    own = spark is None
    session = spark_session() if own else spark
    try:
        times = bus_times(session, seconds)
    finally:
        if own:
            session.stop()
    stats = times.stats
    print(f"  time per callback, {len(times.seconds)} callbacks:", milliseconds(times.seconds))
    print(
        f"  delivered {stats['delivered']} of {stats['queued']} events queued "
        f"(dropped {stats['dropped']}, rejected {stats['rejected']}, failures {stats['failures']})"
    )


def collector_figures(args: argparse.Namespace) -> None:
    """The collector's throughput over HTTP into SQLite and, unless skipped, PostgreSQL."""
    from benchmarks.http_ingest import ingest_rate

    count, partitions, per_request = args.events, args.partitions, args.request_events
    print(
        f"collector over HTTP, {count} progress events x {partitions} partitions, "
        f"{per_request} per request, one client:",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="wmon-bench-") as folder:
        rate = ingest_rate(f"sqlite:///{folder}/collector.db", count, partitions, per_request)
        _print_rate("SQLite", rate, partitions)
    if not args.no_postgres:
        with scratch_database(args.postgres_url, "wmon_bench") as url:
            _print_rate("PostgreSQL", ingest_rate(url, count, partitions, per_request), partitions)


def _print_rate(store: str, events_per_s: float, partitions: int) -> None:
    print(
        f"  {store}: {events_per_s:,.0f} events/s = "
        f"{events_per_s * partitions:,.0f} partition rows/s",
        flush=True,
    )


def backfill_figures(args: argparse.Namespace) -> None:
    """The speed of one Ingester step over a finished application's zstd event log."""
    from benchmarks.event_log import backfill

    with tempfile.TemporaryDirectory(prefix="wmon-bench-") as folder:
        done = backfill(Path(folder), args.events, args.partitions)
    log = done.log
    print(
        f"event-log backfill into SQLite, {args.events} batches x {args.partitions} partitions: "
        f"{log.lines:,} lines ({log.streaming_events:,} streaming events), "
        f"{log.compressed_bytes / MB:.2f} MB zstd ({log.text_bytes / MB:.1f} MB of text):"
    )
    print(
        f"  {done.events / done.seconds:,.0f} events/s, {done.lines / done.seconds:,.0f} lines/s, "
        f"{log.compressed_bytes / MB / done.seconds:.2f} MB/s compressed "
        f"({log.text_bytes / MB / done.seconds:.1f} MB/s of text), {done.seconds:.3f} s",
        flush=True,
    )
