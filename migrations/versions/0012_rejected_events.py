"""Events the write path refused, set aside to list and replay; what each sender had refused;
names and partitions of any length the write path lets in (PostgreSQL: text, not 255).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26 23:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (table, column, nullable) of the names and partitions that jobs give.
JOB_TEXT = (
    ("queries", "name", True),
    ("queries", "error_class", True),
    ("runs", "name", True),
    ("runs", "error_class", True),
    ("batches", "watermark_driver_partition", True),
    ("state_operators", "operator_name", True),
    ("partitions", "partition", False),
    ("partitions", "topic", True),
    ("partition_event_times", "partition", False),
    ("alerts", "partition", False),
    ("silences", "partition", True),
)


def _widen(to: sa.types.TypeEngine, from_: sa.types.TypeEngine) -> None:
    # SQLite never enforced the length: its tables keep their type, and are not rewritten.
    if op.get_bind().dialect.name == "sqlite":
        return
    for table, column, nullable in JOB_TEXT:
        op.alter_column(table, column, type_=to, existing_type=from_, existing_nullable=nullable)


def upgrade() -> None:
    _widen(sa.Text(), sa.String(255))
    op.create_table(
        "rejected_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("received_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("origin", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("document", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rejected_events")),
    )
    op.create_index(
        op.f("ix_rejected_events_received_at_ms"), "rejected_events", ["received_at_ms"]
    )
    with op.batch_alter_table("senders", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("rejected", sa.BigInteger(), server_default=sa.text("0"), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("senders", schema=None) as batch_op:
        batch_op.drop_column("rejected")
    op.drop_index(op.f("ix_rejected_events_received_at_ms"), table_name="rejected_events")
    op.drop_table("rejected_events")
    _widen(sa.String(255), sa.Text())
