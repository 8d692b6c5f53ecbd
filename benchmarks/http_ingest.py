"""`python -m benchmarks`, the collector: progress events posted over HTTP to `POST /api/ingest`,
as the JVM listener posts them (Spark's event-log form, a list per request), stored by the app of
`wmon serve` in a threaded server; one client, one request after another."""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from monitor.collect.spark_events import PROGRESS, named
from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import upgrade
from tests.support.serving import served
from tests.support.synthetic import synthetic_progress

TOKEN = "wmon-bench-ingest-token"
SENDER = "wmon-bench"


@contextmanager
def collector(database_url: str) -> Iterator[str]:
    """A collector taking TOKEN over a migrated store, for a with-block; its base URL."""
    engine = create_engine(database_url)
    upgrade(engine)
    engine.dispose()
    with served({"DATABASE_URL": database_url, "INGEST_TOKEN": TOKEN}) as base:
        yield base


def request_bodies(count: int, partitions: int, per_request: int) -> list[bytes]:
    """`count` progress events of one query in event-log form, JSON lists of `per_request`."""
    query_id, run_id, now_ms = str(uuid.uuid4()), str(uuid.uuid4()), int(time.time() * 1000)
    events = [
        named(
            PROGRESS,
            {
                "progress": synthetic_progress(
                    query_id, run_id, batch, partitions, now_ms + batch * 1000
                )
            },
        )
        for batch in range(count)
    ]
    return [
        json.dumps(events[start : start + per_request]).encode()
        for start in range(0, count, per_request)
    ]


def post(base: str, body: bytes) -> int:
    """Post one request to the collector; the number of events it stored."""
    request = urllib.request.Request(
        f"{base}/api/ingest",
        data=body,
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {TOKEN}",
            "Wmon-Sender": SENDER,
        },
    )
    with urllib.request.urlopen(request, timeout=600) as answer:
        stored: int = json.load(answer)["stored"]
    return stored


def ingest_rate(database_url: str, count: int, partitions: int, per_request: int) -> float:
    """Events stored per second by a collector over `database_url`, posted `per_request` at a
    time; the bodies are made before the clock starts."""
    bodies = request_bodies(count, partitions, per_request)
    with collector(database_url) as base:
        started = time.perf_counter()
        stored = sum(post(base, body) for body in bodies)
        elapsed = time.perf_counter() - started
    if stored != count:
        raise RuntimeError(f"the collector stored {stored} of {count} events")
    return count / elapsed
