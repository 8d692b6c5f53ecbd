"""Read the instrumented operator's figures out of a batch's observed metrics."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from monitor.events import OBSERVATION, SAMPLES_PER_PARTITION, PartitionEventTimes, Record
from monitor.numbers import INT64_MAX, json_whole, whole

# A distance in ms fits in 64 bits: its bit length, the bucket, is at most 64.
MAX_BUCKET = 64


class ObservationError(ValueError):
    """The instrumented operator's figures in a progress event cannot be read."""


def _tasks(observed_metrics: dict[str, Any]) -> list[dict[str, Any]]:
    observation = observed_metrics.get(OBSERVATION)
    if observation is None:
        return []
    tasks = observation.get("tasks") if isinstance(observation, dict) else None
    if not isinstance(tasks, list):
        raise ObservationError(f"observed metric {OBSERVATION!r} has no list of tasks")
    try:
        parsed = [json.loads(task) for task in tasks if task is not None]
    except (TypeError, ValueError) as error:
        raise ObservationError(f"a task's figures are not JSON: {error}") from None
    if not all(isinstance(task, dict) for task in parsed):
        raise ObservationError("a task's figures are not a JSON object")
    return parsed


def sample_order(sample: Any) -> tuple[bool, int, int, bool, str]:
    """Late samples are kept smallest first by (offset, event time, key), a missing one first:
    the same ones whatever order Spark ran and merged the tasks in."""
    key, event_ms, offset = sample
    return (offset is not None, offset or 0, event_ms, key is not None, key or "")


def later_record(a: Sequence[Any] | None, b: Sequence[Any] | None) -> Sequence[Any] | None:
    """Of two [key, event ms, offset] records, the one with the later event time, and on a tie
    the first in sample order: the record a partition's max event time is told by."""
    if a is None or b is None:
        return b if a is None else a
    if a[1] != b[1]:
        return a if a[1] > b[1] else b
    return min(a, b, key=sample_order)


def _optional(value: Any, name: str) -> int | None:
    """A whole number a 64-bit column holds, or None."""
    return None if value is None else json_whole(value, name)


def _sample(sample: Any) -> Record:
    """One record's [key, event ms, offset]."""
    if not isinstance(sample, list) or len(sample) != 3:
        raise ObservationError("a record is not [key, event ms, offset]")
    key, event_ms, offset = sample
    if key is not None and not isinstance(key, str):
        raise ObservationError("a record's key is not text")
    return (
        key,
        json_whole(event_ms, "a record's event time"),
        _optional(offset, "a record's offset"),
    )


def _samples(kept: list[Record], part: dict[str, Any], name: str) -> list[Record]:
    samples = kept + [_sample(sample) for sample in part.get(name, [])]
    return sorted(samples, key=sample_order)[:SAMPLES_PER_PARTITION]


def _count(total: int, value: Any, name: str) -> int:
    # Each count fits in 64 bits, and so does their sum over a batch's tasks.
    return total + json_whole(value, name, 0, INT64_MAX - total)


def _buckets(total: dict[str, int], part: Any, name: str) -> dict[str, int]:
    if not isinstance(part, dict):
        raise ObservationError(f"{name} is not an object of bucket counts")
    for number, count in part.items():
        bucket = str(whole(number, f"a bucket of {name}", 0, MAX_BUCKET))
        total[bucket] = _count(total.get(bucket, 0), count, name)
    return total


def _merge(total: dict[str, Any], part: dict[str, Any]) -> None:
    """Fold one task's figures of a partition into the batch's; figures an operator of an
    earlier version did not measure are missing and count as none."""
    total["records"] = _count(total["records"], part["records"], "records")
    total["late"] = _count(total["late"], part["late"], "late")
    total["future"] = _count(total["future"], part.get("future", 0), "future")
    for key, pick in (("min_ms", min), ("max_ms", max), ("future_lead_ms", max)):
        value = _optional(part.get(key), key)
        if value is not None:
            total[key] = value if total[key] is None else pick(total[key], value)
    top = part.get("max_record")
    total["max_record"] = later_record(total["max_record"], None if top is None else _sample(top))
    total["samples"] = _samples(total["samples"], part, "samples")
    total["future_samples"] = _samples(total["future_samples"], part, "future_samples")
    for key in ("late_buckets", "slack_buckets"):
        total[key] = _buckets(total[key], part.get(key, {}), key)


def partition_event_times(observed_metrics: dict[str, Any]) -> tuple[PartitionEventTimes, ...]:
    """Per-partition figures of a batch, merged over its tasks; () when not instrumented."""
    merged: dict[str, dict[str, Any]] = {}
    delay_ms, late_watermark = 0, None
    tasks = _tasks(observed_metrics)
    try:
        for task in tasks:
            delay_ms = json_whole(task["delay_ms"], "delay_ms", 0)
            late_watermark = _optional(task["late_watermark_ms"], "late_watermark_ms")
            for name, part in task["partitions"].items():
                _merge(merged.setdefault(name, _empty()), part)
    except KeyError as error:
        raise ObservationError(f"a task's figures lack {error}") from None
    except (TypeError, ValueError, AttributeError) as error:
        raise ObservationError(f"a task's figures are malformed: {error}") from None
    return tuple(
        PartitionEventTimes(
            partition=name,
            records=total["records"],
            min_event_ms=total["min_ms"],
            max_event_ms=total["max_ms"],
            late_records=total["late"],
            late_watermark_ms=late_watermark,
            delay_ms=delay_ms,
            late_samples=tuple(total["samples"]),
            max_record=total["max_record"],
            future_records=total["future"],
            future_lead_ms=total["future_lead_ms"],
            future_samples=tuple(total["future_samples"]),
            late_buckets=_in_order(total["late_buckets"]),
            slack_buckets=_in_order(total["slack_buckets"]),
        )
        for name, total in sorted(merged.items())
    )


def _empty() -> dict[str, Any]:
    return {
        "records": 0,
        "late": 0,
        "future": 0,
        "min_ms": None,
        "max_ms": None,
        "future_lead_ms": None,
        "max_record": None,
        "samples": [],
        "future_samples": [],
        "late_buckets": {},
        "slack_buckets": {},
    }


def _in_order(buckets: dict[str, int]) -> dict[str, int]:
    return dict(sorted(buckets.items(), key=lambda item: int(item[0])))
