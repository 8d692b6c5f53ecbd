"""`python -m benchmarks --fleet N`: can one PostgreSQL store keep up with N queries?

N simulated queries of 64 partitions each report one batch a second, written through the real
write path by several writer processes (each owns a share of the queries and writes each
second's batches in groups, as the writer does); meanwhile `wmon serve` runs on the store,
evaluating the alert rules and pushing one query's batches to Socket.IO clients. A batch's
write lag is its commit minus the second it was due; a delivery's latency is its arrival at
a client minus its batch's commit. The store keeps up when both stay under a second at p95.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from typing import Any

from benchmarks.push import QUERY, Deliveries, delivered, percentiles, served, watching
from monitor.collect.progress import parse_progress
from monitor.events import BatchProgress
from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import upgrade
from monitor.store.write.writes import write_events
from tests.support.databases import scratch_database
from tests.support.synthetic import synthetic_progress

GROUP_SIZE = 100  # events a writer stores in one transaction, as the writer's group
START_DELAY_S = 1.0  # from the last writer being ready to the first second's batches
KEEPS_UP_S = 1.0


def query_ids(count: int) -> list[str]:
    """The fleet's query ids; the first is the one the clients watch."""
    return [QUERY] + [f"bench-fleet-{n:04d}" for n in range(1, count)]


def make_events(
    queries: list[str], partitions: int, first_batch: int, seconds: int, base_s: float
) -> list[list[BatchProgress]]:
    """Each second's batches of `queries`, numbered from `first_batch`, stamped from `base_s`:
    made beforehand, as each query's own listener would have made them, so that a writer's
    time is the store's."""
    return [
        [
            parse_progress(
                synthetic_progress(q, q, first_batch + n, partitions, int((base_s + n) * 1000))
            )
            for q in queries
        ]
        for n in range(seconds)
    ]


def write_seconds(
    database_url: str, seconds_of_events: list[list[BatchProgress]], first_due: float
) -> tuple[list[float], dict[int, float]]:
    """Each second's events when it is due, from `first_due`, in groups; the write lag of each
    batch, and when the watched query's batches were committed."""
    engine = create_engine(database_url)
    lags: list[float] = []
    watched: dict[int, float] = {}
    try:
        with engine.connect():
            pass  # connected before the first second is due
        for second, events in enumerate(seconds_of_events):
            due = first_due + second
            time.sleep(max(0.0, due - time.time()))
            for start in range(0, len(events), GROUP_SIZE):
                group = events[start : start + GROUP_SIZE]
                write_events(engine, group)
                committed = time.time()
                lags += [committed - due] * len(group)
                watched |= {event.batch_id: committed for event in group if event.query_id == QUERY}
    finally:
        engine.dispose()
    return lags, watched


def _writer(
    database_url: str, queries: list[str], partitions: int, seconds: int, channels: Any
) -> None:
    """A writer process: makes its events, says it is ready, waits for the first second's
    time, writes, and answers with what `write_seconds` measured."""
    ready, start, results = channels
    events = make_events(queries, partitions, 1, seconds, time.time())
    ready.put(len(queries))
    results.put(write_seconds(database_url, events, start.get()))


def run_fleet(
    database_url: str, size: int, writers: int, seconds: int, args: argparse.Namespace
) -> tuple[list[float], Deliveries]:
    """The write lags of every batch and the watched query's deliveries, for `size` queries."""
    engine = create_engine(database_url)
    upgrade(engine)
    engine.dispose()
    ids = query_ids(size)
    shares = [share for share in (ids[n::writers] for n in range(writers)) if share]
    context = multiprocessing.get_context("spawn")
    channels = (context.Queue(), context.Queue(), context.Queue())
    ready, start, results = channels
    with served(database_url) as url:
        # The watched query exists before the clients subscribe to it.
        now = time.time()
        write_seconds(database_url, make_events([QUERY], args.partitions, 0, 1, now), now)
        with watching([url], args.clients, args.client_processes) as collect:
            processes = [
                context.Process(
                    target=_writer, args=(database_url, share, args.partitions, seconds, channels)
                )
                for share in shares
            ]
            for process in processes:
                process.start()
            for _ in processes:
                ready.get(timeout=600)
            first_due = time.time() + START_DELAY_S
            for _ in processes:
                start.put(first_due)
            answers = [results.get(timeout=seconds * 10 + 120) for _ in processes]
            for process in processes:
                process.join()
            time.sleep(2.0)
            received = collect()
    lags = [lag for share_lags, _ in answers for lag in share_lags]
    committed = {batch: at for _, watched in answers for batch, at in watched.items()}
    return lags, delivered(committed, received)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] if ordered else float("inf")


def fleet_figures(args: argparse.Namespace) -> None:
    """Each fleet size in turn on a scratch PostgreSQL database; the largest that kept up."""
    sizes = args.fleet
    print(
        f"fleet on PostgreSQL: {', '.join(map(str, sizes))} queries x {args.partitions} "
        f"partitions, a batch a second each for {args.fleet_seconds} s, {args.fleet_writers} "
        f"writer processes, `wmon serve` with {args.clients} clients on one query:",
        flush=True,
    )
    kept_up = 0
    for size in sizes:
        with scratch_database(args.postgres_url, "wmon_bench") as url:
            lags, deliveries = run_fleet(url, size, args.fleet_writers, args.fleet_seconds, args)
        expected = size * args.fleet_seconds
        keeps_up = (
            len(lags) == expected
            and _p95(lags) < KEEPS_UP_S
            and _p95(deliveries.latencies) < KEEPS_UP_S
        )
        kept_up = size if keeps_up else kept_up
        print(
            f"  {size} queries: write lag {percentiles(lags)} ({len(lags):,} of {expected:,} "
            f"batches); push {deliveries.summary()}: "
            f"{'keeps up' if keeps_up else 'falls behind'}",
            flush=True,
        )
    print(f"  the largest fleet kept up with: {kept_up} queries", flush=True)
