"""Synthetic history inserted in bulk, for the benchmarks and the tests that need volume.

A day of 1-second batches × 64 partitions is 11 million rows: plain multi-row inserts of
plausible values (a batch's partitions' offsets and event times packed, store.batch_offsets
and store.batch_event_times), without the writer's per-batch reads and derivations, fill it in
minutes; their per-minute rollups are kept as the writer keeps them (store.minutes).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa

from monitor.health.facts import StoredStatus
from monitor.store.schema.models import (
    Base,
    Batch,
    BatchEventTimes,
    BatchOffsets,
    Query,
    Run,
    Source,
    StateOperator,
)
from monitor.store.tiers import day_partitions
from monitor.store.tiers.minutes import Minutes
from monitor.store.write.batch_rows import as_stored

DELAY_MS = 10_000
RECORDS = 100
LATE_EVERY = 50
CHUNK = 200


def fill(
    engine: sa.Engine,
    query_id: str,
    start_ms: int,
    batches: int,
    partitions: int,
    step_ms: int = 1_000,
    first_batch: int = 0,
    behind: int = 0,
) -> None:
    """Store `batches` batches of `partitions` partitions, `step_ms` apart from `start_ms`;
    with `behind`, the query reads each partition that many batches' records behind what
    has arrived (a backlog whose head arrived `behind` batches before)."""
    last_ms = start_ms + (batches - 1) * step_ms
    _query_rows(engine, query_id, last_ms, first_batch + batches - 1)
    for offset in range(0, batches, CHUNK):
        count = min(CHUNK, batches - offset)
        minutes, stored = Minutes(), {}
        with engine.begin() as connection:
            for table, rows in _chunk_rows(
                query_id,
                start_ms + offset * step_ms,
                step_ms,
                first_batch + offset,
                count,
                partitions,
                behind,
            ):
                if table is Batch:
                    day_partitions.prepare(connection, (row["batch_time_ms"] for row in rows))
                connection.execute(sa.insert(table), as_stored(table, rows))
                stored[table] = rows
            minutes.add_batches(stored)
            minutes.write(connection)


def _query_rows(engine: sa.Engine, query_id: str, last_ms: int, last_batch: int) -> None:
    """The query's and its run's rows, unless it has them already."""
    with engine.begin() as connection:
        if connection.scalar(sa.select(Query.id).where(Query.id == query_id)) is not None:
            return
        connection.execute(
            sa.insert(Query),
            [
                {
                    "id": query_id,
                    "name": query_id,
                    "run_id": query_id,
                    "status": StoredStatus.ACTIVE.value,
                    "started_at_ms": last_ms,
                    "updated_at_ms": last_ms,
                    "last_batch_id": last_batch,
                }
            ],
        )
        connection.execute(
            sa.insert(Run), [{"run_id": query_id, "query_id": query_id, "name": query_id}]
        )


def _chunk_rows(
    query_id: str,
    start_ms: int,
    step_ms: int,
    first_batch: int,
    count: int,
    partitions: int,
    behind: int = 0,
) -> Iterator[tuple[type[Base], list[dict[str, Any]]]]:
    """The rows of `count` consecutive batches, table by table, parents first."""
    moments = [(first_batch + i, start_ms + i * step_ms) for i in range(count)]
    key = {"query_id": query_id}
    yield Batch, [key | _batch(query_id, *m, partitions) for m in moments]
    yield StateOperator, [key | _operator(*m) for m in moments]
    yield Source, [key | _source(*m) for m in moments]
    yield (
        BatchOffsets,
        [key | _partition(*m, p, behind) for m in moments for p in range(partitions)],
    )
    yield (
        BatchEventTimes,
        [key | _event_times(*m, p) for m in moments for p in range(partitions)],
    )


def _batch(query_id: str, batch_id: int, at_ms: int, partitions: int) -> dict[str, Any]:
    skew = (batch_id % 60) * 100
    return {
        "batch_id": batch_id,
        "run_id": query_id,
        "batch_time_ms": at_ms,
        "watermark_ms": at_ms - DELAY_MS,
        "event_time_min_ms": at_ms - 5_000,
        "event_time_max_ms": at_ms,
        "event_time_avg_ms": at_ms - 2_500,
        "num_input_rows": RECORDS * partitions,
        "input_rows_per_second": float(RECORDS * partitions),
        "processed_rows_per_second": float(2 * RECORDS * partitions),
        "trigger_duration_ms": 500 + batch_id % 100,
        "durations_ms": {"triggerExecution": 500 + batch_id % 100},
        "watermark_advanced_at_ms": at_ms,
        "watermark_skew_ms": skew,
        "flink_watermark_ms": at_ms - DELAY_MS - skew,
    }


def _operator(batch_id: int, at_ms: int) -> dict[str, Any]:
    return {
        "batch_id": batch_id,
        "batch_time_ms": at_ms,
        "operator_index": 0,
        "operator_name": "dedupe",
        "num_rows_total": 1_000,
        "num_rows_dropped_by_watermark": 0,
        "custom_metrics": {},
    }


def _source(batch_id: int, at_ms: int) -> dict[str, Any]:
    return {
        "batch_id": batch_id,
        "batch_time_ms": at_ms,
        "source_index": 0,
        "description": "KafkaV2[Subscribe[telemetry]]",
        "kind": "kafka",
    }


def _partition(batch_id: int, at_ms: int, p: int, behind: int = 0) -> dict[str, Any]:
    latest = (batch_id + 1) * RECORDS + p
    end = max(batch_id + 1 - behind, 0) * RECORDS
    return {
        "batch_id": batch_id,
        "batch_time_ms": at_ms,
        "source_index": 0,
        "partition": f"telemetry/{p}",
        "topic": "telemetry",
        "start_offset": max(end - RECORDS, 0),
        "end_offset": end,
        "latest_offset": latest,
        "offset_lag": latest - end,
        "last_arrival_ms": at_ms,
        "last_advance_ms": at_ms,
        "idle": False,
        "stalled": False,
        "rewound": False,
    }


def _event_times(batch_id: int, at_ms: int, p: int) -> dict[str, Any]:
    max_event = at_ms - 1_000 * (p % 8)
    # One late record every LATE_EVERY batches per partition, and the running count of them.
    late_total = (batch_id + p) // LATE_EVERY - (p - 1) // LATE_EVERY
    late = int((batch_id + p) % LATE_EVERY == 0)
    return {
        "batch_id": batch_id,
        "batch_time_ms": at_ms,
        "partition": f"telemetry/{p}",
        "records": RECORDS,
        "records_total": (batch_id + 1) * RECORDS,
        "min_event_ms": max_event - 5_000,
        "max_event_ms": max_event,
        "late_records": late,
        # A late record 1-2 s behind the late watermark, the others 4-8 s ahead of it.
        "late_buckets": {"11": late} if late else {},
        "slack_buckets": {"13": RECORDS - late},
        "late_watermark_ms": at_ms - DELAY_MS - 1_000,
        "delay_ms": DELAY_MS,
        "max_event_time_ms": max_event,
        "max_event_time_record": None,
        "max_event_time_batch": batch_id,
        "partition_watermark_ms": max_event - DELAY_MS,
        "late_records_total": late_total,
        "late_samples": [],
        "late_buckets_total": None,
        "slack_buckets_total": None,
        "time_lag_ms": at_ms - max_event,
        "future_records": 0,
        "future_records_total": 0,
        "future_lead_ms": None,
        "future_samples": None,
    }
