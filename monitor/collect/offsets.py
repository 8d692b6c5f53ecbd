"""Parse a source's offsets, in the shapes Spark's sources report them, into partitions."""

from __future__ import annotations

import json
from typing import Any

from monitor.events import PartitionOffsets
from monitor.numbers import INT64_MAX

# A source with one stream of offsets (file log, rate, socket) has one partition of this name.
SINGLE_PARTITION = "0"

_KINDS = (
    ("KafkaV2", "kafka"),
    ("KafkaSource", "kafka"),
    ("FileStreamSource", "file"),
    ("RateStreamV2", "rate"),
    ("RateSource", "rate"),
    ("RatePerMicroBatch", "rate"),
    ("TextSocket", "socket"),
    ("PythonMicroBatchStream", "python"),
)


def source_kind(description: str) -> str:
    """Name the kind of source from Spark's description of it, or 'other'."""
    for marker, kind in _KINDS:
        if marker in description:
            return kind
    return "other"


def decode(offset: Any) -> Any:
    """An offset as a JSON value; text that is not JSON stays text."""
    if isinstance(offset, str):
        try:
            return json.loads(offset)
        except ValueError:
            return offset
    return offset


def _is_offset(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -1 <= value <= INT64_MAX


def partition_positions(offset: Any) -> dict[tuple[str | None, str], int] | None:
    """Map (topic, partition) to an offset, or None when the shape is not known.

    Known shapes: Kafka's ``{"topic": {"0": 12}}``, a flat ``{"0": 12}`` per partition,
    the file source's ``{"logOffset": 3}`` and a bare number (rate, socket).
    """
    value = decode(offset)
    if _is_offset(value):
        return {(None, SINGLE_PARTITION): value}
    if not isinstance(value, dict) or not value:
        return None
    if set(value) == {"logOffset"} and _is_offset(value["logOffset"]):
        return {(None, SINGLE_PARTITION): value["logOffset"]}
    if all(_is_offset(v) for v in value.values()):
        return {(None, str(p)): v for p, v in value.items()}
    if all(isinstance(v, dict) and v and all(map(_is_offset, v.values())) for v in value.values()):
        return {(t, str(p)): v for t, parts in value.items() for p, v in parts.items()}
    return None


def parse_partitions(start: Any, end: Any, latest: Any) -> tuple[PartitionOffsets, ...]:
    """The partitions of one source, from its start, end and latest offsets.

    Partitions come from the end offset (what the batch read up to); an unknown
    shape gives no partitions, never an error (the source's figures are kept without them).
    """
    ends = partition_positions(end)
    if ends is None:
        return ()
    starts = partition_positions(start) or {}
    latests = partition_positions(latest) or {}
    return tuple(
        PartitionOffsets(
            partition=partition if topic is None else f"{topic}/{partition}",
            topic=topic,
            start_offset=starts.get((topic, partition)),
            end_offset=end_offset,
            latest_offset=latests.get((topic, partition)),
        )
        for (topic, partition), end_offset in sorted(ends.items(), key=_partition_order)
    )


def _partition_order(item: tuple[tuple[str | None, str], int]) -> tuple[str, int, str]:
    (topic, partition), _ = item
    number = int(partition) if partition.isascii() and partition.isdigit() else -1
    return (topic or "", number, partition)
