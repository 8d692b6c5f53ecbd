"""Partition event times: what the instrumented operator measured per partition and batch.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 03:37:31.192352
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "partition_event_times",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("query_id", sa.String(length=36), nullable=False),
        sa.Column("batch_id", sa.BigInteger(), nullable=False),
        sa.Column("batch_time_ms", sa.BigInteger(), nullable=False),
        sa.Column("partition", sa.String(length=255), nullable=False),
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
    with op.batch_alter_table("partition_event_times", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_partition_event_times_query_id_partition_batch_time_ms"),
            ["query_id", "partition", "batch_time_ms"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("partition_event_times", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_partition_event_times_query_id_partition_batch_time_ms"))

    op.drop_table("partition_event_times")
