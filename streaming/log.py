"""An append-only partitioned log on disk, shaped like a Kafka topic.

Layout: ``<root>/<topic>/<partition>/<base offset, 20 digits>.jsonl``. Each segment file holds
up to ``segment_records`` records, one JSON object a line::

    {"key": "scooter-0007", "value": "{...}", "timestamp": 1700000000123}

The offset of a record is its position in its partition, counted across segments, so a
segment's file name is the offset of its first line. Only newline-terminated lines count: a
reader may see a writer's line half written, and must not read it until it is complete.
One writer per partition; any number of readers.
"""

from __future__ import annotations

import bisect
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from monitor.regular_files import open_regular

SEGMENT_SUFFIX = ".jsonl"
_SEGMENT_NAME = re.compile(r"^(\d{20})\.jsonl$")
# Kafka's legal topic characters; also keeps a topic a single, safe path component.
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


@dataclass(frozen=True)
class LogRecord:
    """One record of the log: a key, a value and its event time in epoch milliseconds."""

    key: str
    value: str
    timestamp_ms: int

    def to_line(self) -> bytes:
        """The record as one newline-terminated JSON line."""
        obj = {"key": self.key, "value": self.value, "timestamp": self.timestamp_ms}
        return (json.dumps(obj, separators=(",", ":")) + "\n").encode("utf-8")

    @classmethod
    def from_line(cls, line: bytes) -> LogRecord:
        """Parse one line written by :meth:`to_line`."""
        obj = json.loads(line)
        return cls(key=obj["key"], value=obj["value"], timestamp_ms=obj["timestamp"])


@dataclass
class _Tail:
    """What is known about a partition's last segment: how far it was scanned and its lines."""

    base: int
    scanned_bytes: int
    lines: int
    partial: bool = False


def is_topic_name(name: object) -> bool:
    """Whether ``name`` is a legal topic name (and so a single, safe path component)."""
    return isinstance(name, str) and bool(_TOPIC_NAME.match(name)) and name not in (".", "..")


def check_topic(topic: str) -> str:
    """Return ``topic`` if it is a legal topic name, else raise ValueError."""
    if not is_topic_name(topic):
        raise ValueError(
            f"invalid topic name {topic!r}: use 1-249 characters from [A-Za-z0-9._-], "
            "not '.' or '..'"
        )
    return topic


def check_partition(partition: int) -> int:
    """Return ``partition`` if it is a non-negative int, else raise ValueError."""
    if isinstance(partition, bool) or not isinstance(partition, int) or partition < 0:
        raise ValueError(f"invalid partition {partition!r}: must be an int >= 0")
    return partition


def segment_name(base_offset: int) -> str:
    """The file name of the segment whose first record has offset ``base_offset``."""
    return f"{base_offset:020d}{SEGMENT_SUFFIX}"


class PartitionedLog:
    """A directory of topics, each split into partitions of segment files."""

    def __init__(self, root: str | os.PathLike[str], segment_records: int = 10_000) -> None:
        if isinstance(segment_records, bool) or not isinstance(segment_records, int):
            raise ValueError(f"segment_records must be an int, got {segment_records!r}")
        if segment_records < 1:
            raise ValueError(f"segment_records must be >= 1, got {segment_records}")
        self.root = Path(root)
        self.segment_records = segment_records
        # (topic, partition) -> last segment scan state, so a growing log is read only once.
        self._tails: dict[tuple[str, int], _Tail] = {}

    def topics(self) -> list[str]:
        """The topics in the log, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(
            entry.name
            for entry in self.root.iterdir()
            if entry.is_dir() and is_topic_name(entry.name)
        )

    def partitions(self, topic: str) -> list[int]:
        """The partitions of ``topic``, sorted; empty if the topic does not exist yet."""
        topic_dir = self.root / check_topic(topic)
        if not topic_dir.is_dir():
            return []
        return sorted(
            int(entry.name)
            for entry in topic_dir.iterdir()
            if entry.is_dir() and entry.name.isdigit()
        )

    def end_offsets(self, topic: str) -> dict[int, int]:
        """The next offset to be written, per partition of ``topic``."""
        return {p: self.end_offset(topic, p) for p in self.partitions(topic)}

    def end_offset(self, topic: str, partition: int) -> int:
        """The next offset to be written in one partition (0 if it does not exist)."""
        tail = self._scan_tail(topic, partition)
        return tail.base + tail.lines

    def append(self, topic: str, partition: int, records: Iterable[LogRecord]) -> int:
        """Append ``records`` (one write per segment) and return the next offset."""
        pending = list(records)
        tail = self._scan_tail(topic, partition)
        if not pending:
            return tail.base + tail.lines
        if tail.partial:
            raise RuntimeError(
                f"{topic}/{partition}: last segment ends with an incomplete line; "
                "is another writer appending to this partition?"
            )
        directory = self._partition_dir(topic, partition)
        directory.mkdir(parents=True, exist_ok=True)
        next_offset = tail.base + tail.lines
        while pending:
            room = self.segment_records - tail.lines
            if room <= 0:
                tail = _Tail(base=next_offset, scanned_bytes=0, lines=0)
                self._tails[(topic, partition)] = tail
                room = self.segment_records
            chunk, pending = pending[:room], pending[room:]
            data = b"".join(record.to_line() for record in chunk)
            with open(directory / segment_name(tail.base), "ab") as segment:
                segment.write(data)
            tail.scanned_bytes += len(data)
            tail.lines += len(chunk)
            next_offset += len(chunk)
        return next_offset

    def read(
        self, topic: str, partition: int, start: int, end: int
    ) -> Iterator[tuple[int, LogRecord]]:
        """Yield ``(offset, record)`` for offsets in ``[start, end)`` of one partition."""
        check_topic(topic)
        check_partition(partition)
        if start < 0 or start > end:
            raise ValueError(f"invalid offset range [{start}, {end}): need 0 <= start <= end")
        available = self.end_offset(topic, partition)
        if end > available:
            raise ValueError(
                f"cannot read {topic}/{partition} up to offset {end}: "
                f"the partition ends at {available}"
            )
        return self._read_range(topic, partition, start, end)

    def _read_range(
        self, topic: str, partition: int, start: int, end: int
    ) -> Iterator[tuple[int, LogRecord]]:
        """The lazy part of :meth:`read`, opening only the segments that overlap the range."""
        bases = self._segment_bases(topic, partition)
        first = max(bisect.bisect_right(bases, start) - 1, 0)
        offset = start
        for base in bases[first:]:
            if offset >= end:
                return
            for line_offset, line in enumerate(self._lines(topic, partition, base), base):
                if line_offset >= end:
                    return
                if line_offset >= offset:
                    yield line_offset, LogRecord.from_line(line)
                    offset = line_offset + 1

    def _lines(self, topic: str, partition: int, base: int) -> Iterator[bytes]:
        """The complete lines of one segment."""
        path = self._partition_dir(topic, partition) / segment_name(base)
        with open_regular(path) as segment:
            for line in segment:
                if line.endswith(b"\n"):
                    yield line

    def _partition_dir(self, topic: str, partition: int) -> Path:
        return self.root / check_topic(topic) / str(check_partition(partition))

    def _segment_bases(self, topic: str, partition: int) -> list[int]:
        """Base offsets of a partition's segments, sorted."""
        directory = self._partition_dir(topic, partition)
        if not directory.is_dir():
            return []
        names = (_SEGMENT_NAME.match(name) for name in os.listdir(directory))
        return sorted(int(match.group(1)) for match in names if match)

    def _scan_tail(self, topic: str, partition: int) -> _Tail:
        """Bring the cached state of the last segment up to date, reading only new bytes."""
        bases = self._segment_bases(topic, partition)
        key = (topic, partition)
        if not bases:
            self._tails[key] = _Tail(base=0, scanned_bytes=0, lines=0)
            return self._tails[key]
        tail = self._tails.get(key)
        path = self._partition_dir(topic, partition) / segment_name(bases[-1])
        size = path.stat().st_size
        if tail is None or tail.base != bases[-1] or size < tail.scanned_bytes:
            tail = _Tail(base=bases[-1], scanned_bytes=0, lines=0)
        if size > tail.scanned_bytes:
            with open_regular(path) as segment:
                segment.seek(tail.scanned_bytes)
                new = segment.read(size - tail.scanned_bytes)
            complete = new.rfind(b"\n") + 1
            tail.lines += new.count(b"\n", 0, complete)
            tail.scanned_bytes += complete
        tail.partial = size > tail.scanned_bytes
        self._tails[key] = tail
        return tail
