"""Ways in: how far each event log file is read, and the collector's senders.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 13:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "log_positions",
        sa.Column("key", sa.String(length=1024), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("app_id", sa.String(length=255), nullable=False),
        sa.Column("bytes_read", sa.BigInteger(), nullable=False),
        sa.Column("lines_read", sa.BigInteger(), nullable=False),
        sa.Column("clock_ms", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_log_positions")),
    )
    with op.batch_alter_table("log_positions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_log_positions_app_id"), ["app_id"], unique=False)

    op.create_table(
        "senders",
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("first_seen_ms", sa.BigInteger(), nullable=False),
        sa.Column("last_seen_ms", sa.BigInteger(), nullable=False),
        sa.Column("events", sa.BigInteger(), nullable=False),
        sa.Column("dropped", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_senders")),
    )


def downgrade() -> None:
    op.drop_table("senders")
    with op.batch_alter_table("log_positions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_log_positions_app_id"))
    op.drop_table("log_positions")
