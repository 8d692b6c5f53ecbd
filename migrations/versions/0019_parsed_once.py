"""What is parsed is not stored again as the JSON it came in: the batches' raw observed metrics
(parsed into partition_event_times) and the sources' raw offsets (parsed into partitions).

They were written and never read: 8.3 KB and 4.2 KB of every instrumented 64-partition batch
on SQLite, 2.3 KB and 2.2 KB on PostgreSQL (`python -m benchmarks --storage`). A SQLite file
keeps the pages they took until `VACUUM`; new batches reuse them.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27 21:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OFFSETS = ("start_offset", "end_offset", "latest_offset")


def upgrade() -> None:
    with op.batch_alter_table("batches", schema=None) as batch_op:
        batch_op.drop_column("observed_metrics")
    with op.batch_alter_table("sources", schema=None) as batch_op:
        for column in OFFSETS:
            batch_op.drop_column(column)


def downgrade() -> None:
    # What was dropped cannot come back: older releases read the columns empty.
    with op.batch_alter_table("sources", schema=None) as batch_op:
        for column in OFFSETS:
            batch_op.add_column(sa.Column(column, sa.Text(), nullable=True))
    with op.batch_alter_table("batches", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("observed_metrics", sa.JSON(), nullable=False, server_default="{}")
        )
