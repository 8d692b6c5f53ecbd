"""A Spark streaming source over :mod:`streaming.log`, with Kafka's options, rows and offsets.

::

    register(spark)
    df = (spark.readStream.format("partitioned_log")
          .option("path", "/data/log").option("subscribe", "telemetry")
          .option("maxOffsetsPerTrigger", 1000).load())

Rows have Kafka's shape (``topic, partition, offset, key, value, timestamp``) and offsets
Kafka's JSON shape, ``{"telemetry": {"0": 120, "1": 98}}`` (topic -> partition -> next offset
to read), so the monitor reads this source's progress exactly as it reads Kafka's.

Besides Kafka's options, ``maxOffsetsPerPartition`` caps what each partition gives per trigger,
to model partitions read at different speeds (a skewed backfill) or not at all (a stalled
partition): ``.option("maxOffsetsPerPartition", '{"0": 100, "1": 10, "2": 0}')``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
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
_PARTITION_NUMBER = re.compile(r"[0-9]+")

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
    # Partition number -> most records it gives per trigger, in every subscribed topic.
    max_offsets_per_partition: dict[int, int] = field(default_factory=dict, hash=False)

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
        caps = options.get("maxOffsetsPerPartition")
        return cls(
            path,
            topics,
            starting,
            None if limit is None else _positive_int(limit),
            {} if caps is None else partition_limits(caps),
        )


def _positive_int(text: str) -> int:
    """Parse maxOffsetsPerTrigger, which must be a whole number above zero."""
    try:
        value = int(str(text).strip())
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"option 'maxOffsetsPerTrigger' must be a positive integer, got {text!r}")
    return value


class _JsonPairs(list):
    """A JSON object's ``(key, value)`` pairs in order, duplicate keys kept (a dict drops them)."""


def partition_limits(text: str) -> dict[int, int]:
    """Parse maxOffsetsPerPartition, ``'{"0": 100, "2": 0}'``, into ``{0: 100, 2: 0}``.

    Keys are partition numbers (named once each); values whole numbers ``>= 0``. Partitions
    that are not named have no limit of their own. Raise ValueError naming the option.
    """
    try:
        pairs = json.loads(str(text), object_pairs_hook=_JsonPairs)
    except ValueError:
        pairs = None
    if not isinstance(pairs, _JsonPairs):
        raise _bad_partition_limits(text, "not a JSON object")
    limits: dict[int, int] = {}
    for key, value in pairs:
        if not _PARTITION_NUMBER.fullmatch(key):
            raise _bad_partition_limits(text, f"key {key!r} is not a partition number")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _bad_partition_limits(text, f"the limit of partition {key} is not an int >= 0")
        if int(key) in limits:
            raise _bad_partition_limits(text, f"partition {int(key)} is named twice")
        limits[int(key)] = value
    return limits


def _bad_partition_limits(text: object, reason: str) -> ValueError:
    return ValueError(
        "option 'maxOffsetsPerPartition' must be a JSON object from partition number to the "
        'most records it gives per trigger (0 holds it back), e.g. \'{"0": 100, "1": 0}\': '
        f"{reason} in {text!r}"
    )


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


def plan_batch(
    backlog: Mapping[TopicPartition, int], limit: int | None, caps: Mapping[int, int]
) -> dict[TopicPartition, int]:
    """How many records each partition gives the next batch.

    First each partition's own cap (``caps``, maxOffsetsPerPartition, by partition number in
    every topic; 0 holds a partition back), then ``limit`` (maxOffsetsPerTrigger, None for no
    limit) split over what remains by :func:`allocate`. So a batch never takes more than a
    partition's cap, its backlog or the total limit, and takes something whenever both a
    capped backlog and the limit allow it.
    """
    capped = {tp: min(size, caps.get(tp[1], size)) for tp, size in backlog.items()}
    return capped if limit is None else allocate(capped, limit)


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
        """Fix the end of an ``availableNow`` run at what is in the log now.

        Partitions held back by maxOffsetsPerPartition (limit 0) never reach this target: Spark
        ends the run at the first trigger with nothing new to read, so they do not keep it
        running, and their backlog stays unread (as a stalled partition's would).
        """
        self.available_now_target = self.end_offsets()

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        """The end of the next micro-batch: what is available, within the read limits.

        ``limit`` is ``ReadMaxRows`` (maxOffsetsPerTrigger) or ``ReadAllAvailable``. The
        per-partition caps of maxOffsetsPerPartition apply under both, ``ReadAllAvailable``
        included: they model how fast a partition can be read, not an option of the trigger.
        Under ``availableNow`` the end never passes the target fixed when the run started.
        """
        begin = from_kafka_offsets(start)
        ends = self.end_offsets()
        if self.available_now_target is not None:
            ends = {tp: min(end, self.available_now_target.get(tp, 0)) for tp, end in ends.items()}
        backlog = {tp: max(end - begin.get(tp, 0), 0) for tp, end in ends.items()}
        if isinstance(limit, ReadMaxRows):
            max_rows: int | None = limit.max_rows
        elif isinstance(limit, ReadAllAvailable):
            max_rows = None
        else:
            raise ValueError(f"{SOURCE_NAME} does not support the read limit {limit!r}")
        sizes = plan_batch(backlog, max_rows, self.options.max_offsets_per_partition)
        taken = {tp: begin.get(tp, 0) + size for tp, size in sizes.items()}
        return to_kafka_offsets({**begin, **taken})

    def reportLatestOffset(self) -> Offsets:
        """The true end of the log, ignoring any limit: what offset lag is measured against.

        A partition held back by maxOffsetsPerPartition shows its whole backlog here.
        """
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
