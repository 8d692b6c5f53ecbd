"""One alert per rule and query, the partitions it covers listed inside it; when a firing alert
last held (it stays `keep_firing_for` after); the rule whose alert explains it (`caused_by`).

A live alert about one partition cannot become part of a grouped one: the upgrade resolves each
(cancels a pending one) at the time it runs, with an event that says why, and queues the
resolved notification for every receiver its firing was queued for, as the evaluator would.
The next evaluation raises the alert per query again. Stored history keeps its partition, as a
list of one.

Downgrade keeps the first partition of an alert over several.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27 17:00:00.000000
"""

import time
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LIVE = sa.text("state IN ('pending', 'firing')")
REPLACED = "replaced by one alert per query and rule, the partitions listed inside it"

alerts = sa.table(
    "alerts",
    sa.column("id", sa.BigInteger),
    sa.column("partition", sa.Text),
    sa.column("partitions", sa.JSON),
    sa.column("state", sa.String),
    sa.column("value", sa.Float),
    sa.column("active_since_ms", sa.BigInteger),
    sa.column("fired_at_ms", sa.BigInteger),
    sa.column("resolved_at_ms", sa.BigInteger),
    sa.column("held_at_ms", sa.BigInteger),
)
events = sa.table(
    "alert_events",
    sa.column("id", sa.BigInteger),
    sa.column("alert_id", sa.BigInteger),
    sa.column("transition", sa.String),
    sa.column("at_ms", sa.BigInteger),
    sa.column("value", sa.Float),
    sa.column("message", sa.Text),
)
deliveries = sa.table(
    "deliveries",
    sa.column("alert_event_id", sa.BigInteger),
    sa.column("receiver", sa.String),
    sa.column("created_at_ms", sa.BigInteger),
    sa.column("attempts", sa.Integer),
    sa.column("next_attempt_at_ms", sa.BigInteger),
)


def upgrade() -> None:
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("partitions", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("held_at_ms", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("caused_by", sa.String(length=64), nullable=True))
    connection = op.get_bind()
    _end_partition_alerts(connection, int(time.time() * 1000))
    connection.execute(alerts.update().where(alerts.c.partition == "").values(partitions=[]))
    named = connection.execute(
        sa.select(alerts.c.id, alerts.c.partition).where(alerts.c.partition != "")
    ).all()
    if named:
        connection.execute(
            alerts.update()
            .where(alerts.c.id == sa.bindparam("row_id"))
            .values(partitions=sa.bindparam("named", type_=sa.JSON)),
            [{"row_id": row_id, "named": [partition]} for row_id, partition in named],
        )
    held = sa.func.coalesce(alerts.c.resolved_at_ms, alerts.c.fired_at_ms, alerts.c.active_since_ms)
    connection.execute(alerts.update().values(held_at_ms=held))
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_index("uq_alerts_live_subject")
        batch_op.drop_column("partition")
        batch_op.alter_column("partitions", existing_type=sa.JSON(), nullable=False)
        batch_op.alter_column("held_at_ms", existing_type=sa.BigInteger(), nullable=False)
        batch_op.create_index(
            "uq_alerts_live",
            ["rule", "query_id"],
            unique=True,
            sqlite_where=LIVE,
            postgresql_where=LIVE,
        )


def _end_partition_alerts(connection: sa.Connection, now_ms: int) -> None:
    """Resolve each live alert about one partition (cancel a pending one), recorded as an event,
    its resolved notification queued to the receivers its firing was."""
    live = connection.execute(
        sa.select(alerts.c.id, alerts.c.state, alerts.c.value)
        .where(alerts.c.partition != "", LIVE)
        .order_by(alerts.c.id)
    ).all()
    for row_id, state, value in live:
        ended = "resolved" if state == "firing" else "cancelled"
        connection.execute(
            alerts.update().where(alerts.c.id == row_id).values(state=ended, resolved_at_ms=now_ms)
        )
        event_id = connection.execute(
            events.insert()
            .values(alert_id=row_id, transition=ended, at_ms=now_ms, value=value, message=REPLACED)
            .returning(events.c.id)
        ).scalar_one()
        if ended == "resolved":
            fired = sa.select(events.c.id).where(
                events.c.alert_id == row_id, events.c.transition == "firing"
            )
            told = (
                sa.select(deliveries.c.receiver)
                .where(deliveries.c.alert_event_id.in_(fired.scalar_subquery()))
                .distinct()
            )
            for (receiver,) in connection.execute(told).all():
                connection.execute(
                    deliveries.insert().values(
                        alert_event_id=event_id,
                        receiver=receiver,
                        created_at_ms=now_ms,
                        attempts=0,
                        next_attempt_at_ms=now_ms,
                    )
                )


def downgrade() -> None:
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "partition",
                sa.Text().with_variant(sa.String(length=255), "sqlite"),
                nullable=True,
            )
        )
    connection = op.get_bind()
    rows = connection.execute(sa.select(alerts.c.id, alerts.c.partitions)).all()
    for row_id, named in rows:
        first = named[0] if named else ""
        connection.execute(alerts.update().where(alerts.c.id == row_id).values(partition=first))
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_index("uq_alerts_live")
        batch_op.drop_column("caused_by")
        batch_op.drop_column("held_at_ms")
        batch_op.drop_column("partitions")
        batch_op.alter_column("partition", existing_type=sa.Text(), nullable=False)
        batch_op.create_index(
            "uq_alerts_live_subject",
            ["rule", "query_id", "partition"],
            unique=True,
            sqlite_where=LIVE,
            postgresql_where=LIVE,
        )
