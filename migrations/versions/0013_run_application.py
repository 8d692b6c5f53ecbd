"""The Spark application whose event log a run was read from, so that a run still running when
its application ends is ended by any later `wmon ingest`, not only the one that saw it start.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26 23:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("app_id", sa.String(length=255), nullable=True))
        batch_op.create_index(batch_op.f("ix_runs_app_id"), ["app_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_app_id"))
        batch_op.drop_column("app_id")
