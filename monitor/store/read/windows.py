"""What happened within each query's look-back window, read for many queries at once: late
records (and records read) per partition and rewinds, over the batches stored from each
query's own bound on.

A window over time is turned into a batch id bound first (:func:`first_since`), so that every
read uses the `(query_id, batch_id, ...)` indexes however long the stored history is. Each
function reads at most :data:`~monitor.store.schema.sql.IN_CHUNK` queries in a fixed number of
statements.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.packed import batch_event_times, batch_offsets
from monitor.store.packed.batch_event_times import StoredEventTimes, window_sums
from monitor.store.schema.models import Batch, BatchEventTimes, BatchOffsets, Query
from monitor.store.schema.sql import among, per_query


class BatchRow(Protocol):
    """A batch's stored row (an ORM object or a plain row), as a window ends at it."""

    query_id: str
    batch_id: int
    batch_time_ms: int


def first_since(since_ms: Mapping[str, int]) -> sa.Subquery:
    """(query_id, first_batch): the id of each query's first batch at or after its own bound
    in `since_ms`, NULL when there is none; a look-up of the (query_id, batch_time_ms) index
    per query."""
    queries = Query.__table__
    first = (
        sa.select(Batch.batch_id)
        .where(Batch.query_id == queries.c.id)
        .where(Batch.batch_time_ms >= per_query(queries.c.id, since_ms))
        .order_by(Batch.batch_time_ms, Batch.batch_id)
        .limit(1)
    )
    return (
        sa.select(queries.c.id.label("query_id"), first.scalar_subquery().label("first_batch"))
        .where(among(queries.c.id, list(since_ms)))
        .subquery()
    )


def first_batch_since(session: so.Session, query_id: str, since_ms: int) -> int | None:
    """The id of the query's first batch at or after `since_ms`, None when there is none."""
    first = first_since({query_id: since_ms})
    return session.scalar(sa.select(first.c.first_batch))


def _from_first(
    table: type[Batch | BatchOffsets | BatchEventTimes], first: sa.Subquery
) -> sa.ColumnElement[bool]:
    """The rows of `table` in their query's batches from its first in the window on."""
    return sa.and_(table.query_id == first.c.query_id, table.batch_id >= first.c.first_batch)


class LateCount(NamedTuple):
    """A partition's records in a window: dropped as late, and read (the late ones too)."""

    late: int
    records: int


def late_by_partitions(
    session: so.Session, since_ms: Mapping[str, int]
) -> dict[str, dict[str, LateCount]]:
    """Per query, each partition's late and read records in the batches stored from its
    `since_ms` on: from the first and last measured batches of the window, their running
    totals (store.batch_event_times)."""
    first, table = first_since(since_ms), BatchEventTimes
    ends = (
        sa.select(
            table.query_id,
            sa.func.min(table.batch_id).label("first"),
            sa.func.max(table.batch_id).label("last"),
        )
        .join(first, _from_first(table, first))
        .group_by(table.query_id)
        .subquery()
    )
    at_ends = sa.select(batch_event_times.TABLE).join(
        ends,
        sa.and_(
            table.query_id == ends.c.query_id,
            sa.or_(table.batch_id == ends.c.first, table.batch_id == ends.c.last),
        ),
    )
    batches: dict[str, dict[int, list[StoredEventTimes]]] = {}
    for row in batch_event_times.partitions_in(session, at_ends):
        batches.setdefault(row.query_id, {}).setdefault(row.batch_id, []).append(row)
    late: dict[str, dict[str, LateCount]] = {}
    for query_id, found in batches.items():
        first_rows, last_rows = found[min(found)], found[max(found)]
        counts = window_sums(first_rows, last_rows, "late_records")
        records = window_sums(first_rows, last_rows, "records")
        late[query_id] = {name: LateCount(counts[name], records[name]) for name in counts}
    return late


def rewinds_since(
    session: so.Session, since_ms: Mapping[str, int]
) -> dict[str, tuple[bool, set[str]]]:
    """Per query, whether the watermark went back in the batches stored from its `since_ms`
    on, and the partitions that did."""
    first = first_since(since_ms)
    watermarks = session.scalars(
        sa.select(Batch.query_id)
        .distinct()
        .join(first, _from_first(Batch, first))
        .where(Batch.watermark_rewound)
    )
    rewound: dict[str, tuple[bool, set[str]]] = {key: (False, set()) for key in since_ms}
    for query_id in watermarks:
        rewound[query_id] = (True, set())
    with_rewinds = (
        sa.select(batch_offsets.TABLE)
        .join(first, _from_first(BatchOffsets, first))
        .where(BatchOffsets.rewound)
    )
    for partition in batch_offsets.partitions_in(session, with_rewinds):
        if partition.rewound:
            rewound[partition.query_id][1].add(partition.partition)
    return rewound


def sampled_rows(
    session: so.Session,
    table: sa.FromClause,
    newest: Mapping[str, BatchRow],
    window_ms: int,
    points: int,
    at_least: int,
) -> sa.Select[Any]:
    """The statement that reads the rows of `table` (of rows per batch: a query_id and
    batch_id) of each query's window: the `window_ms` up to its batch in `newest`, and at least
    its last `at_least` batches; of them every n-th batch id from the window's first, at most
    `points`, and the newest. The windows' first batches are read first (a statement for at
    most IN_CHUNK queries); their bounds then go to the store as one value (:func:`_bounds`),
    and each query's range is read from the (query_id, batch_id) index."""
    since = {key: batch.batch_time_ms - window_ms for key, batch in newest.items()}
    firsts: dict[str, int | None] = {
        key: first for key, first in session.execute(sa.select(first_since(since)))
    }
    ranges = []
    for key, batch in newest.items():
        last = batch.batch_id
        first = firsts.get(key)
        start = last - (at_least - 1) if first is None else min(first, last - (at_least - 1))
        ranges.append((key, start, last, max(-(-(last - start) // (points - 1)), 1)))
    window = _bounds(session.get_bind().dialect.name, ranges)
    batch_id = table.c.batch_id
    return (
        sa.select(table)
        .join(window, window.c.query_id == table.c.query_id)
        .where(
            batch_id >= window.c.first,
            batch_id <= window.c.last,
            sa.or_((batch_id - window.c.first) % window.c.step == 0, batch_id == window.c.last),
        )
        .order_by(table.c.query_id, batch_id)
    )


_BOUNDS_SQL = {
    # A table of the JSON list's records, which the planner loops over, looking each query's
    # range up in the index (bounds that come from a subquery of the statement were read again
    # for every row of the table on PostgreSQL; a list of conditions, one per query, costs
    # more to build and compile than to run).
    "postgresql": "SELECT * FROM jsonb_to_recordset(CAST(:windows AS jsonb))"
    " AS w(query_id text, first bigint, last bigint, step bigint)",
    "sqlite": "SELECT json_extract(value, '$.query_id') AS query_id,"
    " json_extract(value, '$.first') AS first, json_extract(value, '$.last') AS last,"
    " json_extract(value, '$.step') AS step FROM json_each(:windows)",
}


def _bounds(dialect: str, ranges: list[tuple[str, int, int, int]]) -> sa.Subquery:
    """The windows' (query_id, first, last, step) as a table, given to the store as one JSON
    value: one statement, compiled once, whatever the number of queries."""
    records = [
        {"query_id": key, "first": first, "last": last, "step": step}
        for key, first, last, step in ranges
    ]
    return (
        sa.text(_BOUNDS_SQL[dialect])
        .bindparams(windows=json.dumps(records))
        .columns(
            sa.column("query_id", sa.String),
            sa.column("first", sa.BigInteger),
            sa.column("last", sa.BigInteger),
            sa.column("step", sa.BigInteger),
        )
        .subquery("windows")
    )
