"""PostgreSQL's per-batch tables partitioned by day, so that expiry drops whole days.

`batches`, `state_operators`, `sources`, `batch_offsets` and `batch_event_times` become partitioned
by range of (kept, batch_time_ms) on PostgreSQL: a partition per UTC day of batch times
(`batches_20261128`), from the store's first day to two days ahead, and one (`…_kept`) for rows
expiry keeps past their day (store.day_partitions). Every table gets `kept`; the operators' and
sources' tables get their batch's time, which they are partitioned by. A partitioned table's keys
must hold what it is partitioned by, so on PostgreSQL the primary keys and unique constraints end
with (kept, batch_time_ms). The rows are copied table by table, with a line on stderr for each that
held any; operators' and sources' rows without their batch (none are written so) are left out.
SQLite only gains the columns. A downgrade copies the rows back into plain tables.

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-28 13:00:00.000000
"""

import datetime
import sys
import time
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DAY_MS = 86_400_000
AHEAD_DAYS = 2
PARTITION_KEY = ("kept", "batch_time_ms")
# Each table's primary key, unique key and indexes (name, columns, where), as before.
KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...] | None, list[tuple[str, str, str]]]] = {
    "state_operators": (("id",), ("query_id", "batch_id", "operator_index"), []),
    "sources": (("id",), ("query_id", "batch_id", "source_index"), []),
    "batch_offsets": (("query_id", "batch_id"), None, []),
    "batch_event_times": (
        ("query_id", "batch_id"),
        None,
        [("ix_batch_event_times_future", "query_id, batch_time_ms", "future_records > 0")],
    ),
    # Last: the operators' and sources' batch times are read from it.
    "batches": (
        ("id",),
        ("query_id", "batch_id"),
        [("ix_batches_query_id_batch_time_ms", "query_id, batch_time_ms", "")],
    ),
}
TIMELESS = ("state_operators", "sources")


def _say(message: str) -> None:
    print(f"0028: {message}", file=sys.stderr, flush=True)


def _columns(table: str) -> list[str]:
    return [column["name"] for column in sa.inspect(op.get_bind()).get_columns(table)]


def _day_name(table: str, day: int) -> str:
    return f"{table}_{datetime.date(1970, 1, 1) + datetime.timedelta(days=day):%Y%m%d}"


def _days() -> list[int]:
    """The days of the batches' rows the store holds, and today and the days ahead."""
    stored = op.get_bind().scalars(
        sa.text(
            " UNION ".join(
                f"SELECT DISTINCT batch_time_ms / {DAY_MS} FROM {table}"
                for table in ("batches", "batch_offsets", "batch_event_times")
            )
        )
    )
    today = int(time.time() * 1000) // DAY_MS
    return sorted({*map(int, stored), *range(today, today + AHEAD_DAYS + 1)})


def _keys(table: str, partitioned: bool) -> None:
    """The table's keys and indexes under their names, with the partition key if
    `partitioned`."""
    primary, unique, indexes = KEYS[table]
    extra = PARTITION_KEY if partitioned else ()
    op.execute(
        f"ALTER TABLE {table} ADD CONSTRAINT pk_{table} PRIMARY KEY ({', '.join(primary + extra)})"
    )
    if unique is not None:
        op.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT uq_{table}_{'_'.join(unique)} "
            f"UNIQUE ({', '.join(unique + extra)})"
        )
    op.execute(
        f"ALTER TABLE {table} ADD CONSTRAINT fk_{table}_query_id_queries "
        "FOREIGN KEY (query_id) REFERENCES queries (id)"
    )
    for name, columns, where in indexes:
        op.execute(f"CREATE INDEX {name} ON {table} ({columns}){' WHERE ' if where else ''}{where}")


def _replace(table: str, create: list[str], copy: str) -> None:
    """Create the table anew with the `create` statements (under a passing name), copy its
    rows with `copy`, and put the new one in the old one's place, its id sequence included."""
    started = time.monotonic()
    for statement in create:
        op.execute(statement)
    rows = op.get_bind().execute(sa.text(copy)).rowcount
    sequence = None
    if KEYS[table][0] == ("id",):
        sequence = op.get_bind().scalar(sa.text(f"SELECT pg_get_serial_sequence('{table}', 'id')"))
    if sequence is not None:
        op.execute(f"ALTER SEQUENCE {sequence} OWNED BY NONE")
    op.execute(f"DROP TABLE {table}")
    op.execute(f"ALTER TABLE {table}_new RENAME TO {table}")
    if sequence is not None:
        op.execute(f"ALTER SEQUENCE {sequence} OWNED BY {table}.id")
    if rows:
        _say(f"{table}: {rows:,} rows copied in {time.monotonic() - started:.1f} s")


def _upgrade_postgresql() -> None:
    days = _days()
    for table in KEYS:
        old = _columns(table)
        added = "kept BOOLEAN NOT NULL DEFAULT false"
        if table in TIMELESS:
            added = f"batch_time_ms BIGINT NOT NULL, {added}"
        create = (
            f"CREATE TABLE {table}_new (LIKE {table} INCLUDING DEFAULTS, {added}) "
            "PARTITION BY RANGE (kept, batch_time_ms)"
        )
        listed = ", ".join(old)
        if table in TIMELESS:
            copy = (
                f"INSERT INTO {table}_new ({listed}, batch_time_ms) "
                f"SELECT {', '.join(f'o.{c}' for c in old)}, b.batch_time_ms FROM {table} o "
                "JOIN batches b ON b.query_id = o.query_id AND b.batch_id = o.batch_id"
            )
        else:
            copy = f"INSERT INTO {table}_new ({listed}) SELECT {listed} FROM {table}"
        partitions = [
            f"CREATE TABLE {_day_name(table, day)} PARTITION OF {table}_new "
            f"FOR VALUES FROM (false, {day * DAY_MS}) TO (false, {(day + 1) * DAY_MS})"
            for day in days
        ]
        partitions.append(
            f"CREATE TABLE {table}_kept PARTITION OF {table}_new "
            "FOR VALUES FROM (true, MINVALUE) TO (MAXVALUE, MAXVALUE)"
        )
        _replace(table, [create, *partitions], copy)
        _keys(table, partitioned=True)


def _downgrade_postgresql() -> None:
    for table in reversed(KEYS):
        dropped = ["kept", *(["batch_time_ms"] if table in TIMELESS else [])]
        listed = ", ".join(c for c in _columns(table) if c not in dropped)
        create = [
            f"CREATE TABLE {table}_new (LIKE {table} INCLUDING DEFAULTS)",
            f"ALTER TABLE {table}_new {', '.join(f'DROP COLUMN {c}' for c in dropped)}",
        ]
        copy = f"INSERT INTO {table}_new ({listed}) SELECT {listed} FROM {table}"
        _replace(table, create, copy)
        _keys(table, partitioned=False)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _upgrade_postgresql()
        return
    for table in TIMELESS:
        op.add_column(table, sa.Column("batch_time_ms", sa.BigInteger(), nullable=True))
        op.execute(
            f"UPDATE {table} SET batch_time_ms = (SELECT b.batch_time_ms FROM batches b "
            f"WHERE b.query_id = {table}.query_id AND b.batch_id = {table}.batch_id)"
        )
        op.execute(f"DELETE FROM {table} WHERE batch_time_ms IS NULL")
        with op.batch_alter_table(table) as batch:
            batch.alter_column("batch_time_ms", existing_type=sa.BigInteger(), nullable=False)
    for table in KEYS:
        op.add_column(
            table, sa.Column("kept", sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _downgrade_postgresql()
        return
    for table in KEYS:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("kept")
            if table in TIMELESS:
                batch.drop_column("batch_time_ms")
