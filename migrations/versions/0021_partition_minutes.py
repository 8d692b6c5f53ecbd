"""Per-minute rollups of every query's partitions, filled from the batches the store holds.

`partition_minutes` keeps, per query, minute and partition, what the minute's batches showed:
sums of records, late and future-dated records, the largest M_p, W_p's range, the largest time
and offset lag, and how many batches found the partition idle, stalled or rewound. Ranges of
hours are read from it (a day from a row a minute, with every stall in it); the write path
keeps it as batches arrive (store.minutes). The rows already stored are rolled up here, one
query at a time, with a line on stderr every few seconds on a large store.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-27 23:30:00.000000
"""

import sys
import time
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PROGRESS_EVERY_S = 5.0

# A sum that saturates at 64 bits, None over no values, as store.schema.whole_sum reads and the
# write path folds: SQLite's sum() fails past 2^63, and PostgreSQL's numeric sum would not fit.
SATURATED_SUM = {
    "sqlite": "CASE WHEN count({0}) = 0 THEN NULL ELSE "
    "CAST(min(max(total({0}), -9.2e18), 9.2e18) AS INTEGER) END",
    "postgresql": "LEAST(GREATEST(sum({0}), -9223372036854775808), 9223372036854775807)",
}

# Each batch's partition rows (event times, then offsets) as one shape, grouped by minute.
ROLL_UP = """
    INSERT INTO partition_minutes (
        query_id, minute_ms, partition, batches, records, offset_records, late_records,
        future_records, max_event_time_ms, watermark_min_ms, watermark_max_ms, time_lag_max_ms,
        offset_lag_max, idle_batches, stalled_batches, rewound_batches
    )
    SELECT :query_id, minute_ms, partition, count(DISTINCT batch_id), {records},
        {offset_records}, {late_records}, {future_records}, max(max_event_time_ms),
        min(partition_watermark_ms), max(partition_watermark_ms), max(time_lag_ms),
        max(offset_lag), sum(idle), sum(stalled), sum(rewound)
    FROM (
        SELECT batch_time_ms - batch_time_ms % 60000 AS minute_ms, partition, batch_id,
            records, NULL AS offset_records, late_records, future_records, max_event_time_ms,
            partition_watermark_ms, time_lag_ms, NULL AS offset_lag, 0 AS idle, 0 AS stalled,
            0 AS rewound
        FROM partition_event_times WHERE query_id = :query_id
        UNION ALL
        SELECT batch_time_ms - batch_time_ms % 60000, partition, batch_id, NULL,
            CAST(end_offset AS NUMERIC) - start_offset, NULL, NULL, NULL, NULL, NULL, offset_lag,
            CASE WHEN idle THEN 1 ELSE 0 END, CASE WHEN stalled THEN 1 ELSE 0 END,
            CASE WHEN rewound THEN 1 ELSE 0 END
        FROM partitions WHERE query_id = :query_id
    ) AS batch_partitions
    GROUP BY minute_ms, partition
"""
SUMMED = ("records", "offset_records", "late_records", "future_records")


def upgrade() -> None:
    op.create_table(
        "partition_minutes",
        sa.Column("query_id", sa.String(36), nullable=False),
        sa.Column("minute_ms", sa.BigInteger(), nullable=False),
        sa.Column("partition", sa.Text().with_variant(sa.String(255), "sqlite"), nullable=False),
        sa.Column("batches", sa.Integer(), nullable=False),
        sa.Column("records", sa.BigInteger(), nullable=True),
        sa.Column("offset_records", sa.BigInteger(), nullable=True),
        sa.Column("late_records", sa.BigInteger(), nullable=True),
        sa.Column("future_records", sa.BigInteger(), nullable=True),
        sa.Column("max_event_time_ms", sa.BigInteger(), nullable=True),
        sa.Column("watermark_min_ms", sa.BigInteger(), nullable=True),
        sa.Column("watermark_max_ms", sa.BigInteger(), nullable=True),
        sa.Column("time_lag_max_ms", sa.BigInteger(), nullable=True),
        sa.Column("offset_lag_max", sa.BigInteger(), nullable=True),
        sa.Column("idle_batches", sa.Integer(), nullable=False),
        sa.Column("stalled_batches", sa.Integer(), nullable=False),
        sa.Column("rewound_batches", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint(
            "query_id", "minute_ms", "partition", name=op.f("pk_partition_minutes")
        ),
    )
    connection = op.get_bind()
    summed = SATURATED_SUM[connection.dialect.name]
    roll_up = sa.text(ROLL_UP.format(**{name: summed.format(name) for name in SUMMED}))
    query_ids = connection.scalars(sa.text("SELECT id FROM queries ORDER BY id")).all()
    started = shown = time.monotonic()
    for number, query_id in enumerate(query_ids, 1):
        connection.execute(roll_up, {"query_id": query_id})
        if time.monotonic() - shown >= PROGRESS_EVERY_S:
            shown = time.monotonic()
            print(
                f"0021: rolled up the minutes of {number:,} of {len(query_ids):,} queries "
                f"in {shown - started:.0f} s",
                file=sys.stderr,
            )


def downgrade() -> None:
    op.drop_table("partition_minutes")
