"""What notifying reads: the firing alerts and who was told of them, for the outbox; a
receiver's deliveries with what they are about, for the sender."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.schema.models import AlertEvent, AlertRow, Delivery, DeliveryAttempt, Query


def firing_alerts(session: so.Session) -> Sequence[Any]:
    """(alert, its firing event) of each firing alert that no other alert causes, in the order
    the events were stored."""
    return session.execute(
        sa.select(AlertRow, AlertEvent)
        .join(AlertEvent, AlertEvent.alert_id == AlertRow.id)
        .where(
            AlertRow.state == "firing",
            AlertRow.caused_by.is_(None),
            AlertEvent.transition == "firing",
        )
        .order_by(AlertEvent.id)
    ).all()


def firing_events(session: so.Session, alert_ids: Sequence[int]) -> dict[int, int]:
    """By alert id, the id of the alert's firing event, for those of `alert_ids` that fired."""
    rows = session.execute(
        sa.select(AlertEvent.alert_id, AlertEvent.id).where(
            AlertEvent.alert_id.in_(alert_ids), AlertEvent.transition == "firing"
        )
    )
    return {alert_id: event_id for alert_id, event_id in rows}


def receivers_of(session: so.Session, event_ids: Sequence[int]) -> set[tuple[int, str]]:
    """(event id, receiver) of every delivery queued of these events."""
    if not event_ids:
        return set()
    rows = session.execute(
        sa.select(Delivery.alert_event_id, Delivery.receiver).where(
            Delivery.alert_event_id.in_(event_ids)
        )
    )
    return {(event_id, receiver) for event_id, receiver in rows}


def undelivered(session: so.Session, receiver: str, limit: int) -> Sequence[Any]:
    """A receiver's first `limit` deliveries neither delivered nor given up, oldest first,
    with what they are about."""
    return _deliveries(
        session,
        receiver,
        limit,
        Delivery.delivered_at_ms.is_(None),
        Delivery.abandoned_at_ms.is_(None),
    )


def delivered_firing(
    session: so.Session, receiver: str, sent_by_ms: int, limit: int
) -> Sequence[Any]:
    """A receiver's first `limit` delivered firing notifications of alerts that still fire,
    last sent at or before `sent_by_ms`, oldest first, with what they are about."""
    last_sent = (
        sa.select(sa.func.max(DeliveryAttempt.at_ms))
        .where(DeliveryAttempt.delivery_id == Delivery.id)
        .scalar_subquery()
    )
    return _deliveries(
        session,
        receiver,
        limit,
        Delivery.delivered_at_ms.is_not(None),
        AlertEvent.transition == "firing",
        AlertRow.state == "firing",
        last_sent <= sent_by_ms,
    )


def _deliveries(session: so.Session, receiver: str, limit: int, *where: Any) -> Sequence[Any]:
    """The first `limit` of a receiver's deliveries that meet `where`, oldest first, each with
    its alert event, alert and query."""
    return session.execute(
        sa.select(Delivery, AlertEvent, AlertRow, Query)
        .join(AlertEvent, AlertEvent.id == Delivery.alert_event_id)
        .join(AlertRow, AlertRow.id == AlertEvent.alert_id)
        .join(Query, Query.id == AlertRow.query_id)
        .where(Delivery.receiver == receiver, *where)
        .order_by(Delivery.id)
        .limit(limit)
    ).all()
