"""Real streaming queries over partitioned logs in tests, and what each batch of one read."""

import contextlib
import json
import os
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import monitor
from streaming.log import LogRecord, PartitionedLog

START_MS = 1_700_000_000_000  # event times of the generated logs start here


def unique_name(prefix: str = "q") -> str:
    """A query name that no other test uses."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


@contextlib.contextmanager
def without_no_data_batches(spark: Any) -> Iterator[None]:
    """Queries started inside run no batch that reads nothing after the last (Spark's no-data
    batch, run to move the watermark on): it measures nothing, and each batch costs a Spark
    test about as much as the next. A query takes the setting as it starts."""
    spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
    try:
        yield
    finally:
        spark.conf.unset("spark.sql.streaming.noDataMicroBatches.enabled")


def offset_log(checkpoint: str) -> dict[int, tuple[int, dict[int, int]]]:
    """Per batch: the watermark written before it ran and the source's end offsets."""
    batches = {}
    for name in os.listdir(os.path.join(checkpoint, "offsets")):
        if name.isdigit():
            with open(os.path.join(checkpoint, "offsets", name)) as entry:
                lines = entry.read().splitlines()
            batches[int(name)] = (
                json.loads(lines[1])["batchWatermarkMs"],
                {int(p): o for p, o in json.loads(lines[2])["telemetry"].items()},
            )
    return batches


def records_read(log: Any, checkpoint: str) -> Iterator[tuple[int, int, Any, bool]]:
    """Every record a query read, from the files and the offset log alone: its batch, its
    partition, the record, and whether Spark dropped it as late (at or below W_{N-1})."""
    batches = offset_log(checkpoint)
    for batch_id in sorted(batches):
        previous = batches.get(batch_id - 1)
        for partition, end in batches[batch_id][1].items():
            start = previous[1].get(partition, 0) if previous else 0
            for _, record in log.read("telemetry", partition, start, end):
                late = previous is not None and record.timestamp_ms <= previous[0]
                yield batch_id, partition, record, late


def skewed_log(log_dir: Path, spacing_ms: dict[int, int], records: int) -> Any:
    """A partitioned log of topic 'telemetry': `records` records per partition, event time
    advancing `spacing_ms[partition]` per record from START_MS, keys 'scooter-{partition}-{i}'.
    Read at the same rate in records, the widest spacing drags the watermark ahead of the
    others, as in a backfill."""
    log = PartitionedLog(log_dir)
    for partition, spacing in spacing_ms.items():
        log.append(
            "telemetry",
            partition,
            [
                LogRecord(f"scooter-{partition}-{i}", "{}", START_MS + i * spacing)
                for i in range(records)
            ],
        )
    return log


def expected_late(log: Any, checkpoint: str) -> dict[tuple[int, str], int]:
    """Late records per (batch, partition), from the files and the offset log alone."""
    read = records_read(log, checkpoint)
    return dict(Counter((batch, f"telemetry/{p}") for batch, p, _, late in read if late))


def read_by_spark(query: Any) -> dict[tuple[int, str], int]:
    """Records each batch read per partition, from the offsets its progress reports as text."""
    read: dict[tuple[int, str], int] = {}
    for progress in query.recentProgress:
        source = progress["sources"][0]
        start = json.loads(source["startOffset"] or "null") or {"telemetry": {}}
        for partition, end in json.loads(source["endOffset"])["telemetry"].items():
            begin = start["telemetry"].get(partition, 0)
            read[(progress["batchId"], f"telemetry/{partition}")] = end - begin
    return read


def start_query(
    spark: Any,
    scenario: Any,
    log_dir: Path,
    checkpoint: str,
    query_name: str,
    each_batch: Callable[[Any, int], None] | None = None,
    every: str = "500 milliseconds",
) -> Any:
    """The scenario's records read, measured and deduplicated, a batch `every` so often;
    written nowhere, or handed to `each_batch` (a foreachBatch function)."""
    source = spark.readStream.format("partitioned_log").options(**scenario.source_options(log_dir))
    measured = monitor.instrument(source.load(), checkpoint=checkpoint, delay="10 seconds")
    deduplicated = measured.withWatermark("timestamp", "10 seconds").dropDuplicates(
        ["key", "timestamp"]
    )
    writer = deduplicated.writeStream.queryName(query_name).option("checkpointLocation", checkpoint)
    writer = writer.foreachBatch(each_batch) if each_batch else writer.format("noop")
    return writer.trigger(processingTime=every).start()


def start_partition_counts(spark: Any, scenario: Any, log_dir: Path, checkpoint: str) -> Any:
    """The scenario's records measured by the instrumented operator and counted per partition
    (a watermark of 10 s), a batch every 300 ms, written nowhere."""
    reader = spark.readStream.format("partitioned_log").options(**scenario.source_options(log_dir))
    measured = monitor.instrument(reader.load(), checkpoint=checkpoint, delay="10 seconds")
    return (
        measured.withWatermark("timestamp", "10 seconds")
        .groupBy("partition")
        .count()
        .writeStream.queryName(unique_name("scenario"))
        .format("noop")
        .outputMode("update")
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="300 milliseconds")
        .start()
    )
