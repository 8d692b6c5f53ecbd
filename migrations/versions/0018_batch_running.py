"""The batch a query's driver says is in flight, and since when: a long batch is not silence.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27 18:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("queries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("running_batch_id", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("running_since_ms", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("queries", schema=None) as batch_op:
        batch_op.drop_column("running_since_ms")
        batch_op.drop_column("running_batch_id")
