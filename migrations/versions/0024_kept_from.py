"""Since when each query's batches and per-minute rollups are all still stored.

Each tier is kept for its own retention (store.prune): a prune that deletes some of a query's
batches or minutes notes its cutoff on the query, so that reads of older ranges use a coarser
tier and rolling minutes up again never starts where batches are gone.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-28 03:50:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("queries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("batches_kept_from_ms", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("minutes_kept_from_ms", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("queries", schema=None) as batch_op:
        batch_op.drop_column("minutes_kept_from_ms")
        batch_op.drop_column("batches_kept_from_ms")
