"""`python -m benchmarks --senders N`: does the collector keep answering when N senders post
at once?

Many jobs' listeners post to one `wmon serve`; after an outage, or when many jobs start
together, they all post as fast as they are answered. So: N senders, each a thread posting its
own query's run (its start, BATCHES batches of PARTITIONS partitions, its end), in order, one
to four events a request, each request as soon as the one before was answered (again after
`Retry-After` when answered 503, as the listeners do), and one request in ten sent twice, as
after an answer lost on the way. Meanwhile a Socket.IO client sits in the overview room, as a
browser on the overview page does (the server reads the changed queries' overview for it
after each commit), and a reader asks for the overview (`GET /api/queries`, what the page
loads first) at once and then every second; once the flood is over, five times more, at
rest. (Each overview costs the server about 0.15 s of CPU: asked four times a second, it
took half of the one core a Python process has.) `wmon serve` runs in a
process of its own on a fresh store (SQLite, then a scratch PostgreSQL database), as an
operator runs it. The target: POST p95 and the overview's p95 under 1 s during the flood.
Afterwards the store must hold each batch exactly once.
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from benchmarks.push import percentiles, served
from benchmarks.scratch import fresh_stores
from monitor.collect.spark_events import PROGRESS, STARTED, TERMINATED, named
from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import upgrade
from monitor.store.schema.models import Batch
from tests.support.synthetic import synthetic_progress

BATCHES = 25  # each sender's query's batches, between its start and its end
PARTITIONS = 16
MOST_PER_REQUEST = 4
RESENT_EVERY = 10  # one request in ten is sent again, as after an answer lost on the way
OVERVIEW_EVERY_S = 1.0  # an operator opening the overview page every second
AT_REST = 5  # overview requests once the flood is over
TOKEN = "wmon-bench-senders-token"
TARGET_S = 1.0
SEED = 46


def query_events(query_id: str, start_ms: int) -> list[dict[str, Any]]:
    """One query's run in Spark's event-log form: its start, BATCHES batches a second apart
    and its end."""
    run_id = str(uuid.uuid4())
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(start_ms / 1000))
    started = {"id": query_id, "runId": run_id, "name": query_id[:8], "timestamp": stamp}
    batches = [
        named(
            PROGRESS,
            {"progress": synthetic_progress(query_id, run_id, n, PARTITIONS, start_ms + n * 1000)},
        )
        for n in range(BATCHES)
    ]
    ended = {"id": query_id, "runId": run_id, "exception": None}
    return [named(STARTED, started), *batches, named(TERMINATED, ended)]


def shares(senders: int, now_ms: int) -> list[list[bytes]]:
    """Each sender's request bodies: its own query's run, in order, one to MOST_PER_REQUEST
    events a request, one request in RESENT_EVERY sent twice."""
    chance = random.Random(SEED)
    start_ms = now_ms - BATCHES * 1000
    dealt: list[list[bytes]] = []
    for _ in range(senders):
        events, bodies = query_events(str(uuid.uuid4()), start_ms), []
        at = 0
        while at < len(events):
            size = chance.randint(1, MOST_PER_REQUEST)
            bodies.append(json.dumps(events[at : at + size]).encode())
            if chance.randrange(RESENT_EVERY) == 0:
                bodies.append(bodies[-1])
            at += size
        dealt.append(bodies)
    return dealt


@dataclass
class Flood:
    """What the senders and the reader saw: each POST's seconds, the 503s, the events the
    answers said were stored, each overview's seconds during the flood and at rest."""

    posts: list[float] = field(default_factory=list)
    unavailable: int = 0
    stored: int = 0
    overview: list[float] = field(default_factory=list)
    at_rest: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def post(url: str, body: bytes, sender: int) -> tuple[float, float | None, int]:
    """Seconds one POST took, the Retry-After of a 503 (None when it was taken), and how many
    events the answer says were stored."""
    request = urllib.request.Request(
        f"{url}/api/ingest",
        data=body,
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {TOKEN}",
            "Wmon-Sender": f"bench-sender-{sender}",
        },
    )
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=600) as answer:
            stored: int = json.load(answer)["stored"]
    except urllib.error.HTTPError as error:
        if error.code != 503:
            raise
        return time.perf_counter() - started, float(error.headers.get("Retry-After", "1")), 0
    return time.perf_counter() - started, None, stored


def send(url: str, bodies: list[bytes], sender: int, flood: Flood) -> None:
    """Post each body until it is taken, one after the other."""
    for body in bodies:
        while True:
            seconds, retry_after, stored = post(url, body, sender)
            with flood.lock:
                flood.posts.append(seconds)
                flood.unavailable += retry_after is not None
                flood.stored += stored
            if retry_after is None:
                break
            time.sleep(retry_after)


def overview(url: str) -> float:
    """Seconds one GET of the overview took."""
    started = time.perf_counter()
    with urllib.request.urlopen(f"{url}/api/queries", timeout=600) as answer:
        answer.read()
    return time.perf_counter() - started


def read_during(url: str, done: threading.Event, flood: Flood) -> None:
    """Ask for the overview at once, then every OVERVIEW_EVERY_S until `done`."""
    while True:
        flood.overview.append(overview(url))
        if done.wait(OVERVIEW_EVERY_S):
            return


@contextmanager
def overview_room(url: str) -> Iterator[list[float]]:
    """A Socket.IO client in the overview room of the server at `url` for a with-block; when
    each overview push reached it."""
    import socketio

    arrived: list[float] = []
    client = socketio.Client(reconnection=False)
    client.on("overview", lambda _data: arrived.append(time.time()))
    client.connect(url, wait_timeout=30)
    client.call("subscribe_overview", timeout=30)
    try:
        yield arrived
    finally:
        client.disconnect()


def flooded(url: str, senders: int) -> tuple[Flood, float]:
    """Run the flood against the collector at `url`; what was seen, and how long it took."""
    bodies = shares(senders, int(time.time() * 1000))
    flood, done = Flood(), threading.Event()
    reader = threading.Thread(target=read_during, args=(url, done, flood))
    threads = [
        threading.Thread(target=send, args=(url, share, n, flood)) for n, share in enumerate(bodies)
    ]
    started = time.perf_counter()
    reader.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    done.set()
    reader.join()
    flood.at_rest = [overview(url) for _ in range(AT_REST)]
    return flood, elapsed


def stored_batches(database_url: str) -> int:
    """Batch rows in the store (one at most per query and batch id)."""
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            rows = connection.scalar(sa.select(sa.func.count()).select_from(Batch))
    finally:
        engine.dispose()
    return rows or 0


def measure(kind: str, database_url: str, senders: int) -> None:
    """Flood a fresh store's collector and print what the POSTs and the overview took."""
    engine = create_engine(database_url)
    upgrade(engine)
    engine.dispose()
    with served(database_url, {"WMON_INGEST_TOKEN": TOKEN}) as url, overview_room(url) as pushed:
        flood, elapsed = flooded(url, senders)
    rows = stored_batches(database_url)
    events = senders * (BATCHES + 2)
    slowest = max(_p95(flood.posts), _p95(flood.overview))
    once = flood.stored == events and rows == senders * BATCHES
    print(
        f"  {kind}, {senders} senders, {len(flood.posts):,} POSTs in {elapsed:.1f} s "
        f"({flood.unavailable} answered 503): POST {percentiles(flood.posts)}; overview "
        f"during {percentiles(flood.overview)} ({len(flood.overview)} asked, {len(pushed)} "
        f"pushed), at rest {percentiles(flood.at_rest)}; {flood.stored:,} of {events:,} "
        f"events answered stored, {rows:,} batches in the store"
        + ("" if once else " (MISMATCH: each event is answered stored once, each batch kept once)")
        + f": {'meets' if slowest < TARGET_S else 'misses'} {TARGET_S:g} s at p95",
        flush=True,
    )


def _p95(seconds: list[float]) -> float:
    ordered = sorted(seconds) or [float("inf")]
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def sender_figures(args: argparse.Namespace) -> None:
    """Each number of senders on a fresh SQLite store and a fresh PostgreSQL database."""
    print(
        f"a flood of senders, each posting its own query's run ({BATCHES} batches of "
        f"{PARTITIONS} partitions, with its start and end) as fast as it is answered, "
        f"1-{MOST_PER_REQUEST} events a request, one request in {RESENT_EVERY} sent twice; "
        f"the overview asked every {OVERVIEW_EVERY_S:g} s meanwhile and {AT_REST} times after, "
        "and pushed to a client in its room:",
        flush=True,
    )
    for size in args.senders:
        for kind, database_url in fresh_stores(args, "senders"):
            measure(kind, database_url, size)
