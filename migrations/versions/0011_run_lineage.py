"""Where each run stands in its query's lineage: when it began, when the store first heard of
it, and the first and last batch ids stored from it, so that a late, repeated or superseded
batch is told apart from a restart without reading the query's whole history.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26 22:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("began_at_ms", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("first_stored_ms", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("first_batch_id", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("last_batch_id", sa.BigInteger(), nullable=True))
    # Runs stored before: their span from their stored batches, and when they began from
    # their start, or else their first batch.
    op.execute(
        """
        UPDATE runs SET
            first_batch_id = (SELECT min(b.batch_id) FROM batches b WHERE b.run_id = runs.run_id),
            last_batch_id = (SELECT max(b.batch_id) FROM batches b WHERE b.run_id = runs.run_id),
            began_at_ms = coalesce(
                started_at_ms,
                (SELECT min(b.batch_time_ms) FROM batches b WHERE b.run_id = runs.run_id)
            ),
            first_stored_ms = (
                SELECT min(b.stored_at_ms) FROM batches b WHERE b.run_id = runs.run_id
            )
        """
    )


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("last_batch_id")
        batch_op.drop_column("first_batch_id")
        batch_op.drop_column("first_stored_ms")
        batch_op.drop_column("began_at_ms")
