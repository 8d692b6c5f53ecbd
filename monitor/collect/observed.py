"""Read the instrumented operator's figures out of a batch's observed metrics."""

from __future__ import annotations

import json
from typing import Any

from monitor.events import OBSERVATION, SAMPLES_PER_PARTITION, PartitionEventTimes
from monitor.numbers import INT64_MAX, json_whole


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


def _optional(value: Any, name: str) -> int | None:
    """A whole number a 64-bit column holds, or None."""
    return None if value is None else json_whole(value, name)


def _sample(sample: Any) -> tuple[str | None, int, int | None]:
    """One late record's [key, event ms, offset]."""
    if not isinstance(sample, list) or len(sample) != 3:
        raise ObservationError("a late sample is not [key, event ms, offset]")
    key, event_ms, offset = sample
    if key is not None and not isinstance(key, str):
        raise ObservationError("a late sample's key is not text")
    return (
        key,
        json_whole(event_ms, "a late sample's event time"),
        _optional(offset, "a late sample's offset"),
    )


def _merge(total: dict[str, Any], part: dict[str, Any]) -> None:
    # Each count fits in 64 bits, and so does their sum over a batch's tasks.
    total["records"] += json_whole(part["records"], "records", 0, INT64_MAX - total["records"])
    total["late"] += json_whole(part["late"], "late", 0, INT64_MAX - total["late"])
    for key, pick in (("min_ms", min), ("max_ms", max)):
        value = _optional(part[key], key)
        if value is not None:
            total[key] = value if total[key] is None else pick(total[key], value)
    samples = total["samples"] + [_sample(sample) for sample in part["samples"]]
    total["samples"] = sorted(samples, key=sample_order)[:SAMPLES_PER_PARTITION]


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
                total = merged.setdefault(
                    name, {"records": 0, "late": 0, "min_ms": None, "max_ms": None, "samples": []}
                )
                _merge(total, part)
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
        )
        for name, total in sorted(merged.items())
    )
