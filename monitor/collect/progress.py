"""Turn Spark's progress JSON into our BatchProgress, validating as it goes.

Whatever the document holds, the parser returns a BatchProgress or raises ProgressError: a
required field that is missing or wrong is an error; an optional figure that is not a number,
or not one a 64-bit column holds, is unknown (None).
"""

from __future__ import annotations

import json
import logging
import math
from datetime import datetime, timedelta, timezone
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from monitor.collect.observed import ObservationError, partition_event_times
from monitor.collect.offsets import parse_partitions, source_kind
from monitor.events import BatchProgress, OperatorProgress, PartitionEventTimes, SourceProgress
from monitor.numbers import INT64_MAX, INT64_MIN, NumberError, json_whole, shown

log = logging.getLogger(__name__)


class ProgressError(ValueError):
    """A progress event that cannot be read; the message says which field and why."""


def parse_time_ms(text: str) -> int:
    """Epoch milliseconds of one of Spark's ISO-8601 timestamps ('2026-11-22T10:00:00.123Z');
    ProgressError if `text` is not one."""
    try:
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except (AttributeError, TypeError, ValueError):
        raise ProgressError(f"not a timestamp: {shown(text)}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - _EPOCH) // timedelta(milliseconds=1)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _required(doc: dict[str, Any], key: str, kind: type) -> Any:
    if key not in doc:
        raise ProgressError(f"progress has no {key!r}")
    value = doc[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ProgressError(f"progress field {key!r} must be {kind.__name__}, not {shown(value)}")
    return value


def _batch_id(doc: dict[str, Any]) -> int:
    try:
        return json_whole(_required(doc, "batchId", int), "progress field 'batchId'", 0)
    except NumberError as error:
        raise ProgressError(str(error)) from None


def _int(value: Any) -> int | None:
    """A JSON number as a whole number a 64-bit column holds; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    number = int(value)
    return number if INT64_MIN <= number <= INT64_MAX else None


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _whole_numbers(values: dict[str, Any]) -> dict[str, int]:
    """The entries of a map of Spark's longs (durations, custom metrics) that are ones."""
    return {key: number for key, value in values.items() if (number := _int(value)) is not None}


def _timestamp(value: Any, key: str) -> int:
    try:
        return parse_time_ms(value)
    except ProgressError:
        raise ProgressError(f"progress field {key!r} is not a timestamp: {shown(value)}") from None


def _time(doc: dict[str, Any], key: str) -> int | None:
    value = doc.get(key)
    return None if value is None else _timestamp(value, key)


def _watermark(event_time: dict[str, Any]) -> int | None:
    """The query's watermark; None until Spark sets the first one, where it reports 0 (1970):
    translated here, once, so that nothing after the edge knows that placeholder."""
    return _time(event_time, "watermark") or None


def _dict(doc: dict[str, Any], key: str) -> dict[str, Any]:
    value = doc.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ProgressError(f"progress field {key!r} must be an object, not {shown(value)}")
    return value


def _list(doc: dict[str, Any], key: str) -> list[Any]:
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ProgressError(f"progress field {key!r} must be a list of objects")
    return value


def parse_operator(index: int, doc: dict[str, Any]) -> OperatorProgress:
    """One entry of stateOperators[]; timer counts come from its custom metrics."""
    custom = doc.get("customMetrics")
    custom = _whole_numbers(custom) if isinstance(custom, dict) else {}
    return OperatorProgress(
        operator_index=index,
        operator_name=_text(doc.get("operatorName")),
        num_rows_total=_int(doc.get("numRowsTotal")),
        num_rows_updated=_int(doc.get("numRowsUpdated")),
        num_rows_removed=_int(doc.get("numRowsRemoved")),
        num_rows_dropped_by_watermark=_int(doc.get("numRowsDroppedByWatermark")),
        memory_used_bytes=_int(doc.get("memoryUsedBytes")),
        num_registered_timers=_int(custom.get("numRegisteredTimers")),
        num_deleted_timers=_int(custom.get("numDeletedTimers")),
        num_expired_timers=_int(custom.get("numExpiredTimers")),
        custom_metrics=custom,
    )


def parse_source(index: int, doc: dict[str, Any]) -> SourceProgress:
    """One entry of sources[]: its figures, and its partitions where their offsets are known."""
    description = str(doc.get("description") or "")
    start, end, latest = doc.get("startOffset"), doc.get("endOffset"), doc.get("latestOffset")
    return SourceProgress(
        source_index=index,
        description=description,
        kind=source_kind(description),
        num_input_rows=_int(doc.get("numInputRows")),
        input_rows_per_second=_rate(doc.get("inputRowsPerSecond")),
        processed_rows_per_second=_rate(doc.get("processedRowsPerSecond")),
        partitions=parse_partitions(start, end, latest),
    )


def parse_progress(doc: Any) -> BatchProgress:
    """A BatchProgress from one progress document (StreamingQueryProgress.json, decoded)."""
    if not isinstance(doc, dict):
        raise ProgressError(f"progress must be a JSON object, not {type(doc).__name__}")
    event_time = _dict(doc, "eventTime")
    durations = _whole_numbers(_dict(doc, "durationMs"))
    observed = {name: _row(value) for name, value in _dict(doc, "observedMetrics").items()}
    sources = _list(doc, "sources")
    return BatchProgress(
        query_id=_required(doc, "id", str),
        run_id=_required(doc, "runId", str),
        name=_text(doc.get("name")),
        batch_id=_batch_id(doc),
        batch_time_ms=_timestamp(_required(doc, "timestamp", str), "timestamp"),
        watermark_ms=_watermark(event_time),
        event_time_min_ms=_time(event_time, "min"),
        event_time_max_ms=_time(event_time, "max"),
        event_time_avg_ms=_time(event_time, "avg"),
        num_input_rows=_int(_of_sources(doc, sources, "numInputRows")),
        input_rows_per_second=_rate(_of_sources(doc, sources, "inputRowsPerSecond")),
        processed_rows_per_second=_rate(_of_sources(doc, sources, "processedRowsPerSecond")),
        trigger_duration_ms=durations.get("triggerExecution"),
        durations_ms=durations,
        operators=tuple(parse_operator(i, op) for i, op in enumerate(_list(doc, "stateOperators"))),
        sources=tuple(parse_source(i, src) for i, src in enumerate(sources)),
        event_times=_event_times(observed),
    )


def _of_sources(doc: dict[str, Any], sources: list[dict[str, Any]], key: str) -> Any:
    """A batch's figure: as given, or else, as Spark computes it, the sum over its sources.
    (`progress.json` has it; the event log's form of the progress leaves it out.)"""
    if key in doc or not sources:
        return doc.get(key)
    values = [_float(source.get(key)) for source in sources]
    return None if None in values else sum(v for v in values if v is not None)


def _rate(value: Any) -> float | None:
    """A rate as `progress.json` writes it: to one decimal, halves rounded up. The event log
    writes Spark's doubles in full; this makes both say the same."""
    number = _float(value)
    if number is None or abs(number) >= _WHOLE_DOUBLES:
        return number
    return float(Decimal(number).quantize(_TENTH, rounding=ROUND_HALF_UP))


_TENTH = Decimal("0.1")
# From here on every double is a whole number: nothing to round (and Decimal's 28 digits of
# precision would not hold the larger ones).
_WHOLE_DOUBLES = 2.0**52


def _row(value: Any) -> Any:
    """An observed row as `progress.json` writes it, {field: value}. Spark's event log writes
    rows as {"values": [...], "schema": {"type": "struct", "fields": [{"name": ...}, ...]}}."""
    if isinstance(value, dict) and value.keys() == {"values", "schema"}:
        schema, values = value["schema"], value["values"]
        fields = schema.get("fields") if isinstance(schema, dict) else None
        if isinstance(fields, list) and isinstance(values, list) and len(fields) == len(values):
            names = [field.get("name") if isinstance(field, dict) else None for field in fields]
            if all(isinstance(name, str) for name in names):
                return {name: _row(item) for name, item in zip(names, values, strict=True)}
    if isinstance(value, list):
        return [_row(item) for item in value]
    return value


def _event_times(observed: dict[str, Any]) -> tuple[PartitionEventTimes, ...]:
    """The instrumented operator's figures; unreadable ones are logged, the batch is kept."""
    try:
        return partition_event_times(observed)
    except ObservationError as error:
        log.error("wmon: ignored the instrumented operator's figures: %s", error)
        return ()


def parse_progress_json(text: str) -> BatchProgress:
    """A BatchProgress from the JSON text of a progress event."""
    try:
        doc = json.loads(text)
    except (TypeError, ValueError, RecursionError) as error:
        # RecursionError: nested thousands deep, deeper than json's decoder goes.
        raise ProgressError(f"progress is not valid JSON: {error}") from None
    return parse_progress(doc)
