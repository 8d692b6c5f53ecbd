"""PostgreSQL keeps the batches' rows in tables partitioned by day, so that expiry drops a day's
tables instead of deleting its rows (SQLite keeps one table each, pruned in chunks).

Each per-batch table (TABLES) is partitioned by range of (kept, batch_time_ms): a partition per
UTC day of batch times, named after its table and day (`batches_20261128`), and one, `…_kept`,
for the rows of batches that outlived their day. Before a day goes, each query's newest batch in
it moves there (`kept` set): the overview shows it and the query's next batch is derived from
it. So do the day's batches stored within the retention, whatever their time says (a driver
whose clock is behind, a backfill): they are found by a scan of the day's `batches` partition by
`stored_at_ms` (the day's rows of the other tables then by their keys), which costs a read of
that one table's rows of the day, not of the partitions' rows. A kept batch goes once its
query has a newer one and it was stored before the retention.

A day's partitions are made before rows of that day are inserted: ahead of time by the pruner
(today and the next AHEAD_DAYS days), otherwise by the write path, before its transaction, for a
batch whose day has none (a driver's clock far off, a batch replayed after its day went). CREATE
TABLE … LIKE and ATTACH PARTITION lock the partitioned table only against other changes to its
partitions, not against reads and writes (CREATE TABLE … PARTITION OF would lock out both); one
maker at a time, under an advisory lock. Attaching also locks the queries' table against writes for
a moment (the partition gets the foreign key), hence the write path makes partitions before its own
transaction, holding no lock. A day is dropped by DETACH PARTITION … CONCURRENTLY, which waits for
the reads that use the partition instead of stopping them, then DROP TABLE.

A writer and the pruner agree on each day under an advisory lock of its own: the writer holds
the days it writes shared, from the start of its transaction to its end, and finds their
partitions there (else it makes them, outside its transaction, and begins again); the pruner
holds a day exclusively from moving its newest batches to dropping its tables. So a batch sent
into a day while that day expires (a backfill, a replay, a driver whose clock is behind) is
stored, in the day's partitions made again once the day is gone, and the next expiry takes it
(its query's newest batch kept); it never finds the day half gone, to be refused, and never
goes in after its query's newest batch was kept, to be dropped with the day. Only writers into
the day that is expiring wait, for as long as its expiry takes (bounded as any lock a writer
waits for, store.write.query_locks). A writer that finds a day's partition detached and not
dropped, as an expiry that was interrupted leaves it, drops it before making the day again.
"""

from __future__ import annotations

import contextlib
import datetime
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, TypeVar

import sqlalchemy as sa

DAY_MS = 86_400_000
AHEAD_DAYS = 2
TABLES = ("batches", "state_operators", "sources", "batch_offsets", "batch_event_times")
KEPT = "kept"
# A dropped partition's rows are counted below this many (by its statistics), estimated above.
ESTIMATED_FROM = 100_000
# Serializes making partitions among writers and pruners (any constant both agree on).
_MAKER_LOCK = 0x776D6F6E_64617973
# A day's advisory lock is (this, the day): writers hold it shared, the pruner exclusively. Keys
# of two integers never meet the single-integer keys above and of store.write.query_locks.
_DAY_LOCK = 0x776D6F6E
# How many times a write begins before it fails: after the first, which may find a day with no
# partitions yet, each one finds a day that a prune expired after the partitions were made.
MAKE_ATTEMPTS = 5
Written = TypeVar("Written")
_EPOCH = datetime.date(1970, 1, 1)
_DAY_NAME = re.compile(r"_(\d{8})$")


def in_use(bind: sa.Engine | sa.Connection) -> bool:
    """Whether the store's per-batch tables are partitioned by day (PostgreSQL's are)."""
    return bind.dialect.name == "postgresql"


def day_of(time_ms: int) -> int:
    """The UTC day a time falls on, as days since 1970-01-01."""
    return time_ms // DAY_MS


def partition_name(table: str, day: int) -> str:
    """The name of `table`'s partition for `day`: `batches_20261128`."""
    return f"{table}_{_EPOCH + datetime.timedelta(days=day):%Y%m%d}"


def _day_of_name(name: str) -> int | None:
    """The day a partition's name stands for; None for the kept rows' partition."""
    match = _DAY_NAME.search(name)
    if match is None:
        return None
    return (datetime.datetime.strptime(match.group(1), "%Y%m%d").date() - _EPOCH).days


def is_partition(table: str) -> bool:
    """Whether `table` is one of the per-batch tables' partitions (their day's or kept rows')."""
    base, _, suffix = table.rpartition("_")
    return base in TABLES and (suffix == KEPT or _DAY_NAME.search(table) is not None)


def comparison_options(dialect: str) -> dict[str, Any]:
    """Alembic's options for comparing a store with the models: on PostgreSQL, without the
    partitions, and without the per-batch tables' unique keys, which hold the partition key
    there (migration 0028) and not in the models (nor on SQLite)."""
    if dialect != "postgresql":
        return {}

    def include_name(name: str | None, kind: str, _parents: dict[str, str | None]) -> bool:
        return not (kind == "table" and name is not None and is_partition(name))

    def include_object(item: Any, _name: str | None, kind: str, *_: Any) -> bool:
        return not (kind == "unique_constraint" and item.table.name in TABLES)

    return {"include_name": include_name, "include_object": include_object}


def prepare(connection: sa.Connection, times_ms: Iterable[int]) -> None:
    """Make every per-batch table's partition for the days of `times_ms` that has none yet,
    in the caller's transaction, if the store is partitioned."""
    if not in_use(connection):
        return
    names = [
        (table, day, partition_name(table, day))
        for day in sorted({day_of(time_ms) for time_ms in times_ms})
        for table in TABLES
    ]
    if not names or not _missing(connection, [name for _, _, name in names]):
        return
    connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MAKER_LOCK})
    missing = set(_missing(connection, [name for _, _, name in names]))
    for table, day, name in names:
        if name in missing:
            connection.exec_driver_sql(f"CREATE TABLE {name} (LIKE {table})")
            connection.exec_driver_sql(
                f"ALTER TABLE {table} ATTACH PARTITION {name} "
                f"FOR VALUES FROM (false, {day * DAY_MS}) TO (false, {(day + 1) * DAY_MS})"
            )


def prepare_days(engine: sa.Engine, times_ms: Iterable[int]) -> None:
    """`prepare` in a transaction of its own, so that attaching waits on no writer that waits
    for this one; a partition of these days that an interrupted expiry left detached is dropped
    first, as the expiry would have."""
    times = list(times_ms)
    if times and in_use(engine):
        for table, day in _detached(engine, {day_of(time_ms) for time_ms in times}):
            with expiring(engine, day) as autocommit:
                drop_day(autocommit, table, day)
        with engine.begin() as connection:
            prepare(connection, times)


class DayMissing(Exception):
    """A day that a write's batches fall on has no partition to hold them in some table."""


def hold(connection: sa.Connection, times_ms: Iterable[int]) -> None:
    """Keep the days of `times_ms` from expiring until the transaction ends, if the store is
    partitioned; DayMissing if a table has no partition attached for one of them. Before the
    transaction reads or writes any table: an expiry that holds a day waits for the
    transactions that use the tables (DETACH … CONCURRENTLY), which must not wait for it."""
    if not in_use(connection):
        return
    days = sorted({day_of(time_ms) for time_ms in times_ms})
    if not days:
        return
    connection.execute(
        sa.text(
            "SELECT count(pg_advisory_xact_lock_shared(:kind, day)) "
            "FROM (SELECT unnest(CAST(:days AS integer[])) AS day ORDER BY 1) AS ordered"
        ),
        {"kind": _DAY_LOCK, "days": days},
    )
    # A statement of its own: one that had waited for the lock would see the catalog as it was
    # before the expiry it waited for.
    attached = set(
        connection.scalars(
            sa.text(
                "SELECT relname FROM pg_class JOIN pg_inherits ON inhrelid = pg_class.oid "
                "WHERE relname = ANY(CAST(:names AS text[])) AND NOT inhdetachpending "
                "AND relnamespace = CAST(current_schema() AS regnamespace)"
            ),
            {"names": [partition_name(table, day) for day in days for table in TABLES]},
        )
    )
    for day in days:
        for table in TABLES:
            name = partition_name(table, day)
            if name not in attached:
                raise DayMissing(f"the partition {name} of {table} is not attached")


def writing(engine: sa.Engine, times_ms: Sequence[int], write: Callable[[], Written]) -> Written:
    """What `write()` wrote: a transaction that holds the days of `times_ms` (`hold`), begun
    again, after their partitions are made, while one of them has none (a day of the store's
    first batches; of a batch far behind or ahead, ahead of time or replayed; or one just
    expired)."""
    for _ in range(MAKE_ATTEMPTS - 1):
        try:
            return write()
        except DayMissing:
            prepare_days(engine, times_ms)
    return write()


@contextlib.contextmanager
def expiring(engine: sa.Engine, day: int) -> Iterator[sa.Connection]:
    """A connection that runs each statement on its own, holding `day` against writers (once
    those that hold it are done) until the block ends."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as autocommit:
        key = {"kind": _DAY_LOCK, "day": day}
        autocommit.execute(sa.text("SELECT pg_advisory_lock(:kind, :day)"), key)
        try:
            yield autocommit
        finally:
            autocommit.execute(sa.text("SELECT pg_advisory_unlock(:kind, :day)"), key)


def prepare_ahead(engine: sa.Engine, now_ms: int) -> None:
    """Make the partitions of today and the next AHEAD_DAYS days."""
    prepare_days(engine, (now_ms + day * DAY_MS for day in range(AHEAD_DAYS + 1)))


def _missing(connection: sa.Connection, names: Sequence[str]) -> list[str]:
    """Which of the tables `names` do not exist. Read from pg_class as of this statement
    (to_regclass's cached catalog may not have seen a table another maker just committed)."""
    return list(
        connection.scalars(
            sa.text(
                "SELECT name FROM unnest(CAST(:names AS text[])) AS name WHERE NOT EXISTS "
                "(SELECT 1 FROM pg_class WHERE relname = name "
                "AND relnamespace = CAST(current_schema() AS regnamespace))"
            ),
            {"names": list(names)},
        )
    )


def _detached(engine: sa.Engine, days: Iterable[int]) -> list[tuple[str, int]]:
    """The tables whose partition for one of `days` is detached or detaching and not dropped."""
    names = {partition_name(table, day): (table, day) for day in days for table in TABLES}
    with engine.connect() as connection:
        found = connection.scalars(
            sa.text(
                "SELECT relname FROM pg_class LEFT JOIN pg_inherits ON inhrelid = pg_class.oid "
                "WHERE relname = ANY(CAST(:names AS text[])) "
                "AND relnamespace = CAST(current_schema() AS regnamespace) "
                "AND (inhrelid IS NULL OR inhdetachpending)"
            ),
            {"names": list(names)},
        )
        return sorted(names[name] for name in found)


def days(connection: sa.Connection) -> list[int]:
    """The days any per-batch table has a partition for, oldest first; a partition that an
    interrupted expiry left detaching, or detached and not dropped, included."""
    names = connection.scalars(
        sa.text("SELECT relname FROM pg_class WHERE relkind = 'r' AND relname ~ :pattern"),
        {"pattern": f"^({'|'.join(TABLES)})_[0-9]{{8}}$"},
    )
    return sorted({day for day in map(_day_of_name, names) if day is not None})


def keep_newest(connection: sa.Connection, day: int) -> None:
    """Move each query's newest batch of `day` (with its rows in every table) to the kept
    rows' partitions: a look-up per query by the tables' keys, not a read of the day."""
    for table in TABLES:
        connection.execute(
            sa.text(
                f"UPDATE {table} SET kept = true FROM queries "
                f"WHERE {table}.query_id = queries.id AND {table}.batch_id = queries.last_batch_id "
                f"AND NOT {table}.kept AND {table}.batch_time_ms >= :start "
                f"AND {table}.batch_time_ms < :end"
            ),
            {"start": day * DAY_MS, "end": (day + 1) * DAY_MS},
        )


def keep_stored(connection: sa.Connection, day: int, stored_ms: int) -> None:
    """Move the batches of `day` stored at `stored_ms` or later (with their rows in every table)
    to the kept rows' partitions: the day's batches read by when they were stored, then each
    other table's rows of those batches looked up by its keys."""
    day_range = {"start": day * DAY_MS, "end": (day + 1) * DAY_MS, "stored": stored_ms}
    connection.execute(
        sa.text(
            "UPDATE batches SET kept = true WHERE NOT kept AND stored_at_ms >= :stored "
            "AND batch_time_ms >= :start AND batch_time_ms < :end"
        ),
        day_range,
    )
    for table in TABLES[1:]:
        connection.execute(
            sa.text(
                f"UPDATE {table} SET kept = true FROM batches WHERE batches.kept "
                f"AND batches.stored_at_ms >= :stored AND batches.batch_time_ms >= :start "
                f"AND batches.batch_time_ms < :end AND {table}.query_id = batches.query_id "
                f"AND {table}.batch_id = batches.batch_id AND NOT {table}.kept "
                f"AND {table}.batch_time_ms >= :start AND {table}.batch_time_ms < :end"
            ),
            day_range,
        )


class Dropped(NamedTuple):
    """How many rows a dropped partition held: counted, or estimated from its statistics and
    size when that comes to ESTIMATED_FROM rows or more (counting would read all of it)."""

    rows: int
    estimated: bool


def drop_day(autocommit: sa.Connection, table: str, day: int) -> Dropped:
    """Detach `table`'s partition for `day` without stopping reads and writes, then drop it.
    `autocommit` runs each statement on its own (DETACH … CONCURRENTLY cannot run inside a
    transaction)."""
    name = partition_name(table, day)
    found = autocommit.execute(
        sa.text(
            "SELECT reltuples, relpages, pg_relation_size(oid) / "
            "current_setting('block_size')::int, inhdetachpending FROM pg_class "
            "LEFT JOIN pg_inherits ON inhrelid = oid WHERE oid = to_regclass(:name)"
        ),
        {"name": name},
    ).first()
    if found is None:
        return Dropped(0, estimated=False)
    rows_then, pages_then, pages, pending = found
    if pending is not None:
        finish = " FINALIZE" if pending else " CONCURRENTLY"
        autocommit.exec_driver_sql(f"ALTER TABLE {table} DETACH PARTITION {name}{finish}")
    # As the planner estimates a table's rows: its rows per page when last analyzed, times
    # its pages now (rows of a day are alike, so their density does not change).
    estimate = rows_then / pages_then * pages if rows_then >= 0 and pages_then > 0 else 0
    dropped = Dropped(round(estimate), estimated=True)
    if estimate < ESTIMATED_FROM:
        rows = autocommit.scalar(sa.text(f"SELECT count(*) FROM {name}"))
        dropped = Dropped(int(rows or 0), estimated=False)
    autocommit.exec_driver_sql(f"DROP TABLE {name}")
    return dropped


def drop_kept(connection: sa.Connection, stored_ms: int | None) -> dict[str, int]:
    """Delete the kept batches that are no longer their query's newest, but those stored at
    `stored_ms` or later (if not None), then each other table's kept rows whose batch is gone;
    how many rows went from each table."""
    stored_before = "" if stored_ms is None else "AND (stored_at_ms IS NULL OR stored_at_ms < :ms)"
    batch_gone = (
        "NOT EXISTS (SELECT 1 FROM batches WHERE batches.kept "
        "AND batches.query_id = {table}.query_id AND batches.batch_id = {table}.batch_id)"
    )
    return {
        table: connection.execute(
            sa.text(
                f"DELETE FROM {table} WHERE kept AND NOT EXISTS (SELECT 1 FROM queries "
                f"WHERE queries.id = {table}.query_id "
                f"AND queries.last_batch_id = {table}.batch_id) "
                + (stored_before if table == "batches" else f"AND {batch_gone.format(table=table)}")
            ),
            {"ms": stored_ms},
        ).rowcount
        for table in TABLES
    }
