"""A batch's measured partitions, stored as one row: every partition's event times, late and
future-dated records with their samples, lateness histograms and running figures packed into
one compressed value.

A row per partition per batch paid a row header, the query id, the partition's name and two
indexes' entries for about twenty figures and five JSON values: about 390 bytes a partition on
PostgreSQL, 25 KB a batch of 64 partitions. Packed (store.packing's rows), a batch's measured
partitions are read in one look-up of the primary key.

Every partition seen so far is in every batch, with figures running over every batch so far:
the late, future-dated and read records' totals, the histograms' totals, the max event time
with the record at it and its batch. So a range's sums are its last batch's totals less its
first batch's, plus the first batch's own (:func:`window_sums`), whatever its length. A
partition's watermark (max event time less the delay) and time lag (batch time less max event
time) are not stored: they are read from the figures they come from.

Beside the packed value, the row keeps the partitions' late and future-dated records summed,
which the reads of samples select batches by.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.numbers import INT64_MAX
from monitor.store.packed import packed_batches
from monitor.store.packed.packing import pack_rows, unpack_columns
from monitor.store.schema.models import BatchEventTimes
from monitor.store.schema.sql import chunks, newest_of

Row = dict[str, Any]
TABLE = BatchEventTimes.__table__

CELLS = (
    "partition",
    "late_samples",
    "max_event_time_record",
    "future_samples",
    "late_buckets",
    "slack_buckets",
    "late_buckets_total",
    "slack_buckets_total",
)
NUMBERS = (
    "records",
    "records_total",
    "min_event_ms",
    "max_event_ms",
    "late_records",
    "late_records_total",
    "late_watermark_ms",
    "delay_ms",
    "max_event_time_ms",
    "max_event_time_batch",
    "future_records",
    "future_records_total",
    "future_lead_ms",
)


class StoredEventTimes(NamedTuple):
    """A measured partition of a stored batch, as the write path derived it."""

    query_id: str
    batch_id: int
    batch_time_ms: int
    partition: str
    records: int
    records_total: int
    min_event_ms: int | None
    max_event_ms: int | None
    late_records: int
    late_records_total: int
    late_watermark_ms: int | None
    delay_ms: int
    max_event_time_ms: int | None
    max_event_time_batch: int | None
    partition_watermark_ms: int | None
    time_lag_ms: int | None
    future_records: int
    future_records_total: int
    future_lead_ms: int | None
    late_samples: list[Any]
    max_event_time_record: list[Any] | None
    future_samples: list[Any] | None
    late_buckets: dict[str, int] | None
    slack_buckets: dict[str, int] | None
    late_buckets_total: dict[str, int] | None
    slack_buckets_total: dict[str, int] | None


def packed(rows: Iterable[Row]) -> list[Row]:
    """Event-time rows of batches (the write path's column dicts) as a batch_event_times row
    per batch, each batch's partitions by name."""
    return [
        {
            "query_id": query_id,
            "batch_id": batch_id,
            "batch_time_ms": partitions[0]["batch_time_ms"],
            "partitions": pack_rows(
                CELLS, NUMBERS, sorted(partitions, key=lambda row: row["partition"])
            ),
            "late_records": _sum(row["late_records"] for row in partitions),
            "future_records": _sum(row["future_records"] for row in partitions),
        }
        for (query_id, batch_id), partitions in packed_batches.by_batch(rows).items()
    ]


def _sum(values: Iterable[int]) -> int:
    """A sum that fits a 64-bit column, however absurd the figures."""
    return min(sum(values), INT64_MAX)


def unpacked(row: Any) -> list[StoredEventTimes]:
    """A batch_event_times row's partitions, by name."""
    columns = unpack_columns(row.partitions, CELLS, NUMBERS)
    newest, delays = columns["max_event_time_ms"], columns["delay_ms"]
    columns["partition_watermark_ms"] = [
        None if top is None else top - delay for top, delay in zip(newest, delays, strict=True)
    ]
    columns["time_lag_ms"] = [None if top is None else row.batch_time_ms - top for top in newest]
    return packed_batches.as_partitions(StoredEventTimes, row, columns)


def partitions_in(
    connection: sa.Connection | so.Session, statement: sa.Select[Any]
) -> list[StoredEventTimes]:
    """The partitions of the batch_event_times rows that `statement` selects (whole rows, from
    :data:`TABLE`), in their order."""
    return packed_batches.partitions_in(connection, statement, unpacked)


def of_batches(
    connection: sa.Connection | so.Session, query_id: str, batch_ids: Iterable[int]
) -> list[StoredEventTimes]:
    """The partitions of some of a query's batches, by batch id."""
    return partitions_in(connection, packed_batches.of_batches(TABLE, query_id, batch_ids))


def at_newest(
    connection: sa.Connection | so.Session, newest: sa.Subquery
) -> list[StoredEventTimes]:
    """The partitions of each query's batch in `newest` (store.sql.newest_of), by query."""
    return partitions_in(connection, packed_batches.at_newest(TABLE, newest))


def newest_measured(
    session: so.Session, query_ids: Sequence[str]
) -> dict[str, dict[str, StoredEventTimes]]:
    """Each query's newest measured batch's partitions, by query id and partition name: a
    statement for every IN_CHUNK queries."""
    found: dict[str, dict[str, StoredEventTimes]] = {}
    for chunk in chunks(query_ids):
        for measured in at_newest(session, newest_of(TABLE, "batch_id", chunk)):
            found.setdefault(measured.query_id, {})[measured.partition] = measured
    return found


def window_sums(
    first: Sequence[StoredEventTimes], last: Sequence[StoredEventTimes], figure: str
) -> dict[str, int]:
    """Per partition, a figure (records, late_records, future_records) summed over a range of
    batches, from the range's first and last batches' partitions: the last total less what
    came before the first."""
    before = {
        row.partition: getattr(row, f"{figure}_total") - getattr(row, figure) for row in first
    }
    return {
        row.partition: getattr(row, f"{figure}_total") - before.get(row.partition, 0)
        for row in last
    }
