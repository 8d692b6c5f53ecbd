"""The monitor's own health: when each batch was stored, when a leased job last finished.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 23:45:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("batches", schema=None) as batch_op:
        batch_op.add_column(sa.Column("stored_at_ms", sa.BigInteger(), nullable=True))
    with op.batch_alter_table("leases", schema=None) as batch_op:
        batch_op.add_column(sa.Column("done_at_ms", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("leases", schema=None) as batch_op:
        batch_op.drop_column("done_at_ms")
    with op.batch_alter_table("batches", schema=None) as batch_op:
        batch_op.drop_column("stored_at_ms")
