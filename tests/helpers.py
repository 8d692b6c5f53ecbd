"""Helpers shared by tests: fixture files and synthetic progress documents."""

import contextlib
import copy
import json
import os
import socket
import sqlite3
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> Any:
    """A JSON document from tests/fixtures/ (a fresh copy each call)."""
    return json.loads((FIXTURES / name).read_text())


def progress_doc(name: str = "progress_kafka.json", **changes: Any) -> dict[str, Any]:
    """The progress document of a fixture, with some top-level fields changed."""
    doc = copy.deepcopy(fixture(name)["progress"])
    doc.update(changes)
    return doc


def unique_name(prefix: str = "q") -> str:
    """A query name that no other test uses."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def wait_until(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll until `predicate` returns something true; fail loudly naming `what` on timeout."""
    deadline = time.monotonic() + timeout
    while not (result := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.2)
    return result


@contextlib.contextmanager
def sqlite_locked(path: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on a SQLite store, as another writer would, for a with-block."""
    lock = sqlite3.connect(path, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        lock.execute("ROLLBACK")
        lock.close()


def closed_port() -> int:
    """A local TCP port with nothing listening on it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def offset_log(checkpoint: str) -> dict[int, tuple[int, dict[int, int]]]:
    """Per batch: the watermark written before it ran and the source's end offsets."""
    batches = {}
    for name in os.listdir(os.path.join(checkpoint, "offsets")):
        if name.isdigit():
            with open(os.path.join(checkpoint, "offsets", name)) as entry:
                lines = entry.read().splitlines()
            batches[int(name)] = (
                json.loads(lines[1])["batchWatermarkMs"],
                {int(p): o for p, o in json.loads(lines[2])["telemetry"].items()},
            )
    return batches


def expected_late(
    log: Any, checkpoint: str, window_ms: int | None = None
) -> dict[tuple[int, str], int]:
    """Late records per (batch, partition), from the files and the offset log alone."""
    batches = offset_log(checkpoint)
    late = Counter()
    for batch_id in sorted(batches):
        if batch_id == 0:
            continue
        threshold = batches[batch_id - 1][0]
        for partition, end in batches[batch_id][1].items():
            start = batches[batch_id - 1][1].get(partition, 0)
            for _, record in log.read("telemetry", partition, start, end):
                t = record.timestamp_ms
                compared = t if window_ms is None else t - t % window_ms + window_ms
                late[(batch_id, f"telemetry/{partition}")] += compared <= threshold
    return {key: count for key, count in late.items() if count}
