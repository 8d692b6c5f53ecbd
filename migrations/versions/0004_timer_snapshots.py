"""Timer snapshots: pending timers of a query, read from its checkpoint.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 04:29:11.179771
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "timer_snapshots",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("query_id", sa.String(length=36), nullable=False),
        sa.Column("taken_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("watermark_ms", sa.BigInteger(), nullable=True),
        sa.Column("pending", sa.BigInteger(), nullable=False),
        sa.Column("next_expiry_ms", sa.BigInteger(), nullable=True),
        sa.Column("due_within_ms", sa.BigInteger(), nullable=False),
        sa.Column("due", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["query_id"], ["queries.id"], name=op.f("fk_timer_snapshots_query_id_queries")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_timer_snapshots")),
    )
    with op.batch_alter_table("timer_snapshots", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_timer_snapshots_query_id_taken_at_ms"),
            ["query_id", "taken_at_ms"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("timer_snapshots", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_timer_snapshots_query_id_taken_at_ms"))

    op.drop_table("timer_snapshots")
