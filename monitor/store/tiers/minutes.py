"""Per-minute and per-hour rollups of each query (`query_minutes`, `query_hours`) and of its
partitions (`partition_minutes`, `partition_hours`), kept as batches arrive.

A partition's minute holds what the minute's stored batches showed of it: sums of records and of
late and future-dated records, the largest M_p, W_p's range, the largest time and offset lag,
and how many of its batches found it idle, stalled or rewound; a query's partitions' minutes are
packed into one row (store.packing). A minute's row of a query holds its batches' query-wide
figures: how many, the watermark's range and largest age, sums and maxima of skew, durations,
input rows and rates, stalled and rewound batches, rows dropped by the watermark, and the most
state rows and memory. An hour's row is its minutes' rows folded the same way. Ranges of hours
are read from the minutes and ranges of days from the hours (store.history), so a 30-day view
still shows the peak of every lag and every stall, however short.

They are written in the transaction that stores the batches, so they never miss or double one:
a batch stored in order is folded into its minute's and hour's rows (read, folded, written
back); a batch that changes what was stored after it (one that arrives after later ones and so
changes their running figures, or a restart that supersedes them) has its query's minutes from
its own on rolled up again from the batches stored, and the hours from its hour on from those
minutes. A repeated batch stores nothing and so adds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from monitor.durations import age_ms
from monitor.health.lateness import summed
from monitor.numbers import INT64_MAX, INT64_MIN
from monitor.store.packed import batch_event_times, batch_offsets
from monitor.store.packed.packing import pack, pack_histograms, unpack, unpack_histograms
from monitor.store.schema.bulk import insert_rows
from monitor.store.schema.models import (
    Base,
    Batch,
    BatchEventTimes,
    BatchOffsets,
    PartitionHour,
    PartitionMinute,
    Query,
    QueryHour,
    QueryMinute,
    StateOperator,
)
from monitor.store.schema.sql import among, chunks

MINUTE_MS = 60_000
HOUR_MS = 3_600_000
Row = dict[str, Any]
# A rollup row's key: query id, the start of its minute or hour, and, in the partitions'
# tiers, the partition.
Key = tuple[Any, ...]
Fold = Callable[[Any, Any], Any]
Rows = Mapping[type[Base], Sequence[Row]]


def minute_of(time_ms: int) -> int:
    """The start of the minute that holds `time_ms`."""
    return time_ms - time_ms % MINUTE_MS


def hour_of(time_ms: int) -> int:
    """The start of the hour that holds `time_ms`."""
    return time_ms - time_ms % HOUR_MS


def _sum(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else a + b


def _max(a: Any, b: Any) -> Any:
    return b if a is None or (b is not None and b > a) else a


def _min(a: Any, b: Any) -> Any:
    return b if a is None or (b is not None and b < a) else a


def _histograms(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else summed([a, b])


# What a partition's rollup holds over its span, in the order it is packed (store.packing),
# and how two parts of a span fold into one: sums of the batches, of records the instrumented
# operator measured, records read by offsets (end − start), late and future-dated records; the
# largest M_p, the smallest and largest W_p, the largest time and offset lag; how many of the
# span's batches found the partition idle, stalled or rewound; the largest watermark delay in
# force, and the lateness histograms (health.lateness) summed, which are packed apart.
PARTITION_FOLDS: dict[str, Fold] = {
    "batches": _sum,
    "records": _sum,
    "offset_records": _sum,
    "late_records": _sum,
    "future_records": _sum,
    "max_event_time_ms": _max,
    "watermark_min_ms": _min,
    "watermark_max_ms": _max,
    "time_lag_max_ms": _max,
    "offset_lag_max": _max,
    "idle_batches": _sum,
    "stalled_batches": _sum,
    "rewound_batches": _sum,
    "delay_max_ms": _max,
    "late_buckets": _histograms,
    "slack_buckets": _histograms,
}
HISTOGRAMS = ("late_buckets", "slack_buckets")
# How each figure of a query's rollup folds.
QUERY_FOLDS: dict[str, Fold] = {
    "batches": _sum,
    "first_batch_id": _min,
    "last_batch_id": _max,
    "watermark_min_ms": _min,
    "watermark_max_ms": _max,
    "flink_watermark_max_ms": _max,
    "watermark_age_max_ms": _max,
    "skew_sum_ms": _sum,
    "skew_batches": _sum,
    "skew_max_ms": _max,
    "duration_sum_ms": _sum,
    "duration_batches": _sum,
    "duration_max_ms": _max,
    "input_rows": _sum,
    "input_rate_sum": _sum,
    "input_rate_batches": _sum,
    "processed_rate_sum": _sum,
    "processed_rate_batches": _sum,
    "stalled_batches": _sum,
    "rewound_batches": _sum,
    "rows_dropped_by_watermark": _sum,
    "state_rows_max": _max,
    "state_memory_max_bytes": _max,
}


# Compared and hashed by identity: each tier is one of the four below.
@dataclass(frozen=True, eq=False)
class Tier:
    """A rollup table: its model, its start column, how wide its spans are, how its figures
    fold, and whether it holds the query's partitions (packed, a row per span) or the query."""

    model: type[Base]
    start: str
    width_ms: int
    folds: dict[str, Fold]
    per_partition: bool

    @property
    def keys(self) -> tuple[str, ...]:
        """What tells one partition's or query's span from another: the query, the start of
        the span, and in the partitions' tiers the partition (inside the span's packed row)."""
        return (
            ("query_id", self.start, "partition")
            if self.per_partition
            else ("query_id", self.start)
        )

    def column(self, name: str) -> Any:
        """One of the table's columns."""
        return getattr(self.model, name)

    @property
    def figures(self) -> list[str]:
        """The figures that are whole numbers: in the partitions' tiers, those packed into
        `figures` (the histograms are packed into `histograms`)."""
        return [name for name in self.folds if name not in HISTOGRAMS]

    @property
    def nothing(self) -> Row:
        """A span's figures before any batch: no values, and counts of 0."""
        return {
            name: 0 if name == "batches" or name.endswith("_batches") else None
            for name in self.folds
        }


PARTITION_MINUTES = Tier(PartitionMinute, "minute_ms", MINUTE_MS, PARTITION_FOLDS, True)
PARTITION_HOURS = Tier(PartitionHour, "hour_ms", HOUR_MS, PARTITION_FOLDS, True)
QUERY_MINUTES = Tier(QueryMinute, "minute_ms", MINUTE_MS, QUERY_FOLDS, False)
QUERY_HOURS = Tier(QueryHour, "hour_ms", HOUR_MS, QUERY_FOLDS, False)
# Each tier of minutes with the tier of hours folded from it.
HOURS_OF = {PARTITION_MINUTES: PARTITION_HOURS, QUERY_MINUTES: QUERY_HOURS}
TIERS = (PARTITION_MINUTES, PARTITION_HOURS, QUERY_MINUTES, QUERY_HOURS)
PARTITION_NOTHING = PARTITION_MINUTES.nothing


def _folded(folds: dict[str, Fold], a: Row, b: Row) -> Row:
    return {name: fold(a[name], b[name]) for name, fold in folds.items()}


def _stored(value: Any) -> Any:
    """A figure as a 64-bit column holds it: sums of absurd figures (a broken source's offsets
    near 2^63) saturate, as store.schema.whole_sum does in reads."""
    return None if value is None else min(max(value, INT64_MIN), INT64_MAX)


def _fold_batch(minutes: dict[Key, Row], partitions: Sequence[Row], times: Sequence[Row]) -> None:
    """Fold one batch's partition rows (offsets, event times) into `minutes`, its partitions'
    rows of its minute; the batch counts once in each. In place and without a call per row:
    this runs for every partition of every batch stored."""
    first = partitions[0] if partitions else times[0] if times else None
    if first is None:
        return
    query_id, minute = first["query_id"], minute_of(first["batch_time_ms"])
    found: dict[str, Row] = {}
    for name in {row["partition"] for row in partitions} | {row["partition"] for row in times}:
        key = (query_id, minute, name)
        found[name] = folded = minutes.get(key) or minutes.setdefault(key, dict(PARTITION_NOTHING))
        folded["batches"] += 1
    _fold_offsets(found, partitions)
    _fold_event_times(found, times)


def _fold_offsets(found: dict[str, Row], partitions: Sequence[Row]) -> None:
    for row in partitions:
        folded = found[row["partition"]]
        end, start, lag = row["end_offset"], row["start_offset"], row["offset_lag"]
        if end is not None and start is not None:
            folded["offset_records"] = (folded["offset_records"] or 0) + end - start
        if lag is not None and (folded["offset_lag_max"] is None or lag > folded["offset_lag_max"]):
            folded["offset_lag_max"] = lag
        folded["idle_batches"] += bool(row["idle"])
        folded["stalled_batches"] += bool(row["stalled"])
        folded["rewound_batches"] += bool(row["rewound"])


# An event-time row's figure, and the figure of its span that is the largest of them.
LARGEST_EVENT_TIME_FIGURES = (
    ("max_event_time_ms", "max_event_time_ms"),
    ("time_lag_ms", "time_lag_max_ms"),
    ("delay_ms", "delay_max_ms"),
)


def _fold_event_times(found: dict[str, Row], times: Sequence[Row]) -> None:
    for row in times:
        folded = found[row["partition"]]
        for name in ("records", "late_records", "future_records"):
            if row[name] is not None:
                folded[name] = (folded[name] or 0) + row[name]
        for name in HISTOGRAMS:
            if row[name] is not None:
                folded[name] = _histograms(folded[name], row[name])
        for figure, largest in LARGEST_EVENT_TIME_FIGURES:
            value = row[figure]
            if value is not None and (folded[largest] is None or value > folded[largest]):
                folded[largest] = value
        watermark = row["partition_watermark_ms"]
        if watermark is not None:
            folded["watermark_min_ms"] = _min(folded["watermark_min_ms"], watermark)
            folded["watermark_max_ms"] = _max(folded["watermark_max_ms"], watermark)


def _total(operators: Sequence[Row], name: str) -> int | None:
    values = [row[name] for row in operators if row.get(name) is not None]
    return sum(values) if values else None


def _batch_figures(batch: Row, operators: Sequence[Row]) -> Row:
    """One batch's query-wide figures, as a span of that one batch holds them."""
    watermark = batch.get("watermark_ms")
    skew, duration = batch.get("watermark_skew_ms"), batch.get("trigger_duration_ms")
    input_rate, processed_rate = (
        batch.get("input_rows_per_second"),
        batch.get("processed_rows_per_second"),
    )
    return {
        "batches": 1,
        "first_batch_id": batch["batch_id"],
        "last_batch_id": batch["batch_id"],
        "watermark_min_ms": watermark,
        "watermark_max_ms": watermark,
        "flink_watermark_max_ms": batch.get("flink_watermark_ms"),
        "watermark_age_max_ms": age_ms(batch["batch_time_ms"], watermark),
        "skew_sum_ms": skew,
        "skew_batches": int(skew is not None),
        "skew_max_ms": skew,
        "duration_sum_ms": duration,
        "duration_batches": int(duration is not None),
        "duration_max_ms": duration,
        "input_rows": batch.get("num_input_rows"),
        "input_rate_sum": input_rate,
        "input_rate_batches": int(input_rate is not None),
        "processed_rate_sum": processed_rate,
        "processed_rate_batches": int(processed_rate is not None),
        "stalled_batches": int(bool(batch.get("watermark_stalled"))),
        "rewound_batches": int(bool(batch.get("watermark_rewound"))),
        "rows_dropped_by_watermark": _total(operators, "num_rows_dropped_by_watermark"),
        "state_rows_max": _total(operators, "num_rows_total"),
        "state_memory_max_bytes": _total(operators, "memory_used_bytes"),
    }


def _fold_query_batches(
    minutes: dict[Key, Row], batches: Iterable[Row], operators: Iterable[Row]
) -> None:
    """Fold batches' rows and their state operators' into `minutes`, their queries' minutes."""
    by_batch: dict[tuple[str, int], list[Row]] = {}
    for row in operators:
        by_batch.setdefault((row["query_id"], row["batch_id"]), []).append(row)
    for batch in batches:
        key = (batch["query_id"], minute_of(batch["batch_time_ms"]))
        figures = _batch_figures(batch, by_batch.get((batch["query_id"], batch["batch_id"]), []))
        minutes[key] = (
            figures if key not in minutes else _folded(QUERY_FOLDS, minutes[key], figures)
        )


def _by_batch(
    partitions: Iterable[Row], event_times: Iterable[Row]
) -> list[tuple[list[Row], list[Row]]]:
    """Partition rows of many batches as each batch's (offsets rows, event-time rows)."""
    batches: dict[tuple[str, int], tuple[list[Row], list[Row]]] = {}
    for row in partitions:
        batches.setdefault((row["query_id"], row["batch_id"]), ([], []))[0].append(row)
    for row in event_times:
        batches.setdefault((row["query_id"], row["batch_id"]), ([], []))[1].append(row)
    return list(batches.values())


def rolled_up(rows: Rows) -> dict[Tier, dict[Key, Row]]:
    """Batches' rows (the batches, their state operators, their partitions' offsets and event
    times) folded into the rows of the tiers of minutes."""
    minutes: dict[Tier, dict[Key, Row]] = {PARTITION_MINUTES: {}, QUERY_MINUTES: {}}
    for offsets, times in _by_batch(rows.get(BatchOffsets, ()), rows.get(BatchEventTimes, ())):
        _fold_batch(minutes[PARTITION_MINUTES], offsets, times)
    _fold_query_batches(minutes[QUERY_MINUTES], rows.get(Batch, ()), rows.get(StateOperator, ()))
    return minutes


class Minutes:
    """One transaction's share of the rollups: the rows of the batches it stores, to be folded
    into their minutes, and the queries whose minutes from some time on are to be rolled up
    again from the store."""

    def __init__(self) -> None:
        self._parts: dict[Tier, dict[Key, Row]] = {PARTITION_MINUTES: {}, QUERY_MINUTES: {}}
        self._again: dict[str, int] = {}

    def add(self, rows: Rows) -> None:
        """A stored batch's rows (the batch, its state operators, its partitions' offsets and
        event times), folded into its minute's parts."""
        _fold_batch(
            self._parts[PARTITION_MINUTES],
            rows.get(BatchOffsets, ()),
            rows.get(BatchEventTimes, ()),
        )
        _fold_query_batches(
            self._parts[QUERY_MINUTES], rows.get(Batch, ()), rows.get(StateOperator, ())
        )

    def add_batches(self, rows: Rows) -> None:
        """The rows of stored batches, any number of them, folded likewise."""
        for tier, parts in rolled_up(rows).items():
            for key, part in parts.items():
                before = self._parts[tier].get(key)
                self._parts[tier][key] = (
                    part if before is None else _folded(tier.folds, before, part)
                )

    def again(self, query_id: str, from_ms: int) -> None:
        """Roll the query's minutes from `from_ms`'s on up again from the stored batches."""
        minute = minute_of(from_ms)
        if query_id in self._again:
            minute = min(minute, self._again[query_id])
        self._again[query_id] = minute

    def write(self, connection: sa.Connection) -> None:
        """Fold what was added into the stored minutes and hours, then roll up again what is
        to be; in the transaction that stored the batches, after their rows."""
        starts = _again_from(connection, self._again)
        for minutes_tier, parts in self._parts.items():
            hours_tier = HOURS_OF[minutes_tier]
            minutes: dict[Key, Row] = {}
            hours: dict[Key, Row] = {}
            for key, part in parts.items():
                query_id, minute = key[0], key[1]
                again, hours_again = starts.get(query_id, (None, None))
                if again is None or minute < again:
                    minutes[key] = part
                if hours_again is None or hour_of(minute) < hours_again:
                    hour = (query_id, hour_of(minute), *key[2:])
                    hours[hour] = (
                        part if hour not in hours else _folded(hours_tier.folds, hours[hour], part)
                    )
            for tier, found in ((minutes_tier, minutes), (hours_tier, hours)):
                _fold_all_into_stored(connection, tier, found)
        for query_id, (minute_ms, hour_ms) in starts.items():
            _roll_up_again(connection, query_id, minute_ms)
            for minutes_tier, hours_tier in HOURS_OF.items():
                _hours_again(connection, minutes_tier, hours_tier, query_id, hour_ms)
        self._parts = {PARTITION_MINUTES: {}, QUERY_MINUTES: {}}
        self._again = {}


def _ceiling(time_ms: int, width_ms: int) -> int:
    return -(-time_ms // width_ms) * width_ms


def _again_from(connection: sa.Connection, again: dict[str, int]) -> dict[str, tuple[int, int]]:
    """Where each query's minutes and hours are rolled up again from: the minute asked for,
    but none where pruning left the minute's batches incomplete, and the hour from it, but
    none whose minutes pruning left incomplete (the query's kept-from times, store.prune)."""
    starts: dict[str, tuple[int, int]] = {}
    for query_ids in chunks(sorted(again)):
        kept = connection.execute(
            sa.select(Query.id, Query.batches_kept_from_ms, Query.minutes_kept_from_ms).where(
                among(Query.id, query_ids)
            )
        )
        for query_id, batches_from, minutes_from in kept:
            minute = again[query_id]
            if batches_from is not None:
                minute = max(minute, _ceiling(batches_from, MINUTE_MS))
            hour = hour_of(minute)
            if minutes_from is not None:
                hour = max(hour, _ceiling(minutes_from, HOUR_MS))
            starts[query_id] = (minute, hour)
    return starts


def _fold_all_into_stored(connection: sa.Connection, tier: Tier, parts: dict[Key, Row]) -> None:
    """Fold parts of many queries into the tier's stored rows, some queries at a time."""
    by_query: dict[str, list[Key]] = {}
    for key in parts:
        by_query.setdefault(key[0], []).append(key)
    for query_ids in chunks(sorted(by_query)):
        keys = [key for query_id in query_ids for key in by_query[query_id]]
        _fold_into_stored(connection, tier, query_ids, {key: parts[key] for key in keys})


def _fold_into_stored(
    connection: sa.Connection, tier: Tier, query_ids: list[str], parts: dict[Key, Row]
) -> None:
    """Fold each minute's or hour's new part into its stored row: the rows of the queries'
    tier in the parts' span are read, folded, deleted and written again."""
    where = sa.and_(
        among(tier.column("query_id"), query_ids),
        tier.column(tier.start).between(min(key[1] for key in parts), max(key[1] for key in parts)),
    )
    stored = _stored_rows(connection, tier, where)
    for key, part in parts.items():
        before = stored.get(key)
        stored[key] = part if before is None else _folded(tier.folds, before, part)
    connection.execute(sa.delete(tier.model).where(where))
    _insert(connection, tier, stored)


def span_rows(packed: bytes, histograms: bytes | None) -> dict[str, Row]:
    """A stored span of a partitions' tier (its `figures` and `histograms`; both tiers hold the
    same figures) as each partition's row of figures, by name."""
    figures = PARTITION_MINUTES.figures
    measured = unpack_histograms(histograms)
    rows = unpack(packed, len(figures)).rows(figures)
    for partition, row in rows.items():
        row["late_buckets"], row["slack_buckets"] = measured.get(partition, (None, None))
    return rows


def _stored_rows(connection: sa.Connection, tier: Tier, where: Any) -> dict[Key, Row]:
    """A tier's stored rows that match `where`, by key; a partitions' tier's packed spans
    unpacked into a row per partition."""
    stored: dict[Key, Row] = {}
    if tier.per_partition:
        spans = sa.select(
            tier.column("query_id"),
            tier.column(tier.start),
            tier.column("figures"),
            tier.column("histograms"),
        )
        for query_id, start, packed, histograms in connection.execute(spans.where(where)):
            for partition, found in span_rows(packed, histograms).items():
                stored[(query_id, start, partition)] = found
        return stored
    keys = [tier.column(name) for name in tier.keys]
    figures_of = [tier.column(name) for name in tier.folds]
    for row in connection.execute(sa.select(*keys, *figures_of).where(where)):
        values = tuple(row)
        stored[values[: len(keys)]] = dict(zip(tier.folds, values[len(keys) :], strict=True))
    return stored


def _insert(connection: sa.Connection, tier: Tier, rows: dict[Key, Row]) -> None:
    """Rows of a tier by key, their figures as a 64-bit column holds them; a partitions'
    tier's rows packed into a row per query and span."""
    table = Base.metadata.tables[tier.model.__tablename__]
    if not tier.per_partition:
        insert_rows(
            connection,
            table,
            [
                dict(zip(tier.keys, key, strict=True))
                | {name: _stored(value) for name, value in figures.items()}
                for key, figures in rows.items()
            ],
        )
        return
    spans: dict[tuple[str, int], dict[str, Row]] = {}
    for (query_id, start, partition), figures in rows.items():
        spans.setdefault((query_id, start), {})[partition] = figures
    insert_rows(
        connection,
        table,
        [
            {
                "query_id": query_id,
                tier.start: start,
                "figures": pack(
                    tier.figures,
                    {
                        partition: {name: _stored(row[name]) for name in tier.figures}
                        for partition, row in partitions.items()
                    },
                ),
                "histograms": pack_histograms(
                    {
                        partition: (row["late_buckets"], row["slack_buckets"])
                        for partition, row in partitions.items()
                    }
                ),
            }
            for (query_id, start), partitions in spans.items()
        ],
    )


BATCH_COLUMNS = (
    "query_id",
    "batch_id",
    "batch_time_ms",
    "watermark_ms",
    "flink_watermark_ms",
    "watermark_skew_ms",
    "trigger_duration_ms",
    "num_input_rows",
    "input_rows_per_second",
    "processed_rows_per_second",
    "watermark_stalled",
    "watermark_rewound",
)
OPERATOR_COLUMNS = (
    "query_id",
    "batch_id",
    "num_rows_dropped_by_watermark",
    "num_rows_total",
    "memory_used_bytes",
)


def _roll_up_again(connection: sa.Connection, query_id: str, minute: int) -> None:
    """The query's minutes from `minute` on, rolled up again from its stored batches."""
    for tier in HOURS_OF:
        connection.execute(
            sa.delete(tier.model).where(
                tier.column("query_id") == query_id, tier.column(tier.start) >= minute
            )
        )
    first = connection.scalar(
        sa.select(sa.func.min(Batch.batch_id)).where(
            Batch.query_id == query_id, Batch.batch_time_ms >= minute
        )
    )
    if first is None:
        return
    times = sa.select(batch_event_times.TABLE).where(
        BatchEventTimes.query_id == query_id,
        BatchEventTimes.batch_id >= first,
        BatchEventTimes.batch_time_ms >= minute,
    )
    found: dict[type[Base], list[Row]] = {
        BatchEventTimes: [
            row._asdict() for row in batch_event_times.partitions_in(connection, times)
        ]
    }
    offsets = sa.select(batch_offsets.TABLE).where(
        BatchOffsets.query_id == query_id,
        BatchOffsets.batch_id >= first,
        BatchOffsets.batch_time_ms >= minute,
    )
    found[BatchOffsets] = [
        partition._asdict() for partition in batch_offsets.partitions_in(connection, offsets)
    ]
    batches = sa.select(*(getattr(Batch, name) for name in BATCH_COLUMNS)).where(
        Batch.query_id == query_id, Batch.batch_time_ms >= minute
    )
    found[Batch] = [dict(row._mapping) for row in connection.execute(batches)]
    batch_ids = {row["batch_id"] for row in found[Batch]}
    operators = sa.select(*(getattr(StateOperator, name) for name in OPERATOR_COLUMNS)).where(
        StateOperator.query_id == query_id, StateOperator.batch_id >= first
    )
    found[StateOperator] = [
        dict(row._mapping) for row in connection.execute(operators) if row.batch_id in batch_ids
    ]
    for tier, rows in rolled_up(found).items():
        _insert(connection, tier, rows)


def _hours_again(
    connection: sa.Connection, minutes: Tier, hours: Tier, query_id: str, hour: int
) -> None:
    """The query's hours from `hour` on, folded again from its minutes."""
    connection.execute(
        sa.delete(hours.model).where(
            hours.column("query_id") == query_id, hours.column(hours.start) >= hour
        )
    )
    folded: dict[Key, Row] = {}
    where = sa.and_(minutes.column("query_id") == query_id, minutes.column(minutes.start) >= hour)
    for key, figures in _stored_rows(connection, minutes, where).items():
        hour_key = (query_id, hour_of(key[1]), *key[2:])
        folded[hour_key] = (
            figures if hour_key not in folded else _folded(hours.folds, folded[hour_key], figures)
        )
    _insert(connection, hours, folded)
