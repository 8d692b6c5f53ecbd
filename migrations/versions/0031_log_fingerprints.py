"""`wmon ingest` knows each event log file by its content: the stored bytes it read and a digest
of their two ends, kept with its position, so that a log rewritten or replaced under the same
name is read again from its start (monitor/ingest/fingerprint.py). Positions stored before have
none: their file is read from its start, skipping to the position, and gets one when next saved.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-02 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("log_positions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("fingerprint_bytes", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("fingerprint", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("log_positions", schema=None) as batch_op:
        batch_op.drop_column("fingerprint")
        batch_op.drop_column("fingerprint_bytes")
