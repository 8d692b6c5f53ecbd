"""A batch's measured partitions packed into one row: `partition_event_times` becomes
`batch_event_times`.

`partition_event_times` held a row per measured partition per batch: about 390 bytes a
partition on PostgreSQL, 25 KB a 64-partition batch. `batch_event_times` holds one row per
batch whose `partitions` value packs every partition's figures and JSON values
(store.packing's layout of rows, version 1, written out again here so that this migration
reads and writes it as it was), with the partitions' late and future-dated records summed.
A partition's watermark and time lag are no longer stored (they are its max event time less
its delay, and its batch's time less its max event time), and a new running figure, the
records read so far, is added: here, summed over the batches the store holds. The rows are
packed a batch at a time, with a line on stderr every few seconds on a large store; a
downgrade unpacks them.

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-28 10:00:00.000000
"""

import json
import struct
import sys
import time
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PROGRESS_EVERY_S = 5.0
VERSION = 1
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
# The columns of partition_event_times besides its keys, as they were: JSON or numbers.
JSON_COLUMNS = CELLS[1:]
OLD_NUMBERS = tuple(n for n in NUMBERS if n != "records_total") + (
    "partition_watermark_ms",
    "time_lag_ms",
)
INSERT_EVERY = 500
INT64_MAX = 2**63 - 1
JobText = sa.Text().with_variant(sa.String(255), "sqlite")


def _packed(rows: list[dict[str, Any]]) -> bytes:
    """Rows in their order as one value: version, the cells of each row as JSON, bits of the
    numbers present (the first number's first row in the highest bit), the numbers
    byte-shuffled."""
    cells = [row[number] for number in NUMBERS for row in rows]
    bits = bytearray((len(cells) + 7) // 8)
    for index, value in enumerate(cells):
        if value is not None:
            bits[index // 8] |= 0x80 >> (index % 8)
    values = b"".join(struct.pack("<q", 0 if value is None else int(value)) for value in cells)
    header = json.dumps([[row[cell] for cell in CELLS] for row in rows], separators=(",", ":"))
    shuffled = b"".join(values[byte::8] for byte in range(8))
    return zlib.compress(
        bytes([VERSION])
        + struct.pack("<I", len(header.encode()))
        + header.encode()
        + bytes(bits)
        + shuffled
    )


def _unpacked(blob: bytes) -> list[dict[str, Any]]:
    """What _packed packed."""
    data = zlib.decompress(blob)
    (length,) = struct.unpack_from("<I", data, 1)
    found = json.loads(data[5 : 5 + length])
    count = len(NUMBERS) * len(found)
    bits = data[5 + length : 5 + length + (count + 7) // 8]
    shuffled = data[5 + length + (count + 7) // 8 :]
    values = bytes(shuffled[byte * count + index] for index in range(count) for byte in range(8))
    rows: list[dict[str, Any]] = [dict(zip(CELLS, cells, strict=True)) for cells in found]
    for index in range(count):
        number, row = NUMBERS[index // len(found)], rows[index % len(found)]
        present = bits[index // 8] & (0x80 >> (index % 8))
        row[number] = struct.unpack_from("<q", values, index * 8)[0] if present else None
    return rows


def _old_table() -> sa.TableClause:
    return sa.table(
        "partition_event_times",
        sa.column("id", sa.BigInteger()),
        sa.column("query_id", sa.String()),
        sa.column("batch_id", sa.BigInteger()),
        sa.column("batch_time_ms", sa.BigInteger()),
        sa.column("partition", sa.String()),
        *(sa.column(name, sa.JSON()) for name in JSON_COLUMNS),
        *(sa.column(name, sa.BigInteger()) for name in OLD_NUMBERS),
    )


def _batches(connection: sa.Connection) -> Iterator[tuple[str, int, int, list[dict[str, Any]]]]:
    """The rows of partition_event_times, a batch at a time by name, each with the records
    read so far by its partition in the batches stored."""
    table = _old_table()
    rows = connection.execute(
        sa.select(table)
        .order_by(table.c.query_id, table.c.batch_id, table.c.partition)
        .execution_options(yield_per=10_000)
    ).mappings()
    batch: tuple[str, int, int] | None = None
    partitions: list[dict[str, Any]] = []
    records: dict[str, int] = {}
    for row in rows:
        if batch is None or (row["query_id"], row["batch_id"]) != batch[:2]:
            if batch is not None:
                yield (*batch, partitions)
            if batch is None or row["query_id"] != batch[0]:
                records = {}
            batch, partitions = (row["query_id"], row["batch_id"], row["batch_time_ms"]), []
        name = row["partition"]
        records[name] = min(records.get(name, 0) + row["records"], INT64_MAX)
        partitions.append(dict(row) | {"records_total": records[name]})
    if batch is not None:
        yield (*batch, partitions)


def _batch_row(query_id: str, batch_id: int, time_ms: int, rows: list[dict[str, Any]]) -> dict:
    return {
        "query_id": query_id,
        "batch_id": batch_id,
        "batch_time_ms": time_ms,
        "partitions": _packed(rows),
        "late_records": min(sum(row["late_records"] for row in rows), INT64_MAX),
        "future_records": min(sum(row["future_records"] or 0 for row in rows), INT64_MAX),
    }


def upgrade() -> None:
    connection = op.get_bind()
    table = op.create_table(
        "batch_event_times",
        sa.Column("query_id", sa.String(36), nullable=False),
        sa.Column("batch_id", sa.BigInteger(), nullable=False),
        sa.Column("batch_time_ms", sa.BigInteger(), nullable=False),
        sa.Column("partitions", sa.LargeBinary(), nullable=False),
        sa.Column("late_records", sa.BigInteger(), nullable=False),
        sa.Column("future_records", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["query_id"], ["queries.id"], name=op.f("fk_batch_event_times_query_id_queries")
        ),
        sa.PrimaryKeyConstraint("query_id", "batch_id", name=op.f("pk_batch_event_times")),
    )
    op.create_index(
        "ix_batch_event_times_future",
        "batch_event_times",
        ["query_id", "batch_time_ms"],
        sqlite_where=sa.text("future_records > 0"),
        postgresql_where=sa.text("future_records > 0"),
    )
    started = shown = time.monotonic()
    packed: list[dict[str, Any]] = []
    done = 0
    for batch in _batches(connection):
        packed.append(_batch_row(*batch))
        if len(packed) >= INSERT_EVERY:
            connection.execute(table.insert(), packed)
            done, packed = done + len(packed), []
        if time.monotonic() - shown >= PROGRESS_EVERY_S:
            shown = time.monotonic()
            print(
                f"0027: packed {done:,} batches' event times in {shown - started:.0f} s",
                file=sys.stderr,
            )
    if packed:
        connection.execute(table.insert(), packed)
    op.drop_table("partition_event_times")


def downgrade() -> None:
    connection = op.get_bind()
    table = op.create_table(
        "partition_event_times",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("query_id", sa.String(36), nullable=False),
        sa.Column("batch_id", sa.BigInteger(), nullable=False),
        sa.Column("batch_time_ms", sa.BigInteger(), nullable=False),
        sa.Column("partition", JobText, nullable=False),
        sa.Column("records", sa.BigInteger(), nullable=False),
        sa.Column("min_event_ms", sa.BigInteger(), nullable=True),
        sa.Column("max_event_ms", sa.BigInteger(), nullable=True),
        sa.Column("late_records", sa.BigInteger(), nullable=False),
        sa.Column("late_watermark_ms", sa.BigInteger(), nullable=True),
        sa.Column("delay_ms", sa.BigInteger(), nullable=False),
        sa.Column("max_event_time_ms", sa.BigInteger(), nullable=True),
        sa.Column("partition_watermark_ms", sa.BigInteger(), nullable=True),
        sa.Column("late_records_total", sa.BigInteger(), nullable=False),
        sa.Column("late_samples", sa.JSON(), nullable=False),
        sa.Column("time_lag_ms", sa.BigInteger(), nullable=True),
        sa.Column("max_event_time_record", sa.JSON(), nullable=True),
        sa.Column("max_event_time_batch", sa.BigInteger(), nullable=True),
        sa.Column("future_records", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("future_lead_ms", sa.BigInteger(), nullable=True),
        sa.Column("future_samples", sa.JSON(), nullable=True),
        sa.Column(
            "future_records_total", sa.BigInteger(), server_default=sa.text("0"), nullable=False
        ),
        *(sa.Column(name, sa.JSON(), nullable=True) for name in CELLS[4:]),
        sa.ForeignKeyConstraint(
            ["query_id"], ["queries.id"], name=op.f("fk_partition_event_times_query_id_queries")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_partition_event_times")),
        sa.UniqueConstraint(
            "query_id",
            "batch_id",
            "partition",
            name=op.f("uq_partition_event_times_query_id_batch_id_partition"),
        ),
    )
    op.create_index(
        "ix_partition_event_times_future",
        "partition_event_times",
        ["query_id", "batch_time_ms"],
        sqlite_where=sa.text("future_records > 0"),
        postgresql_where=sa.text("future_records > 0"),
    )
    batches = connection.execute(
        sa.text(
            "SELECT query_id, batch_id, batch_time_ms, partitions FROM batch_event_times "
            "ORDER BY query_id, batch_id"
        )
    )
    rows = []
    for query_id, batch_id, batch_time_ms, blob in batches.all():
        for row in _unpacked(blob):
            newest = row["max_event_time_ms"]
            del row["records_total"]
            rows.append(
                row
                | {"query_id": query_id, "batch_id": batch_id, "batch_time_ms": batch_time_ms}
                | {
                    "partition_watermark_ms": None if newest is None else newest - row["delay_ms"],
                    "time_lag_ms": None if newest is None else batch_time_ms - newest,
                }
            )
        if len(rows) >= INSERT_EVERY:
            connection.execute(table.insert(), rows)
            rows = []
    if rows:
        connection.execute(table.insert(), rows)
    op.drop_table("batch_event_times")
