"""How far a job's clock is behind when its events arrive: a live way in (a listener, the
collector) judges a query's liveness by when its events arrive, and keeps how far behind that
the time the job claimed was, to be shown and alerted on (`clock_behind`).

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-07 03:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0032"
down_revision: str | None = "0031"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("queries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("clock_behind_ms", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("queries", schema=None) as batch_op:
        batch_op.drop_column("clock_behind_ms")
