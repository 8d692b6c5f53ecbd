"""Which silences are in force, and which alerts they cover.

Used by the outbox, to hold back firing notifications, and by the dashboard, to show what is
silenced; web/static/js/alerts.js matches alerts to silences the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.schema.models import AlertRow, Silence


def active_silences(session: so.Session, now_ms: int) -> Sequence[Silence]:
    """The silences in force at `now_ms`, oldest first."""
    return session.scalars(
        sa.select(Silence).where(Silence.until_ms > now_ms).order_by(Silence.id)
    ).all()


def silenced(alert: AlertRow, silence: Silence) -> bool:
    """Whether `silence` covers `alert`: its rule and query, when set, are the alert's, and its
    partition, when set, is every partition the alert covers (a silence of one partition does
    not hide the others, nor the query's own alerts)."""
    partition = silence.partition
    return (
        silence.rule in (None, alert.rule)
        and silence.query_id in (None, alert.query_id)
        and (partition is None or bool(alert.partitions) and set(alert.partitions) == {partition})
    )
