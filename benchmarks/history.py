"""`python -m benchmarks`, history: the time a History page takes to open a day of 64 partitions.

The store is filled in bulk (tests/support/bulk_history.py) with one query's 1-second batches; the
SQLite file is kept under var/bench/ and reused, migrated when the schema changed. The page's
requests go over HTTP to the real app in a threaded server, as a browser sends them: the page,
the query (to find the newest batch), then the batches and the partition history at once.
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import sqlalchemy as sa

from benchmarks.fetching import fetched
from monitor.store.schema.engine import create_engine, display_url
from monitor.store.schema.migrate import upgrade
from monitor.store.tiers.prune import Retention
from tests.support.bulk_history import fill
from tests.support.databases import scratch_database
from tests.support.serving import served

QUERY = "bench-history"
START_MS = 1_795_000_000_000
STEP_MS = 1_000
# The bench's store holds a fixed day: the server must not prune it as it ages.
KEEP_DAYS = 36_500
REQUESTS = ("page", "query", "batches", "partitions/history")


def sqlite_store(folder: Path, hours: int, partitions: int) -> tuple[str, float | None]:
    """The URL of the cached SQLite store of `hours` of history, migrated to the newest schema,
    and the seconds spent filling it (None when it was there already)."""
    path = folder / f"history-{hours}h-{partitions}p.db"
    if path.exists():
        engine = create_engine(f"sqlite:///{path}")
        upgrade(engine)
        engine.dispose()
        return f"sqlite:///{path}", None
    building = path.with_suffix(".building")
    for left in ("", "-wal", "-shm"):  # of a fill that was interrupted
        Path(f"{building}{left}").unlink(missing_ok=True)
    seconds = fill_store(f"sqlite:///{building}", hours, partitions)
    building.rename(path)
    return f"sqlite:///{path}", seconds


def fill_store(database_url: str, hours: int, partitions: int) -> float:
    """Migrate an empty store and fill it with `hours` of 1-second batches; seconds it took."""
    engine = create_engine(database_url)
    upgrade(engine)
    started = time.perf_counter()
    fill(engine, QUERY, START_MS, hours * 3_600_000 // STEP_MS, partitions, STEP_MS)
    if engine.dialect.name == "postgresql":
        # As autovacuum would have done by the time a day is stored: statistics for the
        # planner, and rows marked visible, or the first reads would pay for that.
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(sa.text("VACUUM ANALYZE"))
    engine.dispose()
    return time.perf_counter() - started


def open_day(base: str, hours: int, points: int) -> dict[str, float]:
    """Open the History page on the whole range, as the browser does; seconds per request."""
    query = f"{base}/api/queries/{QUERY}"
    span = f"from={START_MS}&to={START_MS + hours * 3_600_000}&points={points}"
    started = time.perf_counter()
    timings = {"page": fetched(f"{base}/queries/{QUERY}/history"), "query": fetched(query)}
    with ThreadPoolExecutor(2) as pool:
        both = pool.map(fetched, [f"{query}/batches?{span}", f"{query}/partitions/history?{span}"])
        timings["batches"], timings["partitions/history"] = both
    timings["total"] = time.perf_counter() - started
    return timings


def history_times(
    database_url: str, hours: int, points: int, rounds: int = 4
) -> list[dict[str, float]]:
    """Open the page `rounds` times on a freshly started app: the first is cold."""
    with served(
        {"DATABASE_URL": database_url, "RETENTION": Retention(24 * KEEP_DAYS, KEEP_DAYS, KEEP_DAYS)}
    ) as base:
        return [open_day(base, hours, points) for _ in range(rounds)]


def history_figures(args: argparse.Namespace) -> None:
    """Measure on the cached SQLite store and, unless skipped, on PostgreSQL; print the figures."""
    hours, partitions, points = args.history_hours, args.partitions, args.history_points
    print(
        f"History page, {hours} h of 1-second batches x {partitions} partitions, "
        f"{points} points, over HTTP:",
        flush=True,
    )
    url, seconds = sqlite_store(args.cache, hours, partitions)
    built = "cached" if seconds is None else f"filled in {seconds:.0f} s"
    print(f"  SQLite ({built}: {display_url(url)})", flush=True)
    report(history_times(url, hours, points))
    if not args.no_postgres:
        with scratch_database(args.postgres_url, "wmon_bench") as url:
            seconds = fill_store(url, hours, partitions)
            print(f"  PostgreSQL (filled in {seconds:.0f} s)", flush=True)
            report(history_times(url, hours, points))


def report(rounds: list[dict[str, float]]) -> None:
    """Print the cold open and the median of the warm ones, request by request."""
    cold, warm = rounds[0], rounds[1:]
    for name in (*REQUESTS, "total"):
        again = statistics.median(r[name] for r in warm)
        print(f"    {name:<20} cold {cold[name] * 1000:6.0f} ms, warm {again * 1000:6.0f} ms")
