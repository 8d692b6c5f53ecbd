"""Which silences are in force, and which alerts they cover.

Used by the outbox, to hold back firing notifications, and by the dashboard, to show what is
silenced; web/static/js/alerts.js matches alerts to silences the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.models import AlertRow, Silence


def active_silences(session: so.Session, now_ms: int) -> Sequence[Silence]:
    """The silences in force at `now_ms`, oldest first."""
    return session.scalars(
        sa.select(Silence).where(Silence.until_ms > now_ms).order_by(Silence.id)
    ).all()


def silenced(alert: AlertRow, silence: Silence) -> bool:
    """Whether `silence` covers `alert`: each of its rule, query and partition, when set."""
    return all(
        wanted is None or wanted == actual
        for wanted, actual in (
            (silence.rule, alert.rule),
            (silence.query_id, alert.query_id),
            (silence.partition, alert.partition),
        )
    )
