"""The batch in which each partition's max event time was first read (who drives the
watermark on a tie), and the running count of future-dated records (a Prometheus counter).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 16:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("partition_event_times", schema=None) as batch_op:
        batch_op.add_column(sa.Column("max_event_time_batch", sa.BigInteger(), nullable=True))
        batch_op.add_column(
            sa.Column(
                "future_records_total",
                sa.BigInteger(),
                server_default=sa.text("0"),
                nullable=False,
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("partition_event_times", schema=None) as batch_op:
        batch_op.drop_column("future_records_total")
        batch_op.drop_column("max_event_time_batch")
