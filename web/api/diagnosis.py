"""The diagnosis JSON over a range of batches: who drove the watermark (and whether a
future-dated record did), the future-dated records per partition, the lateness histograms and
the delays that would have kept 99%, 99.9% and 100% of the records (or that no delay would,
where a future-dated record drove the watermark)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy.orm as so

from monitor.health.facts import FutureDated
from monitor.health.lateness import Histogram, bucket_bounds
from monitor.store.read.drop_causes import Lateness, driver_shares, future_dated, latest_batch_in
from monitor.store.read.history import Kept
from monitor.store.read.lateness_reads import lateness_over
from monitor.store.schema.models import Batch, Query


def record_json(record: Sequence[Any] | None) -> dict[str, Any] | None:
    """A stored [key, event ms, offset] record as an object."""
    if record is None:
        return None
    key, event_ms, offset = record
    return {"key": key, "event_ms": event_ms, "offset": offset}


def driver_json(batch: Batch, tolerance_ms: int) -> dict[str, Any] | None:
    """Who set the batch's watermark: the partition, its record, how far the record's event
    time was ahead of the batch's time, and whether that is more than the tolerance."""
    if batch.watermark_driver_partition is None:
        return None
    record = record_json(batch.watermark_driver_record)
    lead_ms = None if record is None else record["event_ms"] - batch.batch_time_ms
    return {
        "partition": batch.watermark_driver_partition,
        "record": record,
        "lead_ms": lead_ms,
        "future_dated": lead_ms is not None and lead_ms > tolerance_ms,
    }


def latest_json(batch: Batch | None, tolerance_ms: int) -> dict[str, Any] | None:
    """The range's newest batch: its watermark, how far that is ahead of the batch's time (None
    unless it is), and its watermark driver."""
    if batch is None:
        return None
    ahead_ms = None if batch.watermark_ms is None else batch.watermark_ms - batch.batch_time_ms
    return {
        "batch_id": batch.batch_id,
        "batch_time_ms": batch.batch_time_ms,
        "watermark_ms": batch.watermark_ms,
        "watermark_ahead_ms": ahead_ms if ahead_ms is not None and ahead_ms > 0 else None,
        "driver": driver_json(batch, tolerance_ms),
    }


def future_json(partition: str, item: FutureDated) -> dict[str, Any]:
    """A partition's future-dated records over the range."""
    return {
        "partition": partition,
        "records": item.records,
        "lead_ms": item.lead_ms,
        "samples": [record_json(sample) for sample in item.samples],
    }


def histogram_json(histogram: Histogram) -> list[dict[str, Any]]:
    """Every bucket from the first to the last with records, empty ones between included, with
    the distances it counts (ms, both bounds included)."""
    numbers = [int(number) for number, count in histogram.items() if count]
    if not numbers:
        return []
    return [
        {"bucket": number, "min_ms": low, "max_ms": high, "records": histogram.get(str(number), 0)}
        for number in range(min(numbers), max(numbers) + 1)
        for low, high in [bucket_bounds(number)]
    ]


def lateness_json(item: Lateness) -> dict[str, Any]:
    """A query's or partition's histograms and the delays that would have kept each share."""
    return item.advice() | {"late": histogram_json(item.late), "slack": histogram_json(item.slack)}


def diagnosis_json(
    session: so.Session, query: Query, from_ms: int, to_ms: int, tolerance_ms: int
) -> dict[str, Any]:
    """The diagnosis of the query's batches with batch times from `from_ms` to `to_ms`
    (half-open); `tolerance_ms` is how far ahead of its batch a record may be. A range that
    starts before the batches kept says where they start (what is read from batches starts
    there) and reads the lateness from the rollups (`lateness_resolution`)."""
    query_id, kept = query.id, Kept.of(query)
    # The range's last batch time is the one before to_ms.
    measured = lateness_over(session, query, from_ms, to_ms - 1, tolerance_ms)
    return {
        "query": query_id,
        "from_ms": from_ms,
        "to_ms": to_ms,
        "future_tolerance_ms": tolerance_ms,
        "batches_kept_from_ms": None if kept.batches_cover(from_ms) else kept.batches_from_ms,
        "lateness_resolution": measured.resolution,
        "latest": latest_json(latest_batch_in(session, query_id, from_ms, to_ms), tolerance_ms),
        "driver_batches": driver_shares(session, query_id, from_ms, to_ms),
        "future_dated": [
            future_json(partition, item)
            for partition, item in future_dated(session, query_id, from_ms, to_ms).items()
        ],
        "lateness": {
            "query": lateness_json(measured.items[0]) if measured.items else None,
            "partitions": [lateness_json(item) for item in measured.items[1:]],
        },
    }
