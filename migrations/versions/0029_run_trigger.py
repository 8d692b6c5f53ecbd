"""Each run's trigger: its kind (ProcessingTime, AvailableNow, Once, Continuous, …) and interval,
where the way in could read them from the running query (Spark's events do not carry them).

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-28 18:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("trigger", sa.String(32), nullable=True))
        batch_op.add_column(sa.Column("trigger_interval_ms", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("trigger_interval_ms")
        batch_op.drop_column("trigger")
