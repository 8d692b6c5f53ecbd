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

import sqlalchemy.orm as so

from monitor.notify.receiver import Receiver
from monitor.notify.silences import silenced
from monitor.store.read.alerts import active_silences
from monitor.store.read.deliveries import firing_alerts, firing_events, receivers_of
from monitor.store.schema.models import AlertEvent, Delivery
from monitor.store.write.alerts import queue_deliveries


def enqueue(
    session: so.Session, events: Iterable[AlertEvent], receivers: Sequence[Receiver], now_ms: int
) -> list[Delivery]:
    """Queue the firing and resolved notifications that receivers have yet to hear."""
    names = [receiver.name for receiver in receivers]
    # Each firing alert is checked, not only `events`: one that fired under a silence, or
    # before a receiver was added, is told once nothing holds it back.
    firing = _unheard_firing(session, names, now_ms) if names else []
    return queue_deliveries(session, firing + _resolved(session, events), now_ms)


def _unheard_firing(
    session: so.Session, receivers: Sequence[str], now_ms: int
) -> list[tuple[AlertEvent, str]]:
    """Each firing alert's firing event, with each receiver that has not been sent it, unless
    another alert causes it or a silence in force covers it."""
    firing = firing_alerts(session)
    silences = active_silences(session, now_ms)
    heard = receivers_of(session, [event.id for _, event in firing])
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
    firing = firing_events(session, [event.alert_id for event in resolved])
    heard = sorted(receivers_of(session, list(firing.values())))
    return [
        (event, name)
        for event in resolved
        for fired, name in heard
        if fired == firing.get(event.alert_id)
    ]
