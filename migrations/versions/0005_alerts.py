"""Alerts: alerts and their transitions, silences, and the evaluation lease.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 06:36:40.137741
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "leases",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("holder", sa.String(length=255), nullable=False),
        sa.Column("expires_at_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_leases")),
    )
    op.create_table(
        "silences",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("rule", sa.String(length=64), nullable=True),
        sa.Column("query_id", sa.String(length=36), nullable=True),
        sa.Column("partition", sa.String(length=255), nullable=True),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("until_ms", sa.BigInteger(), nullable=False),
        sa.Column("created_by", sa.String(length=255), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_silences")),
    )
    with op.batch_alter_table("silences", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_silences_until_ms"), ["until_ms"], unique=False)

    op.create_table(
        "alerts",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("rule", sa.String(length=64), nullable=False),
        sa.Column("query_id", sa.String(length=36), nullable=False),
        sa.Column("partition", sa.String(length=255), nullable=False),
        sa.Column("severity", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("active_since_ms", sa.BigInteger(), nullable=False),
        sa.Column("fired_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("resolved_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("acknowledged_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("acknowledged_by", sa.String(length=255), nullable=True),
        sa.ForeignKeyConstraint(
            ["query_id"], ["queries.id"], name=op.f("fk_alerts_query_id_queries")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alerts")),
    )
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_alerts_query_id_active_since_ms"),
            ["query_id", "active_since_ms"],
            unique=False,
        )
        batch_op.create_index(batch_op.f("ix_alerts_state"), ["state"], unique=False)
        batch_op.create_index(
            "uq_alerts_live_subject",
            ["rule", "query_id", "partition"],
            unique=True,
            sqlite_where=sa.text("state IN ('pending', 'firing')"),
            postgresql_where=sa.text("state IN ('pending', 'firing')"),
        )

    op.create_table(
        "alert_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("alert_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("transition", sa.String(length=16), nullable=False),
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["alert_id"], ["alerts.id"], name=op.f("fk_alert_events_alert_id_alerts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_events")),
    )
    with op.batch_alter_table("alert_events", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_alert_events_alert_id_at_ms"), ["alert_id", "at_ms"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_alert_events_at_ms"), ["at_ms"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("alert_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alert_events_at_ms"))
        batch_op.drop_index(batch_op.f("ix_alert_events_alert_id_at_ms"))

    op.drop_table("alert_events")
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_alerts_live_subject",
            sqlite_where=sa.text("state IN ('pending', 'firing')"),
            postgresql_where=sa.text("state IN ('pending', 'firing')"),
        )
        batch_op.drop_index(batch_op.f("ix_alerts_state"))
        batch_op.drop_index(batch_op.f("ix_alerts_query_id_active_since_ms"))

    op.drop_table("alerts")
    with op.batch_alter_table("silences", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_silences_until_ms"))

    op.drop_table("silences")
    op.drop_table("leases")
