"""Spark's "no watermark yet" is stored as no watermark (NULL), as the write path now keeps it,
not as the 0 (1970) Spark reports: nothing that reads the store knows that placeholder.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27 02:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute(sa.text("UPDATE batches SET watermark_ms = NULL WHERE watermark_ms = 0"))


def downgrade() -> None:
    op.execute(sa.text("UPDATE batches SET watermark_ms = 0 WHERE watermark_ms IS NULL"))
