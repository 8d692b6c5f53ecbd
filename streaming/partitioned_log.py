"""A Spark streaming source over :mod:`streaming.log`, with Kafka's options, rows and offsets.

::

    register(spark)
    df = (spark.readStream.format("partitioned_log")
          .option("path", "/data/log").option("subscribe", "telemetry")
          .option("maxOffsetsPerTrigger", 1000).load())

Rows have Kafka's shape (``topic, partition, offset, key, value, timestamp``) and offsets
Kafka's JSON shape, ``{"telemetry": {"0": 120, "1": 98}}`` (topic -> partition -> next offset
to read), so the monitor reads this source's progress exactly as it reads Kafka's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from streaming.log import PartitionedLog, check_topic

SOURCE_NAME = "partitioned_log"
SCHEMA = "topic STRING, partition INT, offset BIGINT, key STRING, value STRING, timestamp TIMESTAMP"
STARTING_OFFSETS = ("earliest", "latest")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

TopicPartition = tuple[str, int]
# Kafka's offset JSON: topic -> partition number as a string -> next offset to read.
Offsets = dict[str, dict[str, int]]


@dataclass(frozen=True)
class SourceOptions:
    """The validated options of one ``readStream.format("partitioned_log")``."""

    path: str
    topics: tuple[str, ...]
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        """Validate Spark's (case-insensitive) option map; raise ValueError naming the option."""
        path = options.get("path")
        if not path:
            raise ValueError("option 'path' is required: the directory of the partitioned log")
        subscribe = (options.get("subscribe") or "").split(",")
        topics = tuple(dict.fromkeys(topic.strip() for topic in subscribe))
        if topics == ("",):
            raise ValueError("option 'subscribe' is required: a comma-separated list of topics")
        for topic in topics:
            try:
                check_topic(topic)
            except ValueError as error:
                raise ValueError(f"option 'subscribe': {error}") from None
        starting = (options.get("startingOffsets") or "earliest").strip().lower()
        if starting not in STARTING_OFFSETS:
            raise ValueError(
                f"option 'startingOffsets' must be 'earliest' or 'latest', got {starting!r}"
            )
        limit = options.get("maxOffsetsPerTrigger")
        return cls(path, topics, starting, None if limit is None else _positive_int(limit))


def _positive_int(text: str) -> int:
    """Parse maxOffsetsPerTrigger, which must be a whole number above zero."""
    try:
        value = int(str(text).strip())
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"option 'maxOffsetsPerTrigger' must be a positive integer, got {text!r}")
    return value


def to_kafka_offsets(flat: Mapping[TopicPartition, int]) -> Offsets:
    """``{(topic, partition): offset}`` as Kafka's JSON shape, in a stable order."""
    nested: Offsets = {}
    for topic, partition in sorted(flat):
        nested.setdefault(topic, {})[str(partition)] = flat[(topic, partition)]
    return nested


def from_kafka_offsets(offsets: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    """Kafka's offset JSON shape as ``{(topic, partition): offset}``."""
    return {
        (topic, int(partition)): int(offset)
        for topic, partitions in offsets.items()
        for partition, offset in partitions.items()
    }


def allocate(backlog: Mapping[TopicPartition, int], limit: int) -> dict[TopicPartition, int]:
    """Split ``limit`` records across partitions in proportion to their backlog.

    Like Kafka's ``maxOffsetsPerTrigger``: each partition gets ``limit * backlog / total``
    rounded down, and small partitions are not starved. Kafka rounds shares below one up,
    which can take more than the limit; here the records left over by rounding go first to
    partitions that got none, then to the largest remainders (ties in partition order). So a
    batch takes exactly ``min(limit, total)`` records, never more than a partition holds, and
    always makes progress while anything is available.
    """
    total = sum(backlog.values())
    if total <= limit:
        return dict(backlog)
    shares = {tp: limit * size // total for tp, size in backlog.items()}
    remainders = {tp: limit * size % total for tp, size in backlog.items()}
    # The leftover is at most the number of non-zero remainders, whose shares are < backlog.
    candidates = sorted(
        (tp for tp, remainder in remainders.items() if remainder),
        key=lambda tp: (shares[tp] > 0, -remainders[tp], tp),
    )
    for tp in candidates[: limit - sum(shares.values())]:
        shares[tp] += 1
    return shares


@dataclass
class LogRange(InputPartition):
    """The offsets ``[start, end)`` of one topic-partition: one Spark task."""

    path: str
    topic: str
    partition: int
    start: int
    end: int


class PartitionedLogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans micro-batches over the log and reads them, the way Spark's Kafka source does."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        # Lives in one driver-side Python worker for the whole query, so this cache persists.
        self.log = PartitionedLog(options.path)
        self.available_now_target: dict[TopicPartition, int] | None = None

    def end_offsets(self) -> dict[TopicPartition, int]:
        """The next offset to be written, per subscribed topic-partition."""
        return {
            (topic, partition): end
            for topic in self.options.topics
            for partition, end in self.log.end_offsets(topic).items()
        }

    def initialOffset(self) -> Offsets:
        """Where a new query starts: offset 0 everywhere, or the current end for "latest"."""
        ends = self.end_offsets()
        if self.options.starting_offsets == "earliest":
            ends = {tp: 0 for tp in ends}
        return to_kafka_offsets(ends)

    def getDefaultReadLimit(self) -> ReadLimit:
        """``ReadMaxRows(maxOffsetsPerTrigger)`` if that option is set, else read everything."""
        if self.options.max_offsets_per_trigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.options.max_offsets_per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        """Fix the end of an ``availableNow`` run at what is in the log now."""
        self.available_now_target = self.end_offsets()

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        """The end of the next micro-batch: everything available, or at most ``limit`` rows."""
        begin = from_kafka_offsets(start)
        ends = self.end_offsets()
        if self.available_now_target is not None:
            ends = {tp: min(end, self.available_now_target.get(tp, 0)) for tp, end in ends.items()}
        backlog = {tp: max(end - begin.get(tp, 0), 0) for tp, end in ends.items()}
        if isinstance(limit, ReadMaxRows):
            backlog = allocate(backlog, limit.max_rows)
        elif not isinstance(limit, ReadAllAvailable):
            raise ValueError(f"{SOURCE_NAME} does not support the read limit {limit!r}")
        taken = {tp: begin.get(tp, 0) + size for tp, size in backlog.items()}
        return to_kafka_offsets({**begin, **taken})

    def reportLatestOffset(self) -> Offsets:
        """The true end of the log, ignoring any limit: what offset lag is measured against."""
        return to_kafka_offsets(self.end_offsets())

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[InputPartition]:
        """One task per topic-partition with records in ``[start, end)``."""
        begin = from_kafka_offsets(start)
        ranges = []
        for (topic, partition), stop in sorted(from_kafka_offsets(end).items()):
            first = begin.get((topic, partition), 0)  # a partition that appeared later
            if stop > first:
                ranges.append(LogRange(self.options.path, topic, partition, first, stop))
        return ranges

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        """The rows of one :class:`LogRange`, with the event time as a UTC datetime."""
        assert isinstance(partition, LogRange)
        log = PartitionedLog(partition.path)
        records = log.read(partition.topic, partition.partition, partition.start, partition.end)
        for offset, record in records:
            yield (
                partition.topic,
                partition.partition,
                offset,
                record.key,
                record.value,
                _EPOCH + timedelta(milliseconds=record.timestamp_ms),
            )

    def commit(self, end: Offsets) -> None:
        """Nothing to do: the log keeps every record (no retention yet)."""

    def stop(self) -> None:
        """Nothing to release: files are opened only while a range is read."""


class PartitionedLogDataSource(DataSource):
    """The ``partitioned_log`` streaming source (see the module docstring)."""

    @classmethod
    def name(cls) -> str:
        """The format name: ``spark.readStream.format("partitioned_log")``."""
        return SOURCE_NAME

    def schema(self) -> str:
        """Kafka's row shape; also validates the options so ``load()`` fails early."""
        SourceOptions.parse(self.options)
        return SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """A reader for one streaming query."""
        return PartitionedLogStreamReader(SourceOptions.parse(self.options))


def register(spark: Any) -> None:
    """Make ``format("partitioned_log")`` available in ``spark``."""
    spark.dataSource.register(PartitionedLogDataSource)
