"""Stores in tests: where they are made, one query's rows to compare, a SQLite store held locked."""

import contextlib
import json
import math
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# The PostgreSQL server the tests' stores are made on.
POSTGRES_SERVER = os.environ.get(
    "WMON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


def migrated(url: str) -> str:
    """`url`, its store migrated to the newest schema."""
    from monitor.store.schema.engine import create_engine
    from monitor.store.schema.migrate import upgrade

    engine = create_engine(url)
    upgrade(engine)
    engine.dispose()
    return url


def emptied(engine: Any) -> None:
    """Delete every row of the store behind `engine` (DELETE, not TRUNCATE: on a few rows it is
    a hundred times faster)."""
    from monitor.store.schema.models import Base

    with engine.begin() as connection:
        for table in reversed(Base.metadata.sorted_tables):
            connection.execute(table.delete())


@contextlib.contextmanager
def sqlite_locked(path: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on a SQLite store, as another writer would, for a with-block."""
    lock = sqlite3.connect(path, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        lock.execute("ROLLBACK")
        lock.close()


# What each of a query's history tables holds, in a stable order, for comparing two stores.
_STORED_TABLES = (
    "queries",
    "runs",
    "batches",
    "sources",
    "batch_offsets",
    "batch_event_times",
    "partition_minutes",
    "partition_hours",
    "query_minutes",
    "query_hours",
)
# Columns that say when and how this store got a row, not what the query did: never compared
# (the application's log a run was read from is known to `wmon ingest` alone).
_STORE_CLOCK = ("stored_at_ms", "first_stored_ms", "app_id")


def stored_rows(
    engine: Any,
    query_id: str,
    leave_out: tuple[str, ...] = (),
    tables: tuple[str, ...] = _STORED_TABLES,
) -> dict[str, list[dict[str, Any]]]:
    """Every stored row of one query in `tables` (by default its progress history; a row per
    partition of batch_offsets, batch_event_times and the packed rollups), without
    the columns in `leave_out` (and without generated row ids or the store's own clock),
    sorted so two stores compare row by row."""
    import sqlalchemy as sa

    from monitor.store.packed import batch_event_times, batch_offsets
    from monitor.store.schema.models import Base

    # Tables of a row per batch that packs its partitions: a row per partition here.
    packed_rows = {
        "batch_offsets": batch_offsets.unpacked,
        "batch_event_times": batch_event_times.unpacked,
    }

    rows: dict[str, list[dict[str, Any]]] = {}
    with engine.connect() as connection:
        for name in tables:
            table = Base.metadata.tables[name]
            key = table.c.id if name == "queries" else table.c.query_id
            result = connection.execute(sa.select(table).where(key == query_id))
            if name in packed_rows:
                found: Any = [p._asdict() for row in result for p in packed_rows[name](row)]
            elif "figures" in table.c:
                found = unpacked_rows(result.mappings())
            else:
                found = result.mappings()
            kept = [
                {
                    k: v
                    for k, v in row.items()
                    if k not in leave_out + _STORE_CLOCK and not (k == "id" and name != "queries")
                }
                for row in found
            ]
            rows[name] = sorted(kept, key=lambda row: json.dumps(row, sort_keys=True, default=str))
    return rows


def _stored_packed(module: Any, engine: Any, query_id: str | None) -> list[Any]:
    """The partitions of every batch stored in a packed table's `module` (store.batch_offsets,
    store.batch_event_times), or of one query's, by query and batch."""
    import sqlalchemy as sa

    table = module.TABLE
    statement = sa.select(table).order_by(table.c.query_id, table.c.batch_id)
    if query_id is not None:
        statement = statement.where(table.c.query_id == query_id)
    with engine.connect() as connection:
        return module.partitions_in(connection, statement)


def stored_event_times(engine: Any, query_id: str | None = None) -> list[Any]:
    """The stored measured partitions of every batch, or of one query's, by query and batch,
    each batch's by name."""
    from monitor.store.packed import batch_event_times

    return _stored_packed(batch_event_times, engine, query_id)


def stored_partitions(engine: Any, query_id: str | None = None) -> list[Any]:
    """The stored source partitions of every batch, or of one query's, by query and batch,
    each batch's in source and stored order."""
    from monitor.store.packed import batch_offsets

    return _stored_packed(batch_offsets, engine, query_id)


def unpacked_rows(spans: Any) -> list[dict[str, Any]]:
    """Rows of a packed partitions' rollup table (store.packing) as a row per partition."""
    from monitor.store.tiers.minutes import span_rows

    return [
        {name: value for name, value in span.items() if name not in ("figures", "histograms")}
        | {"partition": partition}
        | row
        for span in spans
        for partition, row in span_rows(span["figures"], span["histograms"]).items()
    ]


def row_differences(
    ours: dict[str, list[dict[str, Any]]], theirs: dict[str, list[dict[str, Any]]]
) -> list[tuple[str, int, str, Any, Any]]:
    """Where two results of `stored_rows` differ: (table, row, column, ours, theirs); a
    table of different lengths is one difference with the lengths. Floats that differ only in
    their last bits are the same."""
    found = []
    for table in ours.keys() | theirs.keys():
        mine, other = ours.get(table, []), theirs.get(table, [])
        if len(mine) != len(other):
            found.append((table, -1, "rows", len(mine), len(other)))
            continue
        for index, (row, twin) in enumerate(zip(mine, other, strict=True)):
            found += [
                (table, index, column, row.get(column), twin.get(column))
                for column in sorted(row.keys() | twin.keys())
                if not _same(row.get(column), twin.get(column))
            ]
    return sorted(found, key=str)


def _same(value: Any, other: Any) -> bool:
    """Equal, or for sums of rates (floats) equal but for the order they were added in: the
    rollups fold a group's batches in another order than one batch at a time."""
    if isinstance(value, float) and isinstance(other, float):
        return math.isclose(value, other, rel_tol=1e-12)
    return bool(value == other)
