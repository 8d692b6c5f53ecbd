"""History over a time range, downsampled in SQL into at most `points` equal time buckets.

Series are columnar, `{"time_ms": [...], "watermark_ms": [...], ...}`, one entry per bucket
that holds at least one batch; `time_ms` is the start of the bucket. Series of ranges past two
days come from the per-hour rollups (store.minutes; the partitions' packed a row per span and
reduced by store.packed_series), of buckets a minute or wider from the per-minute ones: the
hours or minutes that start in the range, with the largest lags and any stall of each bucket;
narrower buckets from the batches (a query's every batch, a partition's last batch of each
bucket).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.packed import batch_event_times, batch_offsets
from monitor.store.packed.packed_series import bucket_series
from monitor.store.packed.packing import unpack
from monitor.store.schema.models import Batch, Query, StateOperator
from monitor.store.schema.whole_sum import whole_sum
from monitor.store.tiers.minutes import (
    MINUTE_MS,
    PARTITION_HOURS,
    PARTITION_MINUTES,
    QUERY_HOURS,
    QUERY_MINUTES,
    Tier,
)

MAX_POINTS = 5_000

Series = dict[str, list[Any]]


@dataclass(frozen=True)
class Window:
    """The half-open time range [from_ms, to_ms), cut into at most `points` equal buckets."""

    from_ms: int
    to_ms: int
    points: int

    @property
    def bucket_ms(self) -> int:
        """The width of a bucket: the range over the points, rounded up."""
        return -(-(self.to_ms - self.from_ms) // self.points)

    def bucket(self, time_ms: Any) -> sa.ColumnElement[int]:
        """The bucket number of a time column, as a SQL expression."""
        start = sa.literal(self.from_ms, sa.BigInteger)
        return ((time_ms - start) // sa.literal(self.bucket_ms, sa.BigInteger)).label("bucket")

    def covers(self, time_ms: Any) -> sa.ColumnElement[bool]:
        """Whether a time column falls inside the range, as a SQL expression."""
        return sa.and_(time_ms >= self.from_ms, time_ms < self.to_ms)

    def start_of(self, bucket: int) -> int:
        """The time at which a bucket starts."""
        return self.from_ms + int(bucket) * self.bucket_ms


@dataclass(frozen=True)
class Kept:
    """Since when a query's batches, and its per-minute rollups, are all still stored (None:
    nothing of them was ever pruned; store.prune notes them)."""

    batches_from_ms: int | None = None
    minutes_from_ms: int | None = None

    @classmethod
    def of(cls, query: Query) -> Kept:
        """What the query's row says."""
        return cls(query.batches_kept_from_ms, query.minutes_kept_from_ms)

    def batches_cover(self, from_ms: int) -> bool:
        """Whether every batch from `from_ms` on is still stored."""
        return self.batches_from_ms is None or from_ms >= self.batches_from_ms

    def minutes_cover(self, from_ms: int) -> bool:
        """Whether every per-minute rollup from `from_ms` on is still stored."""
        return self.minutes_from_ms is None or from_ms >= self.minutes_from_ms


EVERYTHING = Kept()


def _whole(value: Any) -> int | None:
    return None if value is None else int(value)


def _age(value: Any) -> int | None:
    """The largest of ages that may be negative (a watermark ahead of its batch), as an age."""
    return None if value is None else max(int(value), 0)


def _real(value: Any) -> float | None:
    return None if value is None else float(value)


def _flag(value: Any) -> bool:
    return bool(value)


Aggregate = tuple[str, Any, Callable[[Any], Any]]

BATCH_AGGREGATES: tuple[Aggregate, ...] = (
    ("batches", sa.func.count(), int),
    ("first_batch_id", sa.func.min(Batch.batch_id), int),
    ("last_batch_id", sa.func.max(Batch.batch_id), int),
    ("watermark_ms", sa.func.max(Batch.watermark_ms), _whole),
    ("flink_watermark_ms", sa.func.max(Batch.flink_watermark_ms), _whole),
    ("watermark_age_max_ms", sa.func.max(Batch.batch_time_ms - Batch.watermark_ms), _age),
    ("skew_avg_ms", sa.func.avg(Batch.watermark_skew_ms), _real),
    ("skew_max_ms", sa.func.max(Batch.watermark_skew_ms), _whole),
    ("duration_avg_ms", sa.func.avg(Batch.trigger_duration_ms), _real),
    ("duration_max_ms", sa.func.max(Batch.trigger_duration_ms), _whole),
    ("input_rows", whole_sum(Batch.num_input_rows), _whole),
    ("input_rows_per_second", sa.func.avg(Batch.input_rows_per_second), _real),
    ("processed_rows_per_second", sa.func.avg(Batch.processed_rows_per_second), _real),
    ("watermark_stalled", sa.func.max(sa.cast(Batch.watermark_stalled, sa.Integer)), _flag),
)


def _columns(aggregates: tuple[Aggregate, ...]) -> list[sa.ColumnElement[Any]]:
    return [expression.label(name) for name, expression, _ in aggregates]


def _converted(row: Any, aggregates: tuple[Aggregate, ...]) -> dict[str, Any]:
    return {name: convert(getattr(row, name)) for name, _, convert in aggregates}


def _columnar(window: Window, buckets: dict[int, dict[str, Any]], names: list[str]) -> Series:
    ordered = sorted(buckets)
    series: Series = {"time_ms": [window.start_of(bucket) for bucket in ordered]}
    for name in names:
        series[name] = [buckets[bucket].get(name) for bucket in ordered]
    return series


def _names(*aggregates: tuple[Aggregate, ...]) -> list[str]:
    return [name for group in aggregates for name, _, _ in group]


def batch_series(
    session: so.Session, query_id: str, window: Window, kept: Kept = EVERYTHING
) -> Series:
    """A query's batches in the window, aggregated per bucket, with rows dropped by watermark:
    from the batches themselves, or from the query's minutes or hours, as `resolution` says."""
    tier = resolution(window, kept)
    if tier != "last_batch":
        return _query_rollup_series(
            session, query_id, window, QUERY_MINUTES if tier == "minute" else QUERY_HOURS
        )
    bucket = window.bucket(Batch.batch_time_ms)
    where = (Batch.query_id == query_id, window.covers(Batch.batch_time_ms))
    rows = session.execute(
        sa.select(bucket, *_columns(BATCH_AGGREGATES)).where(*where).group_by(bucket)
    )
    buckets = {row.bucket: _converted(row, BATCH_AGGREGATES) for row in rows}
    dropped = session.execute(
        sa.select(bucket, whole_sum(StateOperator.num_rows_dropped_by_watermark))
        .join(
            Batch,
            sa.and_(
                Batch.query_id == StateOperator.query_id, Batch.batch_id == StateOperator.batch_id
            ),
        )
        .where(*where)
        .group_by(bucket)
    )
    for number, rows_dropped in dropped:
        buckets[number]["rows_dropped_by_watermark"] = _whole(rows_dropped)
    return _columnar(window, buckets, [*_names(BATCH_AGGREGATES), "rows_dropped_by_watermark"])


def bucket_ends(session: so.Session, query_id: str, window: Window) -> dict[int, int]:
    """The last batch id of each bucket that holds a batch, by bucket number."""
    bucket = window.bucket(Batch.batch_time_ms)
    rows = session.execute(
        sa.select(bucket, sa.func.max(Batch.batch_id))
        .where(Batch.query_id == query_id, window.covers(Batch.batch_time_ms))
        .group_by(bucket)
    )
    return {bucket: batch_id for bucket, batch_id in rows}


def _batch_before(session: so.Session, query_id: str, window: Window) -> int | None:
    return session.scalar(
        sa.select(Batch.batch_id)
        .where(Batch.query_id == query_id, Batch.batch_time_ms < window.from_ms)
        .order_by(Batch.batch_time_ms.desc(), Batch.batch_id.desc())
        .limit(1)
    )


# Values at the last batch of a bucket, served as they are.
SAMPLED_FIELDS = (
    "max_event_time_ms",
    "partition_watermark_ms",
    "time_lag_ms",
    "offset_lag",
    "idle",
    "stalled",
)
# Running totals, served as their increase over the bucket: late records count from 0 at the
# query's first batch; the offset it started from is not known.
TOTALS = {"late_records": ("late_records_total", 0), "records": ("end_offset", None)}
PARTITION_FIELDS = (*SAMPLED_FIELDS, *(total for total, _ in TOTALS.values()))
# The series partition_series gives each partition, besides their times.
PARTITION_SERIES = (*SAMPLED_FIELDS, *TOTALS)


def _partition_rows(
    session: so.Session, query_id: str, batch_ids: list[int]
) -> dict[tuple[str, int], dict[str, Any]]:
    """The running values of some batches' partitions, by (partition, batch id)."""
    found: dict[tuple[str, int], dict[str, Any]] = {}
    rows: list[batch_event_times.StoredEventTimes | batch_offsets.StoredPartition]
    rows = [*batch_event_times.of_batches(session, query_id, batch_ids)]
    rows += batch_offsets.of_batches(session, query_id, batch_ids)
    names_of = {
        kind: [name for name in PARTITION_FIELDS if name in kind._fields]
        for kind in (batch_event_times.StoredEventTimes, batch_offsets.StoredPartition)
    }
    for row in rows:
        names = names_of[type(row)]
        found.setdefault((row.partition, row.batch_id), {}).update(
            zip(names, map(row.__getattribute__, names), strict=True)
        )
    return found


def _increase(now: int | None, before: int | None) -> int | None:
    return None if now is None or before is None else now - before


def _partition_series(
    name: str,
    ends: dict[int, int],
    before: int | None,
    rows: dict[tuple[str, int], dict[str, Any]],
    window: Window,
) -> Series:
    series: Series = {"time_ms": []} | {field: [] for field in PARTITION_SERIES}
    last = rows.get((name, before), {}) if before is not None else {}
    for bucket in sorted(ends):
        row = rows.get((name, ends[bucket]))
        if row is None:
            continue
        series["time_ms"].append(window.start_of(bucket))
        for field in SAMPLED_FIELDS:
            series[field].append(row.get(field))
        for field, (total, start) in TOTALS.items():
            series[field].append(_increase(row.get(total), last.get(total, start)))
        last = row
    return series


# The longest range whose partition series are read from the per-minute rollups: unpacking
# and reducing a packed row per minute (64 partitions, SQLite) takes about 0.15 s for two
# days, 0.4-0.5 s for 7 and 2 s for 30, most of it decompressing; longer ranges read the
# per-hour rollups.
MINUTES_RANGE_MS = 2 * 86_400_000


def resolution(window: Window, kept: Kept = EVERYTHING) -> str:
    """What a window's series are read from: "hour" (store.minutes' per-hour rollups) past
    MINUTES_RANGE_MS or before the per-minute ones kept, "minute" (the per-minute ones) for
    buckets of a minute or more or before the batches kept, "last_batch" (the batches; a
    partition's last batch of each bucket) for narrower ones."""
    if window.to_ms - window.from_ms > MINUTES_RANGE_MS or not kept.minutes_cover(window.from_ms):
        return "hour"
    if window.bucket_ms >= MINUTE_MS or not kept.batches_cover(window.from_ms):
        return "minute"
    return "last_batch"


def partition_series(
    session: so.Session, query_id: str, window: Window, kept: Kept = EVERYTHING
) -> dict[str, Series]:
    """Per partition, each bucket's series, read as `resolution` says."""
    tier = resolution(window, kept)
    if tier == "last_batch":
        return _last_batch_series(session, query_id, window)
    return _rollup_series(
        session, query_id, window, PARTITION_MINUTES if tier == "minute" else PARTITION_HOURS
    )


def _query_rollup_series(session: so.Session, query_id: str, window: Window, tier: Tier) -> Series:
    """A query's minutes or hours that start in the window, aggregated per bucket as
    batch_series aggregates batches: averages are the buckets' sums over their counts."""
    model: Any = tier.model
    start = tier.column(tier.start)
    bucket = window.bucket(start)
    sums = {
        name: whole_sum(getattr(model, name))
        for name in ("skew_sum_ms", "duration_sum_ms", "input_rows", "rows_dropped_by_watermark")
    } | {
        name: sa.func.sum(getattr(model, name))
        for name in (
            "batches",
            "skew_batches",
            "duration_batches",
            "input_rate_sum",
            "input_rate_batches",
            "processed_rate_sum",
            "processed_rate_batches",
        )
    }
    extremes = {
        "first_batch_id": sa.func.min(model.first_batch_id),
        "last_batch_id": sa.func.max(model.last_batch_id),
        "watermark_ms": sa.func.max(model.watermark_max_ms),
        "flink_watermark_ms": sa.func.max(model.flink_watermark_max_ms),
        "watermark_age_max_ms": sa.func.max(model.watermark_age_max_ms),
        "skew_max_ms": sa.func.max(model.skew_max_ms),
        "duration_max_ms": sa.func.max(model.duration_max_ms),
        "stalled_batches": sa.func.max(model.stalled_batches),
    }
    rows = session.execute(
        sa.select(bucket, *(value.label(name) for name, value in (sums | extremes).items()))
        .where(model.query_id == query_id, window.covers(start))
        .group_by(bucket)
    )
    buckets: dict[int, dict[str, Any]] = {}
    for row in rows:
        buckets[row.bucket] = {
            "batches": int(row.batches),
            "first_batch_id": int(row.first_batch_id),
            "last_batch_id": int(row.last_batch_id),
            "watermark_ms": _whole(row.watermark_ms),
            "flink_watermark_ms": _whole(row.flink_watermark_ms),
            "watermark_age_max_ms": _age(row.watermark_age_max_ms),
            "skew_avg_ms": _average(row.skew_sum_ms, row.skew_batches),
            "skew_max_ms": _whole(row.skew_max_ms),
            "duration_avg_ms": _average(row.duration_sum_ms, row.duration_batches),
            "duration_max_ms": _whole(row.duration_max_ms),
            "input_rows": _whole(row.input_rows),
            "input_rows_per_second": _average(row.input_rate_sum, row.input_rate_batches),
            "processed_rows_per_second": _average(
                row.processed_rate_sum, row.processed_rate_batches
            ),
            "watermark_stalled": _flag(row.stalled_batches),
            "rows_dropped_by_watermark": _whole(row.rows_dropped_by_watermark),
        }
    return _columnar(window, buckets, [*_names(BATCH_AGGREGATES), "rows_dropped_by_watermark"])


def _average(total: Any, count: Any) -> float | None:
    return None if total is None or not count else float(total) / int(count)


def _rollup_series(
    session: so.Session, query_id: str, window: Window, tier: Tier
) -> dict[str, Series]:
    """Per partition, the packed minutes or hours that start in the window, reduced per bucket
    (store.packed_series): a bucket shows the largest lag and any stall of any batch in it."""
    start = tier.column(tier.start)
    spans = session.execute(
        sa.select(window.bucket(start), tier.column("figures"))
        .where(tier.column("query_id") == query_id, window.covers(start))
        .order_by(start)
    )
    return bucket_series(spans, tier.figures, window.start_of)


def _last_batch_series(session: so.Session, query_id: str, window: Window) -> dict[str, Series]:
    """Per partition, the running values at the last batch of each bucket.

    M_p, W_p, late-record totals and end offsets only grow, so their values at a bucket's
    last batch are the bucket's maxima, and differences of the totals give the exact late
    records and records read per bucket; offset lag, time lag and the flags are the bucket's
    last values, which for buckets under a minute are those of one batch or a few.
    """
    ends = bucket_ends(session, query_id, window)
    if not ends:
        return {}
    before = _batch_before(session, query_id, window)
    batch_ids = [*ends.values(), *([] if before is None else [before])]
    rows = _partition_rows(session, query_id, batch_ids)
    names = sorted({name for name, _ in rows})
    return {name: _partition_series(name, ends, before, rows, window) for name in names}


CSV_COLUMNS = (
    "batch_id",
    "batch_time_ms",
    "run_id",
    "watermark_ms",
    "watermark_skew_ms",
    "flink_watermark_ms",
    "num_input_rows",
    "trigger_duration_ms",
    "partition",
    "start_offset",
    "end_offset",
    "latest_offset",
    "offset_lag",
    "idle",
    "stalled",
    "rewound",
    "records",
    "max_event_time_ms",
    "partition_watermark_ms",
    "time_lag_ms",
    "late_records",
    "late_records_total",
)


# Of CSV_COLUMNS, those of the batch and of its partitions' event times; the rest are offsets.
_CSV_BATCH = tuple(name for name in CSV_COLUMNS if name in Batch.__table__.c)
_CSV_EVENT_TIMES = tuple(
    name
    for name in CSV_COLUMNS
    if name in batch_event_times.StoredEventTimes._fields and name not in (*_CSV_BATCH, "partition")
)
# Batches read at a time by csv_rows.
CSV_BATCHES_AT_ONCE = 500


def csv_rows(
    session: so.Session, query_id: str, from_ms: int, to_ms: int
) -> Iterator[tuple[Any, ...]]:
    """One row per batch and source partition in [from_ms, to_ms), as CSV_COLUMNS, in order:
    a batch without partitions is one row with the partitions' columns empty."""
    batches = session.execute(
        sa.select(*(getattr(Batch, name) for name in _CSV_BATCH))
        .where(
            Batch.query_id == query_id, Batch.batch_time_ms >= from_ms, Batch.batch_time_ms < to_ms
        )
        .order_by(Batch.batch_id)
        .execution_options(yield_per=CSV_BATCHES_AT_ONCE)
    )
    for chunk in batches.partitions():
        yield from _csv_chunk(session, query_id, [row._asdict() for row in chunk])


def _csv_chunk(
    session: so.Session, query_id: str, batches: list[dict[str, Any]]
) -> Iterator[tuple[Any, ...]]:
    """CSV rows of some of a query's batches, in batch id order."""
    ids = [batch["batch_id"] for batch in batches]
    offsets: dict[int, list[batch_offsets.StoredPartition]] = {}
    for partition in batch_offsets.of_batches(session, query_id, ids):
        offsets.setdefault(partition.batch_id, []).append(partition)
    times = {
        (row.batch_id, row.partition): row
        for row in batch_event_times.of_batches(session, query_id, ids)
    }
    for batch in batches:
        partitions = sorted(
            offsets.get(batch["batch_id"], []), key=lambda row: (row.source_index, row.partition)
        )
        if not partitions:
            yield tuple(batch.get(name) for name in CSV_COLUMNS)
        for partition in partitions:
            time = times.get((batch["batch_id"], partition.partition))
            values = batch | partition._asdict()
            for name in _CSV_EVENT_TIMES:
                values[name] = None if time is None else getattr(time, name)
            yield tuple(values.get(name) for name in CSV_COLUMNS)


# What CSV export reads: every batch, or the per-minute or per-hour rollups of partitions.
CSV_RESOLUTIONS = ("batch", "minute", "hour")
# The columns of a CSV of rollups: a line per minute or hour and partition.
ROLLUP_CSV_COLUMNS = ("start_ms", "partition", *PARTITION_MINUTES.figures)


def finest_kept(kept: Kept, from_ms: int) -> str:
    """The finest of CSV_RESOLUTIONS whose rows are all kept from `from_ms` on."""
    if kept.batches_cover(from_ms):
        return "batch"
    if kept.minutes_cover(from_ms):
        return "minute"
    return "hour"


def rollup_csv_rows(
    session: so.Session, query_id: str, from_ms: int, to_ms: int, resolution: str
) -> Iterator[tuple[Any, ...]]:
    """One row per minute (or hour) that starts in [from_ms, to_ms) and source partition, as
    ROLLUP_CSV_COLUMNS, in order."""
    tier = PARTITION_MINUTES if resolution == "minute" else PARTITION_HOURS
    start = tier.column(tier.start)
    figures = tier.figures
    statement = (
        sa.select(start, tier.column("figures"))
        .where(tier.column("query_id") == query_id, start >= from_ms, start < to_ms)
        .order_by(start)
        .execution_options(yield_per=100)
    )
    names_of: dict[bytes, tuple[str, ...]] = {}
    for start_ms, packed in session.execute(statement):
        for partition, row in unpack(packed, len(figures), names_of).rows(figures).items():
            yield (start_ms, partition, *row.values())
