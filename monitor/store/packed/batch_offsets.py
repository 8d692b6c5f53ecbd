"""A batch's source partitions, stored as one row: every partition's offsets, arrival and
advance times and idle, stalled and rewound flags packed into one compressed value.

A row per partition per batch paid a row header, the query id, the partition's name and the
entries of two indexes for a dozen small figures: about 300 bytes a partition on PostgreSQL,
20 KB a batch of 64 partitions. Packed (store.packing's rows), a batch of 64 partitions takes
about 600 bytes, and is read in one look-up of the primary key.

Beside the packed value, the row keeps what reads across many batches or queries select by:
the partitions' summed offset lag (the overview's trend; at most the largest 64-bit integer,
however absurd a source's offsets) and whether any partition was rewound (the look-back
window's rewinds). A partition's offset lag is not stored: it is read as its latest offset
less its end offset, as it was measured.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.events import offset_lag
from monitor.numbers import INT64_MAX
from monitor.store.packed import packed_batches
from monitor.store.packed.packing import pack_rows, unpack_columns
from monitor.store.schema.models import BatchOffsets

Row = dict[str, Any]
TABLE = BatchOffsets.__table__

TEXTS = ("partition", "topic")
NUMBERS = (
    "source_index",
    "start_offset",
    "end_offset",
    "latest_offset",
    "last_arrival_ms",
    "last_advance_ms",
    "idle",
    "stalled",
    "rewound",
)
FLAGS = ("idle", "stalled", "rewound")


class StoredPartition(NamedTuple):
    """A source partition of a stored batch, as the write path derived it."""

    query_id: str
    batch_id: int
    batch_time_ms: int
    source_index: int
    partition: str
    topic: str | None
    start_offset: int | None
    end_offset: int | None
    latest_offset: int | None
    offset_lag: int | None
    last_arrival_ms: int | None
    last_advance_ms: int | None
    idle: bool
    stalled: bool
    rewound: bool


def packed(rows: Iterable[Row]) -> list[Row]:
    """Partition rows of batches (the write path's column dicts, a source's partitions in
    their order) as a batch_offsets row per batch."""
    stored = []
    for (query_id, batch_id), partitions in packed_batches.by_batch(rows).items():
        in_order = sorted(partitions, key=lambda row: row["source_index"])
        lags = [row["offset_lag"] for row in in_order if row["offset_lag"] is not None]
        stored.append(
            {
                "query_id": query_id,
                "batch_id": batch_id,
                "batch_time_ms": in_order[0]["batch_time_ms"],
                "partitions": pack_rows(TEXTS, NUMBERS, in_order),
                "offset_lag": min(sum(lags), INT64_MAX) if lags else None,
                "rewound": any(row["rewound"] for row in in_order),
            }
        )
    return stored


def unpacked(row: Any) -> list[StoredPartition]:
    """A batch_offsets row's partitions, in source and stored order."""
    columns = unpack_columns(row.partitions, TEXTS, NUMBERS)
    for flag in FLAGS:
        columns[flag] = [bool(value) for value in columns[flag]]
    columns["offset_lag"] = list(map(offset_lag, columns["latest_offset"], columns["end_offset"]))
    return packed_batches.as_partitions(StoredPartition, row, columns)


def offsets_of(row: Any) -> list[tuple[int, str, int | None, int | None]]:
    """A batch_offsets row's partitions as (source index, name, end offset, latest offset),
    in source and stored order: what a backlog needs, without the rest of each partition."""
    columns = unpack_columns(row.partitions, TEXTS, NUMBERS)
    return list(
        zip(
            columns["source_index"],
            columns["partition"],
            columns["end_offset"],
            columns["latest_offset"],
            strict=True,
        )
    )


def partitions_in(
    connection: sa.Connection | so.Session, statement: sa.Select[Any]
) -> list[StoredPartition]:
    """The partitions of the batch_offsets rows that `statement` selects (whole rows, from
    :data:`TABLE`), in their order."""
    return packed_batches.partitions_in(connection, statement, unpacked)


def of_batches(
    connection: sa.Connection | so.Session, query_id: str, batch_ids: Iterable[int]
) -> list[StoredPartition]:
    """The partitions of some of a query's batches, by batch id."""
    return partitions_in(connection, packed_batches.of_batches(TABLE, query_id, batch_ids))


def at_newest(connection: sa.Connection | so.Session, newest: sa.Subquery) -> list[StoredPartition]:
    """The partitions of each query's batch in `newest` (store.sql.newest_of), by query."""
    return partitions_in(connection, packed_batches.at_newest(TABLE, newest))
