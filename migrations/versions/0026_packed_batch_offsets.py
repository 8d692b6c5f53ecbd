"""A batch's source partitions packed into one row: `partitions` becomes `batch_offsets`.

`partitions` held a row per source partition per batch, with its header, the query id, the
partition's name and two indexes' entries: about 300 bytes a partition on PostgreSQL, 20 KB a
64-partition batch. `batch_offsets` holds one row per batch whose `partitions` value packs
every partition's offsets, arrival and advance times and flags (store.packing's layout of
rows, version 1, written out again here so that this migration reads and writes it as it
was), with the partitions' summed offset lag and whether any was rewound. A partition's offset
lag is no longer stored: it is its latest offset less its end offset. The rows stored are
packed here a batch at a time, with a line on stderr every few seconds on a large store; a
downgrade unpacks them.

Revision ID: 0026
Revises: 0025
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

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PROGRESS_EVERY_S = 5.0
VERSION = 1
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
INSERT_EVERY = 500
JobText = sa.Text().with_variant(sa.String(255), "sqlite")


def _packed(rows: list[dict[str, Any]]) -> bytes:
    """Partition rows in their order as one value: version, the texts of each row as JSON,
    bits of the numbers present (the first number's first row in the highest bit), the
    numbers byte-shuffled."""
    cells = [row[number] for number in NUMBERS for row in rows]
    bits = bytearray((len(cells) + 7) // 8)
    for index, value in enumerate(cells):
        if value is not None:
            bits[index // 8] |= 0x80 >> (index % 8)
    values = b"".join(struct.pack("<q", 0 if value is None else int(value)) for value in cells)
    header = json.dumps([[row[text] for text in TEXTS] for row in rows], separators=(",", ":"))
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
    texts = json.loads(data[5 : 5 + length])
    count = len(NUMBERS) * len(texts)
    bits = data[5 + length : 5 + length + (count + 7) // 8]
    shuffled = data[5 + length + (count + 7) // 8 :]
    values = bytes(shuffled[byte * count + index] for index in range(count) for byte in range(8))
    rows: list[dict[str, Any]] = [dict(zip(TEXTS, cells, strict=True)) for cells in texts]
    for index in range(count):
        number, row = NUMBERS[index // len(texts)], rows[index % len(texts)]
        present = bits[index // 8] & (0x80 >> (index % 8))
        row[number] = struct.unpack_from("<q", values, index * 8)[0] if present else None
    for row in rows:
        for flag in FLAGS:
            row[flag] = bool(row[flag])
    return rows


def _batches(connection: sa.Connection) -> Iterator[tuple[str, int, int, list[dict[str, Any]]]]:
    """The rows of `partitions`, a batch at a time, in source and storage order."""
    rows = connection.execute(
        sa.text(
            f"SELECT query_id, batch_id, batch_time_ms, {', '.join(TEXTS + NUMBERS)}, offset_lag "
            "FROM partitions ORDER BY query_id, batch_id, source_index, id"
        ).execution_options(yield_per=10_000)
    )
    batch: tuple[str, int, int] | None = None
    partitions: list[dict[str, Any]] = []
    for query_id, batch_id, batch_time_ms, *cells in rows:
        if batch is None or (query_id, batch_id) != batch[:2]:
            if batch is not None:
                yield (*batch, partitions)
            batch, partitions = (query_id, batch_id, batch_time_ms), []
        partitions.append(dict(zip((*TEXTS, *NUMBERS, "offset_lag"), cells, strict=True)))
    if batch is not None:
        yield (*batch, partitions)


def _batch_row(query_id: str, batch_id: int, time_ms: int, rows: list[dict[str, Any]]) -> dict:
    lags = [row["offset_lag"] for row in rows if row["offset_lag"] is not None]
    return {
        "query_id": query_id,
        "batch_id": batch_id,
        "batch_time_ms": time_ms,
        "partitions": _packed(rows),
        "offset_lag": sum(lags) if lags else None,
        "rewound": any(row["rewound"] for row in rows),
    }


def upgrade() -> None:
    connection = op.get_bind()
    table = op.create_table(
        "batch_offsets",
        sa.Column("query_id", sa.String(36), nullable=False),
        sa.Column("batch_id", sa.BigInteger(), nullable=False),
        sa.Column("batch_time_ms", sa.BigInteger(), nullable=False),
        sa.Column("partitions", sa.LargeBinary(), nullable=False),
        sa.Column("offset_lag", sa.BigInteger(), nullable=True),
        sa.Column("rewound", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["query_id"], ["queries.id"], name=op.f("fk_batch_offsets_query_id_queries")
        ),
        sa.PrimaryKeyConstraint("query_id", "batch_id", name=op.f("pk_batch_offsets")),
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
                f"0026: packed {done:,} batches' partitions in {shown - started:.0f} s",
                file=sys.stderr,
            )
    if packed:
        connection.execute(table.insert(), packed)
    op.drop_table("partitions")


def downgrade() -> None:
    connection = op.get_bind()
    table = op.create_table(
        "partitions",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("query_id", sa.String(36), nullable=False),
        sa.Column("batch_id", sa.BigInteger(), nullable=False),
        sa.Column("batch_time_ms", sa.BigInteger(), nullable=False),
        sa.Column("source_index", sa.Integer(), nullable=False),
        sa.Column("partition", JobText, nullable=False),
        sa.Column("topic", JobText, nullable=True),
        sa.Column("start_offset", sa.BigInteger(), nullable=True),
        sa.Column("end_offset", sa.BigInteger(), nullable=True),
        sa.Column("latest_offset", sa.BigInteger(), nullable=True),
        sa.Column("offset_lag", sa.BigInteger(), nullable=True),
        sa.Column("last_arrival_ms", sa.BigInteger(), nullable=True),
        sa.Column("last_advance_ms", sa.BigInteger(), nullable=True),
        *(
            sa.Column(flag, sa.Boolean(), server_default=sa.false(), nullable=False)
            for flag in FLAGS
        ),
        sa.ForeignKeyConstraint(
            ["query_id"], ["queries.id"], name=op.f("fk_partitions_query_id_queries")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_partitions")),
        sa.UniqueConstraint(
            "query_id",
            "batch_id",
            "source_index",
            "partition",
            name=op.f("uq_partitions_query_id_batch_id_source_index_partition"),
        ),
    )
    op.create_index(
        op.f("ix_partitions_query_id_batch_time_ms"), "partitions", ["query_id", "batch_time_ms"]
    )
    batches = connection.execute(
        sa.text(
            "SELECT query_id, batch_id, batch_time_ms, partitions FROM batch_offsets "
            "ORDER BY query_id, batch_id"
        )
    )
    rows = []
    for query_id, batch_id, batch_time_ms, blob in batches.all():
        for row in _unpacked(blob):
            end, latest = row["end_offset"], row["latest_offset"]
            lag = None if end is None or latest is None else max(latest - end, 0)
            rows.append(
                row
                | {"query_id": query_id, "batch_id": batch_id, "batch_time_ms": batch_time_ms}
                | {"offset_lag": lag}
            )
        if len(rows) >= INSERT_EVERY:
            connection.execute(table.insert(), rows)
            rows = []
    if rows:
        connection.execute(table.insert(), rows)
    op.drop_table("batch_offsets")
