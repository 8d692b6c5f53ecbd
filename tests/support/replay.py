"""A scenario read back through the partitioned-log source as Spark plans it, without Spark:
the event times each batch reads per partition, and the rows Spark drops as late."""

from collections.abc import Mapping

from pyspark.sql.datasource import CaseInsensitiveDict

from streaming.log import PartitionedLog
from streaming.partitioned_log import PartitionedLogStreamReader, SourceOptions, from_kafka_offsets


class Replay:
    """Batches planned one trigger at a time over the log as it is then, with Spark's rule.

    Spark's watermark for batch N is ``W_N = max event time of batches < N - delay`` (never
    going back); batch N drops the rows with ``ts <= W_{N-1}`` (verified on Spark 4.3).
    """

    def __init__(
        self, options: Mapping[str, str], delay_ms: int, available_now: bool = False
    ) -> None:
        self.reader = PartitionedLogStreamReader(SourceOptions.parse(CaseInsensitiveDict(options)))
        if available_now:
            self.reader.prepareForTriggerAvailableNow()
        self.log = PartitionedLog(options["path"])
        self.delay_ms = delay_ms
        self.start = self.reader.initialOffset()
        self.max_seen: int | None = None
        self.watermarks = [0, 0]
        self.batches: list[dict[int, list[int]]] = []
        self.late: dict[int, int] = {}

    def trigger(self) -> bool:
        """Plan and read one batch, if there is anything new to read; whether there was."""
        end = self.reader.latestOffset(self.start, self.reader.getDefaultReadLimit())
        if end == self.start:
            return False
        read = {}
        for (topic, partition), stop in from_kafka_offsets(end).items():
            first = from_kafka_offsets(self.start).get((topic, partition), 0)
            times = [r.timestamp_ms for _, r in self.log.read(topic, partition, first, stop)]
            read[partition] = times
            late = sum(t <= self.watermarks[-2] for t in times)
            self.late[partition] = self.late.get(partition, 0) + late
        self.batches.append(read)
        seen = [t for times in read.values() for t in times]
        self.max_seen = max([*seen, self.max_seen or 0])
        self.watermarks.append(max(self.watermarks[-1], self.max_seen - self.delay_ms))
        self.start = end
        return True

    @property
    def end(self) -> dict[tuple[str, int], int]:
        """The offsets read up to, per topic-partition."""
        return from_kafka_offsets(self.start)

    def backlog(self, topic: str, partition: int) -> int:
        """Records written to the topic-partition and not read yet."""
        return self.log.end_offset(topic, partition) - self.end.get((topic, partition), 0)

    def read(self, partition: int) -> int:
        """Records read from ``partition``, over every batch."""
        return sum(len(batch.get(partition, [])) for batch in self.batches)

    def last_batch_reading(self, partition: int) -> int:
        """The last batch that read anything from ``partition``."""
        return max(n for n, batch in enumerate(self.batches) if batch.get(partition))


def replay_to_end(options: Mapping[str, str], delay_ms: int) -> Replay:
    """Play a written scenario back as an availableNow query would, to its end."""
    played = Replay(options, delay_ms, available_now=True)
    while played.trigger():
        assert len(played.batches) < 1_000, "the replay does not end"
    return played
