"""`python -m benchmarks`, live: how long a stored batch takes to reach 100 connected browsers,
or 1,000 spread over several `wmon serve` processes on one store (`--servers`).

Each `wmon serve` runs in a process of its own on a fresh store. The clients, real Socket.IO
clients, are spread over a few processes, each running its share on one asyncio event loop
(a thread per client would spend the machine's cores switching between them), and subscribe
to one query's room; with several servers, each client process connects to one of them in
turn. This process is the writer: it stores one batch
of 64 partitions a second through the real write path and notes when each was committed.
A delivery's latency is the time it arrived at a client minus the time its batch was committed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from multiprocessing.synchronize import Event as EventType
from typing import IO, Any

from monitor.collect.progress import parse_progress
from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import upgrade
from monitor.store.write.writes import write_events
from tests.support.databases import scratch_database
from tests.support.synthetic import synthetic_progress
from wmon.options import CliError

QUERY = "bench-live"
# Where several servers share the live push today (web.live.relay): a channel of its own each run.
MESSAGE_QUEUE = "redis://127.0.0.1:6379/0"
START_S = 30.0
SETTLE_S = 3.0
# What one client received: (batch id, epoch seconds) per `batch` event.
Arrivals = list[tuple[int, float]]


@dataclass
class Deliveries:
    """What reached the clients: each delivery's latency and, per batch, the first client's
    (the time to notice and read the batch, before it is sent to every client), in seconds."""

    latencies: list[float]
    first: list[float]
    expected: int

    def summary(self) -> str:
        """p50, p95 and max, the share delivered, and the first clients' p50."""
        return (
            f"{percentiles(self.latencies)}; {len(self.latencies):,} of {self.expected:,} "
            f"deliveries; the first client of each batch: {percentiles(self.first)}"
        )


def percentiles(seconds: list[float]) -> str:
    """p50, p95 and max of durations in seconds, as whole milliseconds."""
    ordered = sorted(seconds) or [float("nan")]
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return (
        f"p50 {statistics.median(ordered) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
        f"max {ordered[-1] * 1000:.0f} ms"
    )


def free_port() -> int:
    """A local TCP port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def store_batch(engine: Any, batch_id: int, partitions: int) -> float:
    """Store one batch, stamped with the time now, through the real write path; when it was
    committed."""
    doc = synthetic_progress(QUERY, QUERY, batch_id, partitions, time.time_ns() // 1_000_000)
    write_events(engine, [parse_progress(doc)])
    return time.time()


def _serve(
    database_url: str, port: int, log: IO[bytes], environ: Mapping[str, str]
) -> subprocess.Popen[bytes]:
    """`wmon serve` on the store, once it answers; what it prints goes to `log`."""
    server = subprocess.Popen(
        [sys.executable, "-m", "wmon", "serve", "--port", str(port)]
        + ["--database-url", database_url],
        stdout=log,
        stderr=log,
        env=environ,
    )
    deadline = time.monotonic() + START_S
    while not _answers(port):
        if time.monotonic() > deadline or server.poll() is not None:
            server.kill()
            log.seek(0)
            said = log.read().decode(errors="replace")[-2_000:]
            raise RuntimeError(f"wmon serve did not answer within {START_S:.0f} s: {said}")
        time.sleep(0.2)
    return server


def _answers(port: int) -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/queries", timeout=5).read()
    except OSError:
        return False
    return True


def clients(url: str, count: int, ready: Any, stop: EventType, results: Any) -> None:
    """In a process of its own: `count` clients subscribed to the query, on one event loop;
    what each received, once `stop` is set. The process is ended from outside, connected:
    leaving the loop would close every client's session on the way out."""
    asyncio.run(_subscribed(url, count, ready, stop, results))


async def _subscribed(url: str, count: int, ready: Any, stop: EventType, results: Any) -> None:
    import socketio

    received: list[Arrivals] = []
    for _ in range(count):
        arrivals: Arrivals = []
        client = socketio.AsyncClient(reconnection=False)
        client.on("batch", lambda data, into=arrivals: into.append((_batch_id(data), time.time())))
        await client.connect(url, wait_timeout=30)
        await client.call("subscribe", {"query": QUERY, "after_batch": None}, timeout=30)
        received.append(arrivals)
    ready.put(count)
    await asyncio.to_thread(stop.wait)
    results.put(json.dumps(received))
    await asyncio.Event().wait()


def _batch_id(data: dict[str, Any]) -> int:
    batch_id: int = data["batch"]["batch_id"]
    return batch_id


def measure(
    database_url: str, count: int, processes: int, seconds: int, partitions: int, servers: int = 1
) -> Deliveries:
    """Latency from commit to client, over `seconds` batches to `count` subscribed clients of
    `servers` processes serving the store."""
    engine = create_engine(database_url)
    upgrade(engine)
    store_batch(engine, 0, partitions)
    environ = {}
    if servers > 1:
        channel = f"wmon-bench-{uuid.uuid4().hex[:8]}"
        environ = {"WMON_MESSAGE_QUEUE": MESSAGE_QUEUE, "WMON_MESSAGE_QUEUE_CHANNEL": channel}
    try:
        with ExitStack() as stack:
            urls = [stack.enter_context(served(database_url, environ)) for _ in range(servers)]
            collect = stack.enter_context(watching(urls, count, processes))
            committed = _write(engine, seconds, partitions)
            time.sleep(SETTLE_S)
            received = collect()
    finally:
        engine.dispose()
    return delivered(committed, received)


@contextmanager
def served(database_url: str, environ: Mapping[str, str] | None = None) -> Iterator[str]:
    """`wmon serve` on the store in a process of its own (with `environ` added to this
    process's environment), for a with-block; its address."""
    port = free_port()
    with tempfile.TemporaryFile() as log:
        server = _serve(database_url, port, log, {**os.environ, **(environ or {})})
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.terminate()
            server.wait(timeout=30)


@contextmanager
def watching(
    urls: Sequence[str], count: int, processes: int
) -> Iterator[Callable[[], list[Arrivals]]]:
    """`count` subscribed clients in `processes` processes, each process's clients connected
    to one of the servers at `urls` in turn; a function that stops them and returns, client by
    client, the batches each received and when."""
    context = multiprocessing.get_context("spawn")
    ready, results, stop = context.Queue(), context.Queue(), context.Event()
    shares = [count // processes + (i < count % processes) for i in range(processes)]
    groups = [
        context.Process(
            target=clients, args=(urls[i % len(urls)], n, ready, stop, results), daemon=True
        )
        for i, n in enumerate(shares)
        if n
    ]

    def collect() -> list[Arrivals]:
        stop.set()
        return [client for _ in groups for client in json.loads(results.get(timeout=60))]

    for group in groups:
        group.start()
    try:
        for _ in groups:
            ready.get(timeout=120)
        yield collect
    finally:
        # Once they have answered, the processes end with their connections, with no goodbyes:
        # a client's disconnect waits up to 3 s for the server's close frame.
        for group in groups:
            group.terminate()
            group.join()


def _write(engine: Any, seconds: int, partitions: int) -> dict[int, float]:
    """One batch a second, on the second; when each was committed, by batch id."""
    committed = {}
    started = time.monotonic()
    for batch_id in range(1, seconds + 1):
        time.sleep(max(0.0, started + batch_id - time.monotonic()))
        committed[batch_id] = store_batch(engine, batch_id, partitions)
    return committed


def delivered(committed: dict[int, float], received: list[Arrivals]) -> Deliveries:
    """The latency of each delivery of a committed batch, and of each batch's first."""
    by_batch: dict[int, list[float]] = {}
    for arrivals in received:
        for batch_id, at in arrivals:
            if batch_id in committed:
                by_batch.setdefault(batch_id, []).append(at - committed[batch_id])
    latencies = [latency for batch in by_batch.values() for latency in batch]
    first = [min(batch) for batch in by_batch.values()]
    return Deliveries(latencies, first, len(committed) * len(received))


def live_figures(args: argparse.Namespace) -> None:
    """Measure on a fresh SQLite store and, unless skipped, on PostgreSQL; print the figures."""
    print(
        f"store to browser, {args.clients} Socket.IO clients in {args.client_processes} "
        f"processes, a batch of {args.partitions} partitions a second for {args.live_seconds} s:",
        flush=True,
    )
    sizes = (args.clients, args.client_processes, args.live_seconds, args.partitions)
    with tempfile.TemporaryDirectory(prefix="wmon-bench-") as folder:
        print("  SQLite:", measure(f"sqlite:///{folder}/live.db", *sizes).summary(), flush=True)
    if not args.no_postgres:
        with scratch_database(args.postgres_url, "wmon_bench") as url:
            print("  PostgreSQL:", measure(url, *sizes).summary(), flush=True)


def servers_figures(args: argparse.Namespace) -> None:
    """Measure `--servers` processes serving one scratch PostgreSQL database, the clients
    spread over them; print the figures."""
    if args.client_processes % args.servers:
        raise CliError("--client-processes must be a multiple of --servers")
    print(
        f"store to browser through {args.servers} `wmon serve` on one PostgreSQL store, "
        f"{args.clients} Socket.IO clients in {args.client_processes} processes, a batch of "
        f"{args.partitions} partitions a second for {args.live_seconds} s:",
        flush=True,
    )
    sizes = (args.clients, args.client_processes, args.live_seconds, args.partitions)
    with scratch_database(args.postgres_url, "wmon_bench") as url:
        print("  PostgreSQL:", measure(url, *sizes, servers=args.servers).summary(), flush=True)
