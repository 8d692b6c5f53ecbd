"""The collect path's figures: the listener's time per progress event and the store's sustained
ingest rate through the writer."""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Sequence

from monitor.collect.progress import parse_progress
from monitor.collect.spark_events import PROGRESS
from monitor.collect.writer import StoreWriter
from monitor.spark.listener import WatermarkListener
from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import upgrade
from tests.support.databases import scratch_database
from tests.support.synthetic import synthetic_progress


def milliseconds(samples: Sequence[float]) -> str:
    """p50, p99 and max of timings in seconds, as milliseconds."""
    if not samples:
        # A short --spark-seconds on a busy machine may end before a progress event arrives.
        return "no samples"
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"p50 {statistics.median(ordered) * 1000:.3f} ms, p99 {p99 * 1000:.3f} ms, "
        f"max {ordered[-1] * 1000:.3f} ms"
    )


def progress_events(count: int, partitions: int, instrumented: bool = False) -> list[str]:
    """`count` listener events of one query, as JSON, one batch a second from now."""
    query_id, run_id, now_ms = str(uuid.uuid4()), str(uuid.uuid4()), int(time.time() * 1000)
    return [
        json.dumps(
            {
                "progress": synthetic_progress(
                    query_id, run_id, batch, partitions, now_ms + batch * 1000, instrumented
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
    for text in progress_events(count, partitions):
        listener.handle(PROGRESS, functools.partial(json.loads, text))
    writer.close(timeout=600)
    engine.dispose()
    return list(listener.times.recent)


def ingest_rate(
    database_url: str, count: int, partitions: int, instrumented: bool = False
) -> tuple[float, float]:
    """Batches and partition rows written per second through the writer, sustained; with the
    instrumented operator's figures, each batch has a second row per partition."""
    engine = create_engine(database_url)
    upgrade(engine)
    batches = [
        parse_progress(json.loads(text)["progress"])
        for text in progress_events(count, partitions, instrumented)
    ]
    writer = StoreWriter(engine, capacity=count + 1)
    started = time.perf_counter()
    for batch in batches:
        writer.submit(batch)
    if not writer.close(timeout=3600):
        raise RuntimeError(f"the writer did not finish: {writer.stats()}")
    elapsed = time.perf_counter() - started
    engine.dispose()
    return count / elapsed, count * partitions / elapsed


def collector_figures(args: argparse.Namespace) -> None:
    """The listener's time per event and the store's sustained ingest, on SQLite and PostgreSQL."""
    with tempfile.TemporaryDirectory(prefix="wmon-bench-") as folder:
        sqlite_url = f"sqlite:///{folder}/bench.db"
        print(f"listener, {args.events} progress events x {args.partitions} partitions:")
        print(
            "  handling per event:",
            milliseconds(listener_time(sqlite_url, args.events, args.partitions)),
        )
        print_ingest("SQLite", f"sqlite:///{folder}/ingest.db", args)
    if not args.no_postgres:
        with scratch_database(args.postgres_url, "wmon_bench") as url:
            print_ingest("PostgreSQL", url, args)


def print_ingest(store: str, database_url: str, args: argparse.Namespace) -> None:
    """The store's sustained ingest of one query, plain, then of another with the instrumented
    operator's figures into the same store."""
    for instrumented in (False, True):
        batches, rows = ingest_rate(database_url, args.events, args.partitions, instrumented)
        what = "instrumented, an event-time row per partition too" if instrumented else "offsets"
        print(
            f"store ingest, {store} ({what}): {batches:,.0f} batches/s = "
            f"{rows:,.0f} partition rows/s"
        )
