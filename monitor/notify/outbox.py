"""What to send to whom: the deliveries queued after each evaluation.

:func:`enqueue` adds :class:`~monitor.store.schema.models.Delivery` rows to the session that stores
the transitions, so nothing is lost between the two; :mod:`monitor.notify.delivery` sends them.
Firing and resolved stay paired, as in Alertmanager: a silence holds back the firing
notification of the alerts it covers, which goes out once the silence ends if the alert still
fires. An alert caused by another (Alertmanager's inhibition) is held back the same way while
its cause is found, and told if it still fires once its cause is gone. A resolved notification
goes to exactly the receivers the firing was queued for (sent, being retried or given up on),
whatever rules the evaluating process holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.notify.receiver import Receiver
from monitor.notify.silences import active_silences, silenced
from monitor.store.schema.models import AlertEvent, AlertRow, Delivery


def enqueue(
    session: so.Session, events: Iterable[AlertEvent], receivers: Sequence[Receiver], now_ms: int
) -> list[Delivery]:
    """Queue the firing and resolved notifications that receivers have yet to hear."""
    names = [receiver.name for receiver in receivers]
    # Each firing alert is checked, not only `events`: one that fired under a silence, or
    # before a receiver was added, is told once nothing holds it back.
    firing = _unheard_firing(session, names, now_ms) if names else []
    deliveries = [
        _delivery(event, name, now_ms) for event, name in firing + _resolved(session, events)
    ]
    session.add_all(deliveries)
    return deliveries


def _delivery(event: AlertEvent, receiver: str, now_ms: int) -> Delivery:
    return Delivery(
        alert_event_id=event.id,
        receiver=receiver,
        created_at_ms=now_ms,
        attempts=0,
        next_attempt_at_ms=now_ms,
    )


def _unheard_firing(
    session: so.Session, receivers: Sequence[str], now_ms: int
) -> list[tuple[AlertEvent, str]]:
    """Each firing alert's firing event, with each receiver that has not been sent it, unless
    another alert causes it or a silence in force covers it."""
    firing = session.execute(
        sa.select(AlertRow, AlertEvent)
        .join(AlertEvent, AlertEvent.alert_id == AlertRow.id)
        .where(
            AlertRow.state == "firing",
            AlertRow.caused_by.is_(None),
            AlertEvent.transition == "firing",
        )
        .order_by(AlertEvent.id)
    ).all()
    silences = active_silences(session, now_ms)
    heard = _receivers_of(session, [event.id for _, event in firing])
    return [
        (event, name)
        for alert, event in firing
        if not any(silenced(alert, silence) for silence in silences)
        for name in receivers
        if (event.id, name) not in heard
    ]


def _resolved(session: so.Session, events: Iterable[AlertEvent]) -> list[tuple[AlertEvent, str]]:
    """Each resolved event, with each receiver its alert's firing was queued for."""
    resolved = [event for event in events if event.transition == "resolved"]
    if not resolved:
        return []
    rows = session.execute(
        sa.select(AlertEvent.alert_id, AlertEvent.id).where(
            AlertEvent.alert_id.in_([event.alert_id for event in resolved]),
            AlertEvent.transition == "firing",
        )
    )
    firing = {alert_id: event_id for alert_id, event_id in rows}
    heard = sorted(_receivers_of(session, list(firing.values())))
    return [
        (event, name)
        for event in resolved
        for fired, name in heard
        if fired == firing.get(event.alert_id)
    ]


def _receivers_of(session: so.Session, event_ids: Sequence[int]) -> set[tuple[int, str]]:
    """(event id, receiver) of every delivery queued of these events."""
    if not event_ids:
        return set()
    rows = session.execute(
        sa.select(Delivery.alert_event_id, Delivery.receiver).where(
            Delivery.alert_event_id.in_(event_ids)
        )
    )
    return {(event_id, receiver) for event_id, receiver in rows}
