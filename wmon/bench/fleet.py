"""`wmon bench --fleet N`: can one PostgreSQL store keep up with N queries?

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

from monitor.collect.progress import parse_progress
from monitor.store.engine import create_engine
from monitor.store.migrate import upgrade
from monitor.store.scratch import scratch_database
from monitor.store.writes import write_events
from wmon.bench.live import QUERY, Deliveries, delivered, percentiles, served, watching
from wmon.bench.synthetic import synthetic_progress

GROUP_SIZE = 100  # events a writer stores in one transaction, as the writer's group
START_DELAY_S = 5.0  # for every writer process to be running when the first second is due
KEEPS_UP_S = 1.0


def query_ids(count: int) -> list[str]:
    """The fleet's query ids; the first is the one the clients watch."""
    return [QUERY] + [f"bench-fleet-{n:04d}" for n in range(1, count)]


def write_share(
    database_url: str,
    queries: list[str],
    partitions: int,
    first_due: float,
    seconds: int,
    first_batch: int = 1,
) -> tuple[list[float], dict[int, float]]:
    """In a writer process: a batch of each of `queries` every second from `first_due`,
    numbered from `first_batch`; the write lag of each batch, and when the watched query's
    batches were committed."""
    engine = create_engine(database_url)
    lags: list[float] = []
    watched: dict[int, float] = {}
    try:
        with engine.connect():
            pass  # connected before the first second is due
        for second in range(seconds):
            batch_id, due = first_batch + second, first_due + second
            time.sleep(max(0.0, due - time.time()))
            at_ms = int(due * 1000)
            events = [
                parse_progress(synthetic_progress(q, q, batch_id, partitions, at_ms))
                for q in queries
            ]
            for start in range(0, len(events), GROUP_SIZE):
                write_events(engine, events[start : start + GROUP_SIZE])
                committed = time.time()
                lags += [committed - due] * len(events[start : start + GROUP_SIZE])
                if QUERY in queries[start : start + GROUP_SIZE]:
                    watched[batch_id] = committed
    finally:
        engine.dispose()
    return lags, watched


def _writer(args: tuple[str, list[str], int, float, int], results: Any) -> None:
    results.put(write_share(*args))


def run_fleet(
    database_url: str, size: int, writers: int, seconds: int, args: argparse.Namespace
) -> tuple[list[float], Deliveries]:
    """The write lags of every batch and the watched query's deliveries, for `size` queries."""
    engine = create_engine(database_url)
    upgrade(engine)
    engine.dispose()
    ids = query_ids(size)
    shares = [ids[n::writers] for n in range(writers)]
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    with served(database_url) as url:
        # The watched query exists before the clients subscribe to it.
        write_share(database_url, [QUERY], args.partitions, time.time(), 1, first_batch=0)
        with watching(url, args.clients, args.client_processes) as collect:
            first_due = time.time() + START_DELAY_S
            processes = [
                context.Process(
                    target=_writer,
                    args=((database_url, share, args.partitions, first_due, seconds), results),
                )
                for share in shares
                if share
            ]
            for process in processes:
                process.start()
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
