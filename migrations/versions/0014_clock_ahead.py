"""How far ahead of the store's clock the time a query's job last claimed was, so that a driver
whose clock runs ahead is shown and alerted on, not only kept from looking alive.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27 02:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("queries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("clock_ahead_ms", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("queries", schema=None) as batch_op:
        batch_op.drop_column("clock_ahead_ms")
