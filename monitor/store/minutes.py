"""Per-minute and per-hour rollups of each query's partitions (`partition_minutes`,
`partition_hours`), kept as batches arrive.

A minute's row of a partition holds what the minute's stored batches showed of it: sums of
records and of late and future-dated records, the largest M_p, W_p's range, the largest time
and offset lag, and how many of its batches found it idle, stalled or rewound. An hour's row is
its minutes' rows folded the same way. Ranges of hours are read from the minutes and ranges of
days from the hours (store.history), so a 30-day view still shows the peak of every lag and
every stall, however short.

They are written in the transaction that stores the batches, so they never miss or double one:
a batch stored in order is folded into its minute's and hour's rows (read, folded, written
back); a batch that changes what was stored after it (one that arrives after later ones and so
changes their running figures, or a restart that supersedes them) has its query's minutes from
its own on rolled up again from the batches stored, and the hours from its hour on from those
minutes. A repeated batch stores nothing and so adds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import sqlalchemy as sa

from monitor.numbers import INT64_MAX, INT64_MIN
from monitor.store.bulk import insert_rows
from monitor.store.models import (
    Base,
    Batch,
    Partition,
    PartitionEventTime,
    PartitionHour,
    PartitionMinute,
)
from monitor.store.sql import among, chunks

MINUTE_MS = 60_000
HOUR_MS = 3_600_000
Row = dict[str, Any]
# A rollup row's key: query id, the start of its minute or hour, partition.
Key = tuple[str, int, str]
# Each tier's model and the name of its start column.
MINUTES = (PartitionMinute, "minute_ms")
HOURS = (PartitionHour, "hour_ms")
Tier = tuple[type[PartitionMinute] | type[PartitionHour], str]


def minute_of(time_ms: int) -> int:
    """The start of the minute that holds `time_ms`."""
    return time_ms - time_ms % MINUTE_MS


def hour_of(time_ms: int) -> int:
    """The start of the hour that holds `time_ms`."""
    return time_ms - time_ms % HOUR_MS


def _sum(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else a + b


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None or (b is not None and b > a) else a


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None or (b is not None and b < a) else a


# How each figure of two parts of a minute folds into one.
FOLDS: dict[str, Callable[[Any, Any], Any]] = {
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
}
SUMS = tuple(name for name, fold in FOLDS.items() if fold is _sum)
NOTHING: Row = dict.fromkeys(FOLDS) | dict.fromkeys(
    ("batches", "idle_batches", "stalled_batches", "rewound_batches"), 0
)


def _folded(a: Row, b: Row) -> Row:
    return {name: fold(a[name], b[name]) for name, fold in FOLDS.items()}


def _stored(value: int | None) -> int | None:
    """A whole number as a 64-bit column holds it: sums of absurd figures (a broken source's
    offsets near 2^63) saturate, as store.sums does in reads."""
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
        found[name] = folded = minutes.get(key) or minutes.setdefault(key, dict(NOTHING))
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


def _fold_event_times(found: dict[str, Row], times: Sequence[Row]) -> None:
    for row in times:
        folded = found[row["partition"]]
        for name in ("records", "late_records", "future_records"):
            if row[name] is not None:
                folded[name] = (folded[name] or 0) + row[name]
        top, lag = row["max_event_time_ms"], row["time_lag_ms"]
        if top is not None and (
            folded["max_event_time_ms"] is None or top > folded["max_event_time_ms"]
        ):
            folded["max_event_time_ms"] = top
        if lag is not None and (
            folded["time_lag_max_ms"] is None or lag > folded["time_lag_max_ms"]
        ):
            folded["time_lag_max_ms"] = lag
        watermark = row["partition_watermark_ms"]
        if watermark is None:
            continue
        if folded["watermark_min_ms"] is None or watermark < folded["watermark_min_ms"]:
            folded["watermark_min_ms"] = watermark
        if folded["watermark_max_ms"] is None or watermark > folded["watermark_max_ms"]:
            folded["watermark_max_ms"] = watermark


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


def rolled_up(partitions: Iterable[Row], event_times: Iterable[Row]) -> dict[Key, Row]:
    """Batches' partition rows (offsets, event times) folded into rows per partition and
    minute."""
    minutes: dict[Key, Row] = {}
    for offsets, times in _by_batch(partitions, event_times):
        _fold_batch(minutes, offsets, times)
    return minutes


class Minutes:
    """One transaction's share of the rollups: the partition rows of the batches it stores, to
    be folded into their minutes, and the queries whose minutes from some time on are to be
    rolled up again from the store."""

    def __init__(self) -> None:
        self._parts: dict[Key, Row] = {}
        self._again: dict[str, int] = {}

    def add(self, partitions: Sequence[Row], event_times: Sequence[Row]) -> None:
        """A stored batch's partition rows, folded into its minute's part."""
        _fold_batch(self._parts, partitions, event_times)

    def add_batches(self, partitions: Iterable[Row], event_times: Iterable[Row]) -> None:
        """The partition rows of stored batches, any number of them, folded likewise."""
        for offsets, times in _by_batch(partitions, event_times):
            _fold_batch(self._parts, offsets, times)

    def again(self, query_id: str, from_ms: int) -> None:
        """Roll the query's minutes from `from_ms`'s on up again from the stored batches."""
        minute = minute_of(from_ms)
        if query_id in self._again:
            minute = min(minute, self._again[query_id])
        self._again[query_id] = minute

    def write(self, connection: sa.Connection) -> None:
        """Fold what was added into the stored minutes and hours, then roll up again what is
        to be; in the transaction that stored the batches, after their rows."""
        minutes: dict[Key, Row] = {}
        hours: dict[Key, Row] = {}
        for key, part in self._parts.items():
            query_id, minute, partition = key
            again = self._again.get(query_id)
            if again is None or minute < again:
                minutes[key] = part
            if again is None or hour_of(minute) < hour_of(again):
                hour = (query_id, hour_of(minute), partition)
                hours[hour] = part if hour not in hours else _folded(hours[hour], part)
        for tier, parts in ((MINUTES, minutes), (HOURS, hours)):
            by_query: dict[str, list[Key]] = {}
            for key in parts:
                by_query.setdefault(key[0], []).append(key)
            for query_ids in chunks(sorted(by_query)):
                keys = [key for query_id in query_ids for key in by_query[query_id]]
                _fold_into_stored(connection, tier, query_ids, {key: parts[key] for key in keys})
        for query_id, minute in self._again.items():
            _roll_up_again(connection, query_id, minute)
            _hours_again(connection, query_id, hour_of(minute))
        self._parts, self._again = {}, {}


def _fold_into_stored(
    connection: sa.Connection, tier: Tier, query_ids: list[str], parts: dict[Key, Row]
) -> None:
    """Fold each minute's or hour's new part into its stored row: the rows of the queries'
    tier in the parts' span are read, folded, deleted and written again."""
    model, start = tier
    column = getattr(model, start)
    where = sa.and_(
        among(model.query_id, query_ids),
        column.between(min(key[1] for key in parts), max(key[1] for key in parts)),
    )
    stored = {
        (row.query_id, row[1], row.partition): dict(row._mapping)
        for row in connection.execute(
            sa.select(model.query_id, column, model.partition, *_figures(model)).where(where)
        )
    }
    for key, part in parts.items():
        before = stored.get(key)
        stored[key] = part if before is None else _folded(before, part)
    connection.execute(sa.delete(model).where(where))
    _insert(connection, tier, stored)


def _figures(model: type[PartitionMinute] | type[PartitionHour]) -> list[Any]:
    return [getattr(model, name) for name in FOLDS]


def _insert(connection: sa.Connection, tier: Tier, rows: dict[Key, Row]) -> None:
    """Rows of a tier by key, their sums as a 64-bit column holds them."""
    model, start = tier
    insert_rows(
        connection,
        Base.metadata.tables[model.__tablename__],
        [
            {"query_id": query_id, start: at, "partition": partition}
            | {name: _stored(figures[name]) if name in SUMS else figures[name] for name in FOLDS}
            for (query_id, at, partition), figures in rows.items()
        ],
    )


OFFSET_COLUMNS = ("start_offset", "end_offset", "offset_lag", "idle", "stalled", "rewound")
EVENT_TIME_COLUMNS = (
    "records",
    "late_records",
    "future_records",
    "max_event_time_ms",
    "partition_watermark_ms",
    "time_lag_ms",
)


def _roll_up_again(connection: sa.Connection, query_id: str, minute: int) -> None:
    """The query's minutes from `minute` on, rolled up again from its stored batches."""
    connection.execute(
        sa.delete(PartitionMinute).where(
            PartitionMinute.query_id == query_id, PartitionMinute.minute_ms >= minute
        )
    )
    first = connection.scalar(
        sa.select(sa.func.min(Batch.batch_id)).where(
            Batch.query_id == query_id, Batch.batch_time_ms >= minute
        )
    )
    if first is None:
        return
    found = {}
    for table, columns in ((Partition, OFFSET_COLUMNS), (PartitionEventTime, EVENT_TIME_COLUMNS)):
        keys = (table.query_id, table.batch_id, table.batch_time_ms, table.partition)
        statement = sa.select(*keys, *(getattr(table, name) for name in columns)).where(
            table.query_id == query_id, table.batch_id >= first, table.batch_time_ms >= minute
        )
        found[table] = [dict(row._mapping) for row in connection.execute(statement)]
    _insert(connection, MINUTES, rolled_up(found[Partition], found[PartitionEventTime]))


def _hours_again(connection: sa.Connection, query_id: str, hour: int) -> None:
    """The query's hours from `hour` on, folded again from its minutes."""
    connection.execute(
        sa.delete(PartitionHour).where(
            PartitionHour.query_id == query_id, PartitionHour.hour_ms >= hour
        )
    )
    hours: dict[Key, Row] = {}
    statement = sa.select(
        PartitionMinute.minute_ms, PartitionMinute.partition, *_figures(PartitionMinute)
    ).where(PartitionMinute.query_id == query_id, PartitionMinute.minute_ms >= hour)
    for row in connection.execute(statement):
        figures = dict(row._mapping)
        key = (query_id, hour_of(figures.pop("minute_ms")), figures.pop("partition"))
        hours[key] = figures if key not in hours else _folded(hours[key], figures)
    _insert(connection, HOURS, hours)
