"""The query a pipeline flow's reset replaced: a full refresh starts the flow from a new
checkpoint, which Spark gives a new query id; the new query names the one before it.

Revision ID: 0030
Revises: 0029
Create Date: 2026-11-28 21:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("queries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("replaces_id", sa.String(36), nullable=True))
        batch_op.create_index("ix_queries_replaces_id", ["replaces_id"])


def downgrade() -> None:
    with op.batch_alter_table("queries", schema=None) as batch_op:
        batch_op.drop_index("ix_queries_replaces_id")
        batch_op.drop_column("replaces_id")
