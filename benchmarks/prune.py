"""`python -m benchmarks`, pruning: how long a listener's writes wait while a prune deletes hours
of history, with the pruner's pauses between its transactions and without them.

Each run fills a fresh store in bulk (tests/support/bulk_history.py) with one query's 1-second
batches, all older than the cutoff; while `prune` deletes them (with the cutoffs of a prune at
that time, which keeps a batch stored since whatever its time: the filled ones have no stored
time), a writer stores another query's batches through the real write path, ten a second, on an
engine of its own, as a listener in another process would. A write's time runs from its start to
its commit.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from monitor.collect.progress import parse_progress
from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import upgrade
from monitor.store.tiers.prune import Cutoffs, prune
from monitor.store.write.writes import write_event
from tests.support.bulk_history import fill
from tests.support.databases import scratch_database
from tests.support.synthetic import synthetic_progress

OLD, LIVE = "bench-prune-old", "bench-prune-live"
START_MS = 1_795_000_000_000
WRITE_EVERY_S = 0.1
# How long a fleet's writers run before the expiry, for their times without it.
BEFORE_S = 15.0


@dataclass
class PruneRun:
    """One prune beside a writer: what it deleted, how long it took, and the writes meanwhile."""

    batches: int
    transactions: int
    seconds: float
    writes: list[float]


def prune_beside_a_writer(database_url: str, hours: int, partitions: int, pause: bool) -> PruneRun:
    """Fill the empty store at `database_url` with `hours` of old history, then prune it all
    while a writer stores live batches; without the pruner's pauses unless `pause`."""
    engine = create_engine(database_url)
    upgrade(engine)
    batches = hours * 3_600
    fill(engine, OLD, START_MS, batches, partitions)
    cutoff_ms = START_MS + batches * 1_000
    sleep: Callable[[float], None] = time.sleep if pause else _no_pause
    with _writing(database_url, partitions, cutoff_ms, 1) as writes:
        started = time.perf_counter()
        cutoffs = Cutoffs(cutoff_ms, cutoff_ms, cutoff_ms, stored_ms=cutoff_ms)
        pruned = prune(engine, cutoffs, sleep=sleep)
        seconds = time.perf_counter() - started
    engine.dispose()
    during = _begun_within(writes, started, seconds)
    return PruneRun(pruned.deleted["batches"], pruned.transactions, seconds, during)


def expire_a_fleet_day(
    database_url: str, queries: int, every_ms: int, partitions: int, writers: int
) -> tuple[PruneRun, list[float]]:
    """Fill the empty PostgreSQL store at `database_url` with a day of `queries` queries'
    batches, one every `every_ms`, ten days ago; then expire that day (store.day_partitions)
    while `writers` writers store live batches of queries of their own. The prune, and the
    writes of as long a time before it, for comparison."""
    engine = create_engine(database_url)
    upgrade(engine)
    day_ms = 86_400_000
    day_start = (int(time.time() * 1000) // day_ms - 10) * day_ms
    for query in range(queries):
        fill(engine, f"{OLD}-{query}", day_start, day_ms // every_ms, partitions, step_ms=every_ms)
    with _writing(database_url, partitions, int(time.time() * 1000), writers) as writes:
        time.sleep(BEFORE_S)
        started = time.perf_counter()
        pruned = prune(engine, Cutoffs(day_start + day_ms, 0, 0, stored_ms=day_start + day_ms))
        seconds = time.perf_counter() - started
    engine.dispose()
    before = min(seconds, BEFORE_S)
    return (
        PruneRun(
            pruned.deleted["batches"],
            pruned.transactions,
            seconds,
            _begun_within(writes, started, seconds),
        ),
        _begun_within(writes, started - before, before),
    )


def _no_pause(_seconds: float) -> None:
    """The pruner's transactions back to back."""


@contextmanager
def _writing(
    database_url: str, partitions: int, start_ms: int, writers: int
) -> Iterator[list[tuple[float, float]]]:
    """`writers` writers, each storing a batch of a query of its own every WRITE_EVERY_S while
    the with-block runs; every write's start (time.perf_counter) and seconds."""
    done = threading.Event()
    writes: list[tuple[float, float]] = []
    threads = [
        threading.Thread(
            target=_write_live_batches,
            args=(database_url, f"{LIVE}-{writer}", partitions, start_ms, done, writes),
        )
        for writer in range(writers)
    ]
    for thread in threads:
        thread.start()
    try:
        yield writes
    finally:
        done.set()
        for thread in threads:
            thread.join()


def _write_live_batches(
    database_url: str,
    query_id: str,
    partitions: int,
    start_ms: int,
    done: threading.Event,
    writes: list[tuple[float, float]],
) -> None:
    """Store a batch of `query_id` every WRITE_EVERY_S until `done`, each write's start and
    seconds going to `writes`."""
    engine = create_engine(database_url)
    batch_id = 0
    while not done.is_set():
        at_ms = start_ms + batch_id * 1_000
        doc = synthetic_progress(query_id, f"{query_id}-run", batch_id, partitions, at_ms)
        started = time.perf_counter()
        write_event(engine, parse_progress(doc))
        writes.append((started, time.perf_counter() - started))
        batch_id += 1
        done.wait(WRITE_EVERY_S)
    engine.dispose()


def _begun_within(writes: list[tuple[float, float]], start: float, seconds: float) -> list[float]:
    """The seconds of the writes begun from `start` for `seconds`."""
    return [taken for began, taken in writes if start <= began <= start + seconds]


def describe(run: PruneRun) -> str:
    """One line: the prune, then the writes made meanwhile (p50, p95 and the slowest)."""
    line = f"{run.batches:,} batches in {run.transactions} transactions, {run.seconds:.1f} s"
    return f"{line}; {describe_writes(run.writes)} meanwhile"


def describe_writes(writes: list[float]) -> str:
    """How many writes, with their p50, p95 and the slowest."""
    if not writes:
        return "no writes"
    ordered = sorted(writes)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return (
        f"{len(ordered)} writes: p50 {statistics.median(ordered) * 1000:.0f} ms, "
        f"p95 {p95 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms"
    )


def prune_figures(args: argparse.Namespace) -> None:
    """Prune on SQLite and, unless skipped, PostgreSQL, with and without pauses; print it."""
    hours, partitions = args.prune_hours, args.partitions
    print(
        f"pruning {hours} h of 1-second batches x {partitions} partitions beside a writer "
        f"(a batch of {partitions} partitions every {WRITE_EVERY_S * 1000:.0f} ms):",
        flush=True,
    )
    for pause, label in ((True, ""), (False, ", no pauses")):
        with tempfile.TemporaryDirectory(prefix="wmon-bench-") as folder:
            run = prune_beside_a_writer(f"sqlite:///{folder}/prune.db", hours, partitions, pause)
        print(f"  SQLite{label}: {describe(run)}", flush=True)
        if not args.no_postgres:
            with scratch_database(args.postgres_url, "wmon_bench") as url:
                run = prune_beside_a_writer(url, hours, partitions, pause)
            print(f"  PostgreSQL{label}: {describe(run)}", flush=True)
