"""Diagnosis: the record that drives the watermark, future-dated records, lateness histograms.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 13:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("batches", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("watermark_driver_partition", sa.String(length=255), nullable=True)
        )
        batch_op.add_column(sa.Column("watermark_driver_record", sa.JSON(), nullable=True))
    with op.batch_alter_table("partition_event_times", schema=None) as batch_op:
        batch_op.add_column(sa.Column("max_event_time_record", sa.JSON(), nullable=True))
        batch_op.add_column(
            sa.Column(
                "future_records", sa.BigInteger(), server_default=sa.text("0"), nullable=False
            )
        )
        batch_op.add_column(sa.Column("future_lead_ms", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("future_samples", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("late_buckets", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("slack_buckets", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("late_buckets_total", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("slack_buckets_total", sa.JSON(), nullable=True))
    op.create_index(
        "ix_partition_event_times_future",
        "partition_event_times",
        ["query_id", "batch_time_ms"],
        unique=False,
        sqlite_where=sa.text("future_records > 0"),
        postgresql_where=sa.text("future_records > 0"),
    )


def downgrade() -> None:
    op.drop_index("ix_partition_event_times_future", table_name="partition_event_times")
    with op.batch_alter_table("partition_event_times", schema=None) as batch_op:
        for column in (
            "slack_buckets_total",
            "late_buckets_total",
            "slack_buckets",
            "late_buckets",
            "future_samples",
            "future_lead_ms",
            "future_records",
            "max_event_time_record",
        ):
            batch_op.drop_column(column)
    with op.batch_alter_table("batches", schema=None) as batch_op:
        batch_op.drop_column("watermark_driver_record")
        batch_op.drop_column("watermark_driver_partition")
