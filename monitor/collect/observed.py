"""Read the instrumented operator's figures out of a batch's observed metrics."""

from __future__ import annotations

import json
from typing import Any

from monitor.events import OBSERVATION, SAMPLES_PER_PARTITION, PartitionEventTimes


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


def _merge(total: dict[str, Any], part: dict[str, Any]) -> None:
    total["records"] += int(part["records"])
    total["late"] += int(part["late"])
    for key, pick in (("min_ms", min), ("max_ms", max)):
        if part[key] is not None:
            total[key] = part[key] if total[key] is None else pick(total[key], part[key])
    room = SAMPLES_PER_PARTITION - len(total["samples"])
    total["samples"] += [tuple(sample) for sample in part["samples"][: max(room, 0)]]


def partition_event_times(observed_metrics: dict[str, Any]) -> tuple[PartitionEventTimes, ...]:
    """Per-partition figures of a batch, merged over its tasks; () when not instrumented."""
    merged: dict[str, dict[str, Any]] = {}
    delay_ms, late_watermark = 0, None
    tasks = _tasks(observed_metrics)
    try:
        for task in tasks:
            delay_ms, late_watermark = int(task["delay_ms"]), task["late_watermark_ms"]
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
