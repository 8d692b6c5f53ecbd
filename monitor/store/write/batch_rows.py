"""The rows a batch is stored as, column dicts table by table: its own, its operators',
sources' and partitions' (a row per partition, packed into one when inserted:
store.batch_offsets), and the per-partition event times carried on from the rows before."""

from __future__ import annotations

import dataclasses
from typing import Any

from monitor.events import (
    BatchProgress,
    OperatorProgress,
    PartitionEventTimes,
    PartitionOffsets,
    SourceProgress,
)
from monitor.health.lateness import summed
from monitor.store.packed import batch_event_times, batch_offsets
from monitor.store.schema.models import (
    Base,
    Batch,
    BatchEventTimes,
    BatchOffsets,
    Source,
    StateOperator,
)

Row = dict[str, Any]

_NOT_BATCH_COLUMNS = ("query_id", "name", "operators", "sources", "event_times")
_BATCH_FIELDS = tuple(
    f.name for f in dataclasses.fields(BatchProgress) if f.name not in _NOT_BATCH_COLUMNS
)
_OPERATOR_FIELDS = tuple(f.name for f in dataclasses.fields(OperatorProgress))
_SOURCE_FIELDS = tuple(f.name for f in dataclasses.fields(SourceProgress) if f.name != "partitions")
_OFFSET_FIELDS = tuple(f.name for f in dataclasses.fields(PartitionOffsets))


# The tables whose rows are a batch's partitions, packed into one row per batch when stored.
_PACKED = {BatchOffsets: batch_offsets.packed, BatchEventTimes: batch_event_times.packed}


def as_stored(model: type[Base], rows: list[Row]) -> list[Row]:
    """Column dicts of `model` as they are inserted: a batch's partitions' rows packed into
    one row per batch (store.batch_offsets, store.batch_event_times), others as they are."""
    pack = _PACKED.get(model)
    return rows if pack is None else pack(rows)


def _fields(item: object, names: tuple[str, ...]) -> Row:
    """An event's fields as columns (shallow: nested values stay as they are)."""
    return {name: getattr(item, name) for name in names}


def batch_rows(event: BatchProgress) -> dict[type[Base], list[Row]]:
    """The rows of a batch and its operators, sources and partitions, as column dicts."""
    keys = {
        "query_id": event.query_id,
        "batch_id": event.batch_id,
        "batch_time_ms": event.batch_time_ms,
    }
    rows: dict[type[Base], list[Row]] = {
        Batch: [keys | _fields(event, _BATCH_FIELDS)],
        StateOperator: [keys | _fields(op, _OPERATOR_FIELDS) for op in event.operators],
        Source: [],
        BatchOffsets: [],
    }
    for source in event.sources:
        rows[Source].append(keys | _fields(source, _SOURCE_FIELDS))
        rows[BatchOffsets] += [
            keys
            | _fields(partition, _OFFSET_FIELDS)
            | {"source_index": source.source_index, "offset_lag": partition.offset_lag}
            for partition in source.partitions
        ]
    return rows


def _idle_partition(name: str, before: Row, late_watermark_ms: int | None) -> PartitionEventTimes:
    return PartitionEventTimes(
        partition=name,
        records=0,
        min_event_ms=None,
        max_event_ms=None,
        late_records=0,
        late_watermark_ms=late_watermark_ms,
        delay_ms=before["delay_ms"],
    )


def event_time_rows(event: BatchProgress, before: dict[str, Row]) -> list[Row]:
    """Per-partition event times of a batch, with running max event time, W_p and totals,
    following on from the rows `before` it (every partition seen so far); packed into one
    row when inserted (store.batch_event_times)."""
    measured = {times.partition: times for times in event.event_times}
    for name in before.keys() - measured.keys():
        # A partition without records in this batch still faced this batch's late threshold.
        threshold = next(
            (t.late_watermark_ms for t in event.event_times), before[name]["late_watermark_ms"]
        )
        measured[name] = _idle_partition(name, before[name], threshold)
    rows = []
    for name, times in sorted(measured.items()):
        last = before.get(name)
        last_max = last["max_event_time_ms"] if last else None
        max_event = later(times.max_event_ms, last_max)
        # The running max keeps the record that reached it first, and that record's batch.
        if max_event == last_max and last is not None:
            top, top_batch = last["max_event_time_record"], last["max_event_time_batch"]
        else:
            top, top_batch = times.max_record, event.batch_id
        rows.append(
            {
                "query_id": event.query_id,
                "batch_id": event.batch_id,
                "batch_time_ms": event.batch_time_ms,
                "partition": name,
                "records": times.records,
                "records_total": times.records + (last["records_total"] if last else 0),
                "min_event_ms": times.min_event_ms,
                "max_event_ms": times.max_event_ms,
                "late_records": times.late_records,
                "late_watermark_ms": times.late_watermark_ms,
                "delay_ms": times.delay_ms,
                "max_event_time_ms": max_event,
                "partition_watermark_ms": None if max_event is None else max_event - times.delay_ms,
                "late_records_total": times.late_records
                + (last["late_records_total"] if last else 0),
                "late_samples": [list(sample) for sample in times.late_samples],
                "max_event_time_record": None if top is None else list(top),
                "max_event_time_batch": None if max_event is None else top_batch,
                "future_records": times.future_records,
                "future_records_total": times.future_records
                + (last["future_records_total"] if last else 0),
                "future_lead_ms": times.future_lead_ms,
                "future_samples": [list(sample) for sample in times.future_samples],
                "late_buckets": times.late_buckets,
                "slack_buckets": times.slack_buckets,
                "late_buckets_total": summed([times.late_buckets, _total(last, "late_buckets")]),
                "slack_buckets_total": summed([times.slack_buckets, _total(last, "slack_buckets")]),
            }
        )
    return rows


def _total(last: Row | None, histogram: str) -> dict[str, int]:
    """A histogram's total so far in the row before (none before it was measured)."""
    return (last and last[f"{histogram}_total"]) or {}


def later(a: int | None, b: int | None) -> int | None:
    """The later (larger) of two times or ids either of which may be unknown."""
    if a is None or b is None:
        return b if a is None else a
    return max(a, b)


def earlier(a: int | None, b: int | None) -> int | None:
    """The earlier (smaller) of two times or ids either of which may be unknown."""
    if a is None or b is None:
        return b if a is None else a
    return min(a, b)
