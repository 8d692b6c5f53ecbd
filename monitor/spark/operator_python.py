"""The instrumented operator in Python: an Arrow UDF measuring each task's rows.

It adds one string column, filled only on the last row of each task with that task's
per-partition figures; `observe` collects those into the batch's progress event and the column
is dropped again. Used when the session's JVM has no wmon-spark.jar, and on Spark Connect,
where a client cannot reach the JVM (see operator_jvm.py).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from monitor.collect.observed import later_record, sample_order
from monitor.events import OBSERVATION, SAMPLES_PER_PARTITION
from monitor.regular_files import open_regular
from monitor.spark.checkpoints import query_checkpoint
from monitor.spark.measuring import NO_WATERMARK_MS, Measuring, check_columns

STATS_COLUMN = "__wmon_stats"
# Late samples: the records with the smallest (offset, event time, key), missing values first,
# so that which ones are kept does not depend on the order Spark runs tasks in.
_SAMPLE_ORDER = [(name, "ascending", "at_start") for name in ("o", "t", "k")]


def _batch_metadata(checkpoint: str, batch_id: int) -> dict[str, Any] | None:
    """The second line of the offset log entry of batch `batch_id`, if it was written."""
    path = os.path.join(checkpoint, "offsets", str(batch_id))
    if batch_id < 0 or not os.path.exists(path):
        return None
    with io.TextIOWrapper(open_regular(path), encoding="utf-8") as offsets:
        offsets.readline()
        metadata: dict[str, Any] = json.loads(offsets.readline())
        return metadata


def late_watermark_ms(checkpoint: str, batch_id: int) -> int | None:
    """The watermark Spark drops late rows with in batch `batch_id`: that of batch N-1."""
    metadata = _batch_metadata(checkpoint, batch_id - 1)
    return None if metadata is None else int(metadata["batchWatermarkMs"])


def batch_time_ms(checkpoint: str, batch_id: int) -> int | None:
    """Batch `batch_id`'s processing time, written to its offset log entry before it runs."""
    metadata = _batch_metadata(checkpoint, batch_id)
    return None if metadata is None else int(metadata["batchTimestampMs"])


def partition_keys(
    batch: pa.RecordBatch, partition: str | None, topic: str | None, task_partition: int
) -> pa.Array:
    """Each row's partition name: 'topic/partition', 'partition', or the Spark input split."""
    if partition is None or partition not in batch.schema.names:
        return pa.array([str(task_partition)] * batch.num_rows, pa.string())
    keys = pc.cast(batch.column(partition), pa.string())
    if topic is not None and topic in batch.schema.names:
        keys = pc.binary_join_element_wise(pc.cast(batch.column(topic), pa.string()), keys, "/")
    return keys


def event_times_us(batch: pa.RecordBatch, event_time: str) -> pa.Array:
    """Event times in epoch microseconds, Spark's own precision (integer columns are ms)."""
    column = batch.column(event_time)
    if pa.types.is_timestamp(column.type):
        return pc.cast(pc.cast(column, pa.timestamp("us", tz="UTC")), pa.int64())
    return pc.multiply(pc.cast(column, pa.int64()), 1000)


def compared_times_ms(times_us: pa.Array, window_ms: int | None) -> pa.Array:
    """Times whose `<= watermark` (in ms) agrees with Spark's comparison in microseconds.

    Without a window Spark drops a row when t_us <= W_ms * 1000, that is when t rounded up to
    the millisecond is <= W; with a window it compares the window's end, a whole millisecond.
    """
    if window_ms is None:
        return pc.divide(pc.add(times_us, 999), 1000)
    return effective_times_ms(pc.divide(times_us, 1000), window_ms)


def effective_times_ms(times: pa.Array, window_ms: int | None) -> pa.Array:
    """The time Spark compares with the watermark: the event time, or its window's end."""
    if window_ms is None:
        return times
    # Epoch times are positive, so integer division floors to the window's start.
    return pc.add(pc.multiply(pc.divide(times, window_ms), window_ms), window_ms)


class TaskStats:
    """Per-partition figures of one task: records, min/max event time and the record at the
    max, late records and samples, future-dated records and samples, and how far the records
    were from the late watermark (log-scale histograms of the late and the on-time ones; none
    against Spark's placeholder, NO_WATERMARK_MS)."""

    def __init__(
        self,
        late_watermark: int | None,
        window_ms: int | None,
        batch_time_ms: int | None = None,
        future_tolerance_ms: int = 0,
    ) -> None:
        self.late_watermark, self.window_ms = late_watermark, window_ms
        self.batch_time_ms, self.future_tolerance_ms = batch_time_ms, future_tolerance_ms
        self.partitions: dict[str, dict[str, Any]] = {}

    def add(
        self,
        keys: pa.Array,
        times: pa.Array,
        record_keys: pa.Array | None,
        offsets: pa.Array | None,
        compared: pa.Array | None = None,
    ) -> None:
        """Fold one Arrow batch in: event times in ms, and the times Spark compares with the
        watermark (by default the event times, or their window's end)."""
        if compared is None:
            compared = effective_times_ms(times, self.window_ms)
        table = pa.table(
            {
                "p": keys,
                "t": times,
                "k": _or_nulls(record_keys, pa.string(), keys),
                "o": _or_nulls(offsets, pa.int64(), keys),
                "c": compared,
            }
        )
        valid = table.filter(pc.is_valid(table.column("t")))
        aggregates = valid.group_by("p").aggregate([("t", "count"), ("t", "min"), ("t", "max")])
        for row in aggregates.to_pylist():
            entry = self.partitions.setdefault(row["p"], _new_entry())
            entry["records"] += row["t_count"]
            entry["min_ms"] = _min(entry["min_ms"], row["t_min"])
            entry["max_ms"] = _max(entry["max_ms"], row["t_max"])
        self._add_max_records(valid, aggregates)
        if self.batch_time_ms is not None:
            self._add_future(valid)
        if self.late_watermark is not None:
            self._add_late(valid)

    def _add_max_records(self, rows: pa.Table, aggregates: pa.Table) -> None:
        # Each row beside its partition's max: the rows at the max are few.
        at = pc.index_in(rows.column("p"), value_set=aggregates.column("p"))
        tops = rows.filter(pc.equal(rows.column("t"), pc.take(aggregates.column("t_max"), at)))
        for row in tops.to_pylist():
            entry = self.partitions[row["p"]]
            entry["max_record"] = later_record(entry["max_record"], [row["k"], row["t"], row["o"]])

    def _add_future(self, rows: pa.Table) -> None:
        leads = pc.subtract(rows.column("t"), self.batch_time_ms)
        future = pc.greater(leads, self.future_tolerance_ms)
        if not pc.any(future).as_py():
            return
        future_rows = rows.append_column("lead", leads).filter(future)
        counts = future_rows.group_by("p").aggregate([("lead", "count"), ("lead", "max")])
        for row in counts.to_pylist():
            entry = self.partitions[row["p"]]
            entry["future"] += row["lead_count"]
            entry["future_lead_ms"] = _max(entry["future_lead_ms"], row["lead_max"])
        self._keep_samples("future_samples", future_rows)

    def _add_late(self, rows: pa.Table) -> None:
        margins = pc.subtract(rows.column("c"), self.late_watermark)
        late = pc.less_equal(margins, 0)
        late_rows = rows.filter(late)
        if late_rows.num_rows:
            for row in late_rows.group_by("p").aggregate([("t", "count")]).to_pylist():
                self.partitions[row["p"]]["late"] += row["t_count"]
            self._keep_samples("samples", late_rows)
        if self.late_watermark == NO_WATERMARK_MS:
            return
        self._count_buckets("late_buckets", late_rows.column("p"), pc.negate(margins.filter(late)))
        on_time = pc.invert(late)
        self._count_buckets(
            "slack_buckets", rows.column("p").filter(on_time), margins.filter(on_time)
        )

    def _keep_samples(self, field: str, rows: pa.Table) -> None:
        """Keep, per partition, the first records of `rows` in sample order as `field`."""
        for name in pc.unique(rows.column("p")).to_pylist():
            mine = rows.filter(pc.equal(rows.column("p"), name))
            first = mine.take(
                pc.sort_indices(mine, sort_keys=_SAMPLE_ORDER)[:SAMPLES_PER_PARTITION]
            )
            entry = self.partitions[name]
            candidates = entry[field] + [[r["k"], r["t"], r["o"]] for r in first.to_pylist()]
            entry[field] = sorted(candidates, key=sample_order)[:SAMPLES_PER_PARTITION]

    def _count_buckets(self, field: str, names: pa.Array, distances: pa.Array) -> None:
        """Count each distance (ms, not negative) in its partition's histogram `field`."""
        if not len(distances):
            return
        # frexp's exponent of a whole number below 2**53 is its bit length: the bucket.
        numbers = np.frexp(distances.to_numpy(zero_copy_only=False).astype(np.float64))[1]
        counts = (
            pa.table({"p": names, "b": numbers}).group_by(["p", "b"]).aggregate([("b", "count")])
        )
        for row in counts.to_pylist():
            histogram = self.partitions[row["p"]][field]
            histogram[str(row["b"])] = histogram.get(str(row["b"]), 0) + row["b_count"]

    def to_json(self, batch_id: int, delay_ms: int) -> str:
        """The figures as the JSON one row of the stats column carries."""
        return json.dumps(
            {
                "batch": batch_id,
                "delay_ms": delay_ms,
                "late_watermark_ms": self.late_watermark,
                "batch_time_ms": self.batch_time_ms,
                "future_tolerance_ms": self.future_tolerance_ms,
                "partitions": self.partitions,
            },
            separators=(",", ":"),
        )


def _new_entry() -> dict[str, Any]:
    return {
        "records": 0,
        "min_ms": None,
        "max_ms": None,
        "max_record": None,
        "late": 0,
        "samples": [],
        "future": 0,
        "future_lead_ms": None,
        "future_samples": [],
        "late_buckets": {},
        "slack_buckets": {},
    }


def _or_nulls(column: pa.Array | None, kind: pa.DataType, like: pa.Array) -> pa.Array:
    return column if column is not None else pa.nulls(len(like), kind)


def _min(a: int | None, b: int) -> int:
    return b if a is None else min(a, b)


def _max(a: int | None, b: int) -> int:
    return b if a is None else max(a, b)


def measure(rows: Iterator[pa.Array], measuring: Measuring) -> Iterator[pa.Array]:
    """Each task's rows (as structs of their measured columns) measured: a string per row,
    null but on the task's last row, which carries the task's figures as JSON."""
    from pyspark import TaskContext

    context = TaskContext.get()
    batch_property = context.getLocalProperty("streaming.sql.batchId") if context else None
    if context is None or batch_property is None:
        raise RuntimeError("wmon: instrument() works only inside a streaming query")
    batch_id = int(batch_property)
    checkpoint = query_checkpoint(
        measuring.checkpoint, context.getLocalProperty("sql.streaming.queryId")
    )
    stats = TaskStats(
        late_watermark_ms(checkpoint, batch_id),
        measuring.window_ms,
        batch_time_ms(checkpoint, batch_id),
        measuring.future_tolerance_ms,
    )
    previous: pa.RecordBatch | None = None
    for struct in rows:
        batch = pa.RecordBatch.from_struct_array(struct)
        if batch.num_rows == 0:
            yield pa.nulls(0, pa.string())
            continue
        if previous is None:
            check_columns(batch.schema.names, measuring)
        else:
            yield pa.nulls(previous.num_rows, pa.string())
        times_us = event_times_us(batch, measuring.event_time)
        stats.add(
            partition_keys(batch, measuring.partition, measuring.topic, context.partitionId()),
            # Rounded down to the millisecond, as Spark's event-time statistics are.
            pc.divide(times_us, 1000),
            _column(batch, measuring.key, pa.string()),
            _column(batch, measuring.offset, pa.int64()),
            compared_times_ms(times_us, measuring.window_ms),
        )
        previous = batch
    if previous is not None:
        # The task's figures ride on its last row; empty batches passed through above.
        last = [None] * (previous.num_rows - 1) + [stats.to_json(batch_id, measuring.delay_ms)]
        yield pa.array(last, pa.string())


def _column(batch: pa.RecordBatch, name: str | None, kind: pa.DataType) -> pa.Array | None:
    if name is None or name not in batch.schema.names:
        return None
    return pc.cast(batch.column(name), kind)


def measured_in_python(df: Any, measuring: Measuring, columns: list[str] | None = None) -> Any:
    """`df` measured by an Arrow UDF, observed as OBSERVATION.

    The UDF takes the rows as a struct of `columns`, by default all of them: nothing here
    analyses `df` (on Spark Connect that is a round trip, and a pipeline's flow function may
    not), and the named columns are checked when the first rows arrive.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    def measured(rows: Iterator[pa.Array]) -> Iterator[pa.Array]:
        return measure(rows, measuring)

    # A type, not "string": on Spark Connect a DDL string is parsed by the server. The
    # iterator form is told by the type hints (pyspark's stubs know it only with a
    # functionType, which pyspark warns against).
    stats = F.arrow_udf(measured, StringType()).asNondeterministic()  # type: ignore[call-overload]
    fields = [F.col("*")] if columns is None else [df[name] for name in columns]
    observed = df.withColumn(STATS_COLUMN, stats(F.struct(*fields)))
    return observed.observe(OBSERVATION, F.collect_list(STATS_COLUMN).alias("tasks")).drop(
        STATS_COLUMN
    )
