"""Per-hour rollups of every query's partitions, folded from the per-minute ones.

`partition_hours` holds what `partition_minutes` holds, an hour a row, so that ranges of days
are read from 24 rows a day per partition rather than 1,440 (store.minutes keeps both). The
minutes already stored are folded here.

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28 00:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# A sum that saturates at 64 bits, None over no values, as the write path folds.
SATURATED_SUM = {
    "sqlite": "CASE WHEN count({0}) = 0 THEN NULL ELSE "
    "CAST(min(max(total({0}), -9.2e18), 9.2e18) AS INTEGER) END",
    "postgresql": "LEAST(GREATEST(sum({0}), -9223372036854775808), 9223372036854775807)",
}
SUMMED = ("batches", "records", "offset_records", "late_records", "future_records")
FOLD_UP = """
    INSERT INTO partition_hours (
        query_id, hour_ms, partition, batches, records, offset_records, late_records,
        future_records, max_event_time_ms, watermark_min_ms, watermark_max_ms, time_lag_max_ms,
        offset_lag_max, idle_batches, stalled_batches, rewound_batches
    )
    SELECT query_id, minute_ms - minute_ms % 3600000, partition, {batches}, {records},
        {offset_records}, {late_records}, {future_records}, max(max_event_time_ms),
        min(watermark_min_ms), max(watermark_max_ms), max(time_lag_max_ms), max(offset_lag_max),
        sum(idle_batches), sum(stalled_batches), sum(rewound_batches)
    FROM partition_minutes
    GROUP BY query_id, minute_ms - minute_ms % 3600000, partition
"""


def upgrade() -> None:
    op.create_table(
        "partition_hours",
        sa.Column("query_id", sa.String(36), nullable=False),
        sa.Column("hour_ms", sa.BigInteger(), nullable=False),
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
            "query_id", "hour_ms", "partition", name=op.f("pk_partition_hours")
        ),
    )
    connection = op.get_bind()
    summed = SATURATED_SUM[connection.dialect.name]
    connection.execute(sa.text(FOLD_UP.format(**{name: summed.format(name) for name in SUMMED})))


def downgrade() -> None:
    op.drop_table("partition_hours")
