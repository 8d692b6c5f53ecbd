"""What the tables of a row per batch that packs the batch's partitions (batch_offsets,
batch_event_times) share: grouping the write path's partition rows by batch, and reading
batches' rows into their partitions."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import sqlalchemy as sa
import sqlalchemy.orm as so

Row = dict[str, Any]
Partition = TypeVar("Partition")
Unpack = Callable[[Any], list[Partition]]


def by_batch(rows: Iterable[Row]) -> dict[tuple[str, int], list[Row]]:
    """Partition rows of batches, by (query id, batch id), in their order."""
    batches: dict[tuple[str, int], list[Row]] = {}
    for row in rows:
        batches.setdefault((row["query_id"], row["batch_id"]), []).append(row)
    return batches


def as_partitions(
    kind: Callable[..., Partition], row: Any, columns: dict[str, list[Any]]
) -> list[Partition]:
    """A batch row's partitions as `kind` (a NamedTuple whose fields start with the query id,
    batch id and batch time): the row's keys, then each of `columns` by field name."""
    keys = (row.query_id, row.batch_id, row.batch_time_ms)
    fields = kind._fields[len(keys) :]  # type: ignore[attr-defined]  # a NamedTuple
    return [
        kind(*keys, *values) for values in zip(*(columns[field] for field in fields), strict=True)
    ]


def partitions_in(
    connection: sa.Connection | so.Session, statement: sa.Select[Any], unpacked: Unpack[Partition]
) -> list[Partition]:
    """The partitions of the rows `statement` selects (whole rows of one such table), in
    their order, each batch's as `unpacked` gives them."""
    return [partition for row in connection.execute(statement) for partition in unpacked(row)]


def of_batches(table: sa.FromClause, query_id: str, batch_ids: Iterable[int]) -> sa.Select[Any]:
    """The rows of some of a query's batches, by batch id."""
    return (
        sa.select(table)
        .where(table.c.query_id == query_id, table.c.batch_id.in_(list(batch_ids)))
        .order_by(table.c.batch_id)
    )


def at_newest(table: sa.FromClause, newest: sa.Subquery) -> sa.Select[Any]:
    """The row of each query's batch in `newest` (store.sql.newest_of), by query."""
    return (
        sa.select(table)
        .join(
            newest,
            sa.and_(table.c.query_id == newest.c.query_id, table.c.batch_id == newest.c.newest),
        )
        .order_by(table.c.query_id)
    )
