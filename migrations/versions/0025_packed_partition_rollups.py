"""A query's partitions' rollups packed into one row per minute and per hour.

`partition_minutes` and `partition_hours` held a row per partition per span, about 350 bytes a
partition-minute on PostgreSQL: 30 days of a 64-partition query took about 1 GB. Each now holds
one row per query and span whose `figures` value packs every partition's figures (the layout
of store.packing, version 1, written out again here so that this migration reads and writes it
as it was), with a new one, the largest watermark delay in force, and, in `histograms`, the
partitions' lateness histograms summed. The rows stored are packed here, a query and span at a
time, with a line on stderr every few seconds on a large store, without the two new figures
(their batches' histograms are in the batches kept); a downgrade unpacks them.

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-28 06:40:00.000000
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

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PROGRESS_EVERY_S = 5.0
VERSION = 1
# Each partition's figures, in the order they are packed.
FIGURES = (
    "batches",
    "records",
    "offset_records",
    "late_records",
    "future_records",
    "max_event_time_ms",
    "watermark_min_ms",
    "watermark_max_ms",
    "time_lag_max_ms",
    "offset_lag_max",
    "idle_batches",
    "stalled_batches",
    "rewound_batches",
    "delay_max_ms",
)
# The figures of a row per partition, before this migration.
ROW_FIGURES = FIGURES[:-1]
COUNTS = ("batches", "idle_batches", "stalled_batches", "rewound_batches")
TABLES = (("partition_minutes", "minute_ms"), ("partition_hours", "hour_ms"))
INSERT_EVERY = 500


def _packed(rows: dict[str, dict[str, Any]]) -> bytes:
    """Partitions' figures by name as one value: version, names, bits of the values present
    (the first figure's first partition in the highest bit), the values byte-shuffled."""
    names = sorted(rows)
    cells = [rows[name][figure] for figure in FIGURES for name in names]
    bits = bytearray((len(cells) + 7) // 8)
    for index, value in enumerate(cells):
        if value is not None:
            bits[index // 8] |= 0x80 >> (index % 8)
    values = b"".join(struct.pack("<q", 0 if value is None else value) for value in cells)
    header = json.dumps(names, separators=(",", ":")).encode()
    shuffled = b"".join(values[byte::8] for byte in range(8))
    return zlib.compress(
        bytes([VERSION]) + struct.pack("<I", len(header)) + header + bytes(bits) + shuffled
    )


def _unpacked(blob: bytes) -> dict[str, dict[str, Any]]:
    """What _packed packed."""
    data = zlib.decompress(blob)
    (length,) = struct.unpack_from("<I", data, 1)
    names = json.loads(data[5 : 5 + length])
    count = len(FIGURES) * len(names)
    bits = data[5 + length : 5 + length + (count + 7) // 8]
    shuffled = data[5 + length + (count + 7) // 8 :]
    values = bytes(shuffled[byte * count + index] for index in range(count) for byte in range(8))
    rows: dict[str, dict[str, Any]] = {name: {} for name in names}
    for index in range(count):
        figure, name = FIGURES[index // len(names)], names[index % len(names)]
        present = bits[index // 8] & (0x80 >> (index % 8))
        rows[name][figure] = struct.unpack_from("<q", values, index * 8)[0] if present else None
    return rows


def _spans(
    connection: sa.Connection, table: str, start: str
) -> Iterator[tuple[str, int, dict[str, dict[str, Any]]]]:
    """The rows of a table of a row per partition, a query and span at a time."""
    rows = connection.execute(
        sa.text(
            f"SELECT query_id, {start}, partition, {', '.join(ROW_FIGURES)} "
            f"FROM {table}_rows ORDER BY query_id, {start}, partition"
        ).execution_options(yield_per=10_000)
    )
    span: tuple[str, int] | None = None
    partitions: dict[str, dict[str, Any]] = {}
    for query_id, start_ms, partition, *figures in rows:
        if (query_id, start_ms) != span:
            if span is not None:
                yield (*span, partitions)
            span, partitions = (query_id, start_ms), {}
        partitions[partition] = dict(zip(ROW_FIGURES, figures, strict=True))
        partitions[partition]["delay_max_ms"] = None
    if span is not None:
        yield (*span, partitions)


def _set_aside(connection: sa.Connection, table: str) -> None:
    """Rename a table to `<table>_rows`, and on PostgreSQL its primary key (an index whose
    name the new table's key takes)."""
    op.rename_table(table, f"{table}_rows")
    if connection.dialect.name == "postgresql":
        op.execute(f"ALTER TABLE {table}_rows RENAME CONSTRAINT pk_{table} TO pk_{table}_rows")


def upgrade() -> None:
    connection = op.get_bind()
    started = shown = time.monotonic()
    for table, start in TABLES:
        _set_aside(connection, table)
        op.create_table(
            table,
            sa.Column("query_id", sa.String(36), nullable=False),
            sa.Column(start, sa.BigInteger(), nullable=False),
            sa.Column("figures", sa.LargeBinary(), nullable=False),
            sa.Column("histograms", sa.LargeBinary(), nullable=True),
            sa.PrimaryKeyConstraint("query_id", start, name=op.f(f"pk_{table}")),
        )
        insert = sa.text(f"INSERT INTO {table} (query_id, {start}, figures) VALUES (:q, :s, :f)")
        packed: list[dict[str, Any]] = []
        done = 0
        for query_id, start_ms, partitions in _spans(connection, table, start):
            packed.append({"q": query_id, "s": start_ms, "f": _packed(partitions)})
            if len(packed) >= INSERT_EVERY:
                connection.execute(insert, packed)
                done, packed = done + len(packed), []
            if time.monotonic() - shown >= PROGRESS_EVERY_S:
                shown = time.monotonic()
                print(
                    f"0025: packed {done:,} spans of {table} in {shown - started:.0f} s",
                    file=sys.stderr,
                )
        if packed:
            connection.execute(insert, packed)
        op.drop_table(f"{table}_rows")


def downgrade() -> None:
    connection = op.get_bind()
    for table, start in TABLES:
        spans = connection.execute(sa.text(f"SELECT query_id, {start}, figures FROM {table}"))
        rows = [
            {"query_id": query_id, start: start_ms, "partition": partition}
            | {name: figures[name] for name in ROW_FIGURES}
            for query_id, start_ms, blob in spans.all()
            for partition, figures in _unpacked(blob).items()
        ]
        op.drop_table(table)
        op.create_table(
            table,
            sa.Column("query_id", sa.String(36), nullable=False),
            sa.Column(start, sa.BigInteger(), nullable=False),
            sa.Column(
                "partition", sa.Text().with_variant(sa.String(255), "sqlite"), nullable=False
            ),
            *(
                sa.Column(
                    figure,
                    sa.Integer() if figure in COUNTS else sa.BigInteger(),
                    nullable=figure not in COUNTS,
                )
                for figure in ROW_FIGURES
            ),
            sa.PrimaryKeyConstraint("query_id", start, "partition", name=op.f(f"pk_{table}")),
        )
        if rows:
            connection.execute(sa.table(table, *map(sa.column, rows[0])).insert(), rows)
