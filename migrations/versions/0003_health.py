"""Health: idle, stalled and rewound partitions; watermark skew, Flink watermark, time lag.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 03:42:10.657903
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("batches", schema=None) as batch_op:
        batch_op.add_column(sa.Column("watermark_advanced_at_ms", sa.BigInteger(), nullable=True))
        batch_op.add_column(
            sa.Column("watermark_stalled", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch_op.add_column(
            sa.Column("watermark_rewound", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch_op.add_column(sa.Column("watermark_skew_ms", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("flink_watermark_ms", sa.BigInteger(), nullable=True))

    with op.batch_alter_table("partition_event_times", schema=None) as batch_op:
        batch_op.add_column(sa.Column("time_lag_ms", sa.BigInteger(), nullable=True))

    with op.batch_alter_table("partitions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("last_arrival_ms", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("last_advance_ms", sa.BigInteger(), nullable=True))
        batch_op.add_column(
            sa.Column("idle", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch_op.add_column(
            sa.Column("stalled", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch_op.add_column(
            sa.Column("rewound", sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("partitions", schema=None) as batch_op:
        batch_op.drop_column("rewound")
        batch_op.drop_column("stalled")
        batch_op.drop_column("idle")
        batch_op.drop_column("last_advance_ms")
        batch_op.drop_column("last_arrival_ms")

    with op.batch_alter_table("partition_event_times", schema=None) as batch_op:
        batch_op.drop_column("time_lag_ms")

    with op.batch_alter_table("batches", schema=None) as batch_op:
        batch_op.drop_column("flink_watermark_ms")
        batch_op.drop_column("watermark_skew_ms")
        batch_op.drop_column("watermark_rewound")
        batch_op.drop_column("watermark_stalled")
        batch_op.drop_column("watermark_advanced_at_ms")
