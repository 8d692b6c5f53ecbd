"""`python -m benchmarks`, the event log: a backfill of a finished application's rolling zstd
event log, as Spark 4.3 writes one, by `wmon ingest`'s Ingester into a fresh SQLite store.

The log holds one streaming query's started event, `count` batches (each a job's start and end
lines, then the progress event) and its terminated event, between the application's own start
and end lines; a zstd frame is closed every FLUSH_LINES lines, as Spark's flushes close them.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard

from monitor.collect.spark_events import PROGRESS, STARTED, TERMINATED, named, timestamp_text
from monitor.health.predicates import Timeouts
from monitor.ingest.ingester import Ingester
from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import upgrade
from tests.support.synthetic import synthetic_progress

FLUSH_LINES = 100
SPARK_VERSION = "4.3.0"


@dataclass(frozen=True)
class WrittenLog:
    """An event log written for the bench: its history directory and what it holds."""

    directory: Path
    lines: int
    streaming_events: int
    compressed_bytes: int
    text_bytes: int


@dataclass(frozen=True)
class Backfill:
    """What one backfill read and how long it took."""

    log: WrittenLog
    seconds: float
    events: int
    lines: int


def job_lines(job: int, query_id: str, run_id: str, at_ms: int) -> list[dict[str, Any]]:
    """The start and end lines of a micro-batch's job, in Spark's form (fewer RDDs)."""
    rdds = [
        {
            "RDD ID": 4 * job + k,
            "Name": "MapPartitionsRDD",
            "Parent IDs": [4 * job + k - 1],
            "Callsite": "start at NativeMethodAccessorImpl.java:0",
            "Number of Partitions": 2,
            "Storage Level": {"Use Disk": False, "Use Memory": False, "Replication": 1},
        }
        for k in range(4)
    ]
    stage = {
        "Stage ID": job,
        "Stage Attempt ID": 0,
        "Stage Name": "start at <unknown>:0",
        "Number of Tasks": 2,
        "RDD Info": rdds,
        "Parent IDs": [],
        "Accumulables": [],
    }
    properties = {
        "sql.streaming.queryId": query_id,
        "streaming.sql.batchId": str(job),
        "spark.jobGroup.id": run_id,
        "spark.job.description": f"bench\nid = {query_id}\nrunId = {run_id}\nbatch = {job}",
        "spark.sql.execution.id": str(job),
    }
    start = {
        "Event": "SparkListenerJobStart",
        "Job ID": job,
        "Submission Time": at_ms,
        "Stage Infos": [stage],
        "Stage IDs": [job],
        "Properties": properties,
    }
    end = {
        "Event": "SparkListenerJobEnd",
        "Job ID": job,
        "Completion Time": at_ms + 700,
        "Job Result": {"Result": "JobSucceeded"},
    }
    return [start, end]


def log_lines(app_id: str, count: int, partitions: int, start_ms: int) -> Iterator[dict[str, Any]]:
    """An application's lines: one streaming query of `count` batches, one a second."""
    query_id, run_id = str(uuid.uuid4()), str(uuid.uuid4())
    yield {"Event": "SparkListenerLogStart", "Spark Version": SPARK_VERSION}
    yield {
        "Event": "SparkListenerApplicationStart",
        "App Name": "wmon-bench",
        "App ID": app_id,
        "Timestamp": start_ms,
        "User": "bench",
    }
    query = {"id": query_id, "runId": run_id}
    yield named(
        STARTED, {**query, "name": "bench", "timestamp": timestamp_text(start_ms), "jobTags": []}
    )
    for batch in range(count):
        at_ms = start_ms + 1000 * (batch + 1)
        yield from job_lines(batch, query_id, run_id, at_ms)
        progress = synthetic_progress(query_id, run_id, batch, partitions, at_ms)
        yield named(PROGRESS, {"progress": progress})
    yield named(TERMINATED, {**query, "exception": None, "errorClassOnException": None})
    yield {"Event": "SparkListenerApplicationEnd", "Timestamp": start_ms + 1000 * (count + 2)}


def write_log(history: Path, count: int, partitions: int) -> WrittenLog:
    """A finished application's rolling log in `history`: `eventlog_v2_<app>/events_1_<app>.zstd`
    and an empty `appstatus_<app>` (no `.inprogress`: the application has ended)."""
    start_ms = int(time.time() * 1000) - 1000 * (count + 2)
    app_id = f"local-{start_ms}"
    folder = history / f"eventlog_v2_{app_id}"
    folder.mkdir(parents=True)
    texts = [
        json.dumps(line, separators=(",", ":"))
        for line in log_lines(app_id, count, partitions, start_ms)
    ]
    compressor = zstandard.ZstdCompressor()
    with open(folder / f"events_1_{app_id}.zstd", "wb") as out:
        for first in range(0, len(texts), FLUSH_LINES):
            chunk = "".join(text + "\n" for text in texts[first : first + FLUSH_LINES])
            out.write(compressor.compress(chunk.encode()))  # one whole frame per flush
    (folder / f"appstatus_{app_id}").touch()
    size = (folder / f"events_1_{app_id}.zstd").stat().st_size
    text_bytes = sum(len(text.encode()) + 1 for text in texts)
    return WrittenLog(history, len(texts), count + 2, size, text_bytes)


def backfill(folder: Path, count: int, partitions: int) -> Backfill:
    """Write a log under `folder`, then time one Ingester step over it into a fresh SQLite store
    there; it must store every streaming event and report no problem."""
    log = write_log(folder / "history", count, partitions)
    engine = create_engine(f"sqlite:///{folder / 'backfill.db'}")
    upgrade(engine)
    problems: list[str] = []
    ingester = Ingester(engine, [str(log.directory)], Timeouts(), report=problems.append)
    started = time.perf_counter()
    ingester.step()
    seconds = time.perf_counter() - started
    engine.dispose()
    totals = ingester.totals
    if problems or totals.events != log.streaming_events or totals.lines != log.lines:
        raise RuntimeError(f"the backfill read {totals} of {log}: {problems[:3]}")
    return Backfill(log, seconds, totals.events, totals.lines)
