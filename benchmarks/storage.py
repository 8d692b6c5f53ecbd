"""`python -m benchmarks --storage`: what the history costs on disk, table by table.

`--events` instrumented batches (default 2,000) of one query with `--partitions` partitions
(default 64), a batch every 10 s, go through the real write path (`write_events`, 50 a transaction)
into a fresh SQLite store and, unless --no-postgres, a scratch PostgreSQL database. Each table's
size with its indexes is then read from the store itself (SQLite's `dbstat`; PostgreSQL's
`pg_total_relation_size` over a table's partitions, TOAST included), divided by the batches, and
projected to 30 days of such a query (259,200 batches) and to a fleet of 500 of them. Then a day of
one query's 1-second batches is expired beside a writer on SQLite, and a day of a 500-query fleet's
batches beside the fleet's writers on PostgreSQL (fresh stores filled in bulk: benchmarks.prune),
and History ranges are opened (benchmarks.tiers).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa

from benchmarks.prune import (
    WRITE_EVERY_S,
    describe,
    describe_writes,
    expire_a_fleet_day,
    prune_beside_a_writer,
)
from benchmarks.scratch import fresh_stores
from monitor.collect.progress import parse_progress
from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import upgrade
from monitor.store.schema.models import Base
from monitor.store.tiers.prune import Retention
from monitor.store.write.writes import write_events
from tests.support.databases import scratch_database
from tests.support.synthetic import synthetic_progress

GROUP_SIZE = 50  # batches stored in one transaction
BATCH_EVERY_MS = 10_000
DAY_MS = 86_400_000
MONTH_BATCHES = 30 * DAY_MS // BATCH_EVERY_MS
FLEET = 500
# The tables that grow with every batch: each batch's own, kept for the batches' retention,
# and the rollups, kept longer; the rest (queries, runs, alerts…) are "other".
DETAIL_TABLES = ("batches", "state_operators", "sources", "batch_offsets", "batch_event_times")
ROLLUP_TABLES = ("partition_minutes", "partition_hours", "query_minutes", "query_hours")
BATCH_TABLES = DETAIL_TABLES + ROLLUP_TABLES
# Batches of one query the default retention keeps (every batch for 48 hours).
KEPT_BATCHES = Retention().batches_hours * 3_600_000 // BATCH_EVERY_MS


def storage_figures(args: argparse.Namespace) -> None:
    """Bytes per batch on each store, table by table, and what a month of them comes to."""
    print(
        f"storage: {args.events:,} instrumented batches of {args.partitions} partitions through "
        f"the write path (one query, a batch every {BATCH_EVERY_MS // 1000} s), then each "
        "table's size with its indexes:",
        flush=True,
    )
    for kind, database_url in fresh_stores(args, "storage"):
        engine = create_engine(database_url)
        try:
            upgrade(engine)
            seconds = _fill(engine, args.events, args.partitions)
            sizes = _table_bytes(engine)
        finally:
            engine.dispose()
        print(f"  {kind} (stored in {seconds:.1f} s): {_summary(sizes, args.events)}", flush=True)
    expiry_figures(args)
    tier_figures(args)


def expiry_figures(args: argparse.Namespace) -> None:
    """SQLite: a day of one query's 1-second batches expired beside a writer (benchmarks.prune),
    and what that pace comes to for a day of a fleet's batches. PostgreSQL: a day of a fleet's
    batches expired by dropping its partitions beside the fleet's writers."""
    fleet_day = FLEET * DAY_MS // BATCH_EVERY_MS
    print(
        f"expiring a day of one query's 1-second batches of {args.partitions} partitions "
        f"({DAY_MS // 1000:,}, as many as {BATCH_EVERY_MS // 1000} queries' "
        f"with a batch every {BATCH_EVERY_MS // 1000} s) beside a writer, with the pruner's "
        "pauses (filled in bulk first, a few minutes):",
        flush=True,
    )
    with _sqlite_store() as url:
        run = prune_beside_a_writer(url, 24, args.partitions, pause=True)
    minutes = run.seconds * fleet_day / run.batches / 60
    print(
        f"  SQLite: {describe(run)}; at that pace a day of {FLEET} such queries "
        f"({fleet_day:,} batches) takes {minutes:.0f} min",
        flush=True,
    )
    if args.no_postgres:
        return
    every_ms, partitions, writers = 600_000, 8, 2
    print(
        f"  PostgreSQL, a day of {FLEET} queries' batches ({every_ms // 60_000} min apart, "
        f"{partitions} partitions) dropped beside {writers} writers of a batch each every "
        f"{WRITE_EVERY_S * 1000:.0f} ms:",
        end=" ",
        flush=True,
    )
    with scratch_database(args.postgres_url, "wmon_bench_storage") as url:
        run, before = expire_a_fleet_day(url, FLEET, every_ms, partitions, writers)
    print(f"{describe(run)}; without a prune: {describe_writes(before)}", flush=True)


def tier_figures(args: argparse.Namespace) -> None:
    """Seconds to open History ranges of 1 hour to a year on a store holding what the default
    retention keeps, and to draw the History page of a day to 30 days (benchmarks.tiers)."""
    from benchmarks.tiers import fill_retained, open_times, page_times

    print(
        f"opening History ranges of one query of {args.partitions} partitions, a batch every "
        f"{BATCH_EVERY_MS // 1000} s, as the default retention keeps it (48 hours of batches, "
        "30 days of minutes, a year of hours), at 800 points, the query's and the partitions' "
        "series:",
        flush=True,
    )
    now_ms = int(time.time() * 1000)
    for kind, database_url in fresh_stores(args, "storage"):
        engine = create_engine(database_url)
        try:
            upgrade(engine)
            started = time.perf_counter()
            fill_retained(engine, args.partitions, now_ms)
            filled = time.perf_counter() - started
        finally:
            engine.dispose()
        opened = "; ".join(
            f"{label} ({tier}) {cold:.2f} s cold, {warm:.2f} s warm"
            for label, tier, cold, warm in open_times(database_url, now_ms)
        )
        print(f"  {kind} (filled in {filled:.0f} s): {opened}", flush=True)
        drawn = "; ".join(
            f"{label} {cold:.2f} s cold, {warm:.2f} s warm"
            for label, cold, warm in page_times(database_url)
        )
        print(f"    the History page drawn in Chromium: {drawn}", flush=True)


def _fill(engine: sa.Engine, batches: int, partitions: int) -> float:
    """Store `batches` instrumented batches of one query; seconds it took."""
    query_id, run_id = str(uuid.uuid4()), str(uuid.uuid4())
    start_ms = (int(time.time() * 1000) // BATCH_EVERY_MS - batches) * BATCH_EVERY_MS
    started = time.perf_counter()
    for first in range(0, batches, GROUP_SIZE):
        events = [
            parse_progress(
                synthetic_progress(
                    query_id,
                    run_id,
                    batch_id,
                    partitions,
                    start_ms + BATCH_EVERY_MS * batch_id,
                    instrumented=True,
                )
            )
            for batch_id in range(first, min(first + GROUP_SIZE, batches))
        ]
        write_events(engine, events)
    return time.perf_counter() - started


def _table_bytes(engine: sa.Engine) -> dict[str, int]:
    """Each of the store's tables' bytes, its indexes (and PostgreSQL's TOAST) included."""
    tables = list(Base.metadata.tables)
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            # dbstat names a page by the table or index it belongs to.
            owners = {
                row.name: row.tbl_name
                for row in connection.execute(
                    sa.text(
                        "SELECT name, tbl_name FROM sqlite_schema WHERE type IN ('table', 'index')"
                    )
                )
            }
            sizes = dict.fromkeys(tables, 0)
            for name, size in connection.execute(
                sa.text("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name")
            ):
                owner = owners.get(name)
                if owner in sizes:
                    sizes[owner] += int(size)
            return sizes
        return {
            table: int(
                connection.execute(
                    sa.text(
                        "SELECT coalesce((SELECT sum(pg_total_relation_size(relid)) "
                        "FROM pg_partition_tree(CAST(:table AS regclass))), "
                        "pg_total_relation_size(CAST(:table AS regclass)))"
                    ),
                    {"table": table},
                ).scalar_one()
            )
            for table in tables
        }


def _summary(sizes: dict[str, int], batches: int) -> str:
    """Bytes a batch in all and by table, the largest first, and the month's projection."""
    per_batch = {table: sizes[table] / batches for table in BATCH_TABLES}
    other = sum(size for table, size in sizes.items() if table not in BATCH_TABLES) / batches
    total = sum(per_batch.values()) + other
    parts = ", ".join(
        f"{table} {_bytes(size)}"
        for table, size in sorted(per_batch.items(), key=lambda item: -item[1])
    )
    month = total * MONTH_BATCHES
    rollups = sum(per_batch[table] for table in ROLLUP_TABLES)
    tiered = (total - rollups) * KEPT_BATCHES + rollups * MONTH_BATCHES
    return (
        f"{_bytes(total)} a batch ({parts}, other tables {_bytes(other)}); 30 days of this "
        f"query, every batch kept: {_bytes(month)}, of {FLEET} such queries: "
        f"{_bytes(month * FLEET)}; with the default retention (every batch 48 h, the rollups "
        f"longer): {_bytes(tiered)}, of {FLEET}: {_bytes(tiered * FLEET)}"
    )


def _bytes(size: float) -> str:
    """A size as people read it: 842 B, 8.3 KB, 10.0 GB (powers of 1,000)."""
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1_000:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1_000
    return f"{size:.1f} TB"


@contextmanager
def _sqlite_store() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="wmon-storage-") as folder:
        yield f"sqlite:///{Path(folder) / 'storage.db'}"
