"""Stored alerts: the newest with their queries' names, their events by row id, and the live ones
counted by rule, severity and state."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.models import (
    LIVE_ALERT_STATES,
    AlertEvent,
    AlertRow,
    Delivery,
    DeliveryAttempt,
    Query,
)


@dataclass(frozen=True)
class AlertView:
    """An alert as `wmon alerts` lists it, with its query's name."""

    id: int
    rule: str
    query: str
    partition: str | None
    severity: str
    state: str
    active_since_ms: int
    fired_at_ms: int | None
    resolved_at_ms: int | None
    message: str


def alerts_with_names(
    session: so.Session, live_only: bool, limit: int, query_id: str | None = None
) -> Sequence[Any]:
    """(alert, query name) pairs, the newest first: only live ones, or every one."""
    select = (
        sa.select(AlertRow, Query.name)
        .join(Query, Query.id == AlertRow.query_id)
        .order_by(AlertRow.active_since_ms.desc(), AlertRow.id.desc())
        .limit(limit)
    )
    if live_only:
        select = select.where(AlertRow.state.in_(LIVE_ALERT_STATES))
    if query_id is not None:
        select = select.where(AlertRow.query_id == query_id)
    return session.execute(select).all()


def recent_alerts(session: so.Session, live_only: bool, limit: int) -> list[AlertView]:
    """The newest alerts first: only pending and firing ones, or every one."""
    return [
        AlertView(
            row.id,
            row.rule,
            name or row.query_id,
            row.partition or None,
            row.severity,
            row.state,
            row.active_since_ms,
            row.fired_at_ms,
            row.resolved_at_ms,
            row.message,
        )
        for row, name in alerts_with_names(session, live_only, limit)
    ]


def alert_events_by_id(
    session: so.Session, ids: Sequence[int]
) -> Sequence[tuple[AlertEvent, AlertRow, str | None]]:
    """The alert events with these row ids, each with its alert and its query's name, in the
    order they were stored."""
    rows = session.execute(
        sa.select(AlertEvent, AlertRow, Query.name)
        .join(AlertRow, AlertRow.id == AlertEvent.alert_id)
        .join(Query, Query.id == AlertRow.query_id)
        .where(AlertEvent.id.in_(ids))
        .order_by(AlertEvent.id)
    )
    return [(event, alert, name) for event, alert, name in rows]


def live_alert_counts(session: so.Session) -> Counter[tuple[str, str, str]]:
    """The live (pending or firing) alerts, counted by rule, severity and state."""
    rows = session.execute(
        sa.select(AlertRow.rule, AlertRow.severity, AlertRow.state, sa.func.count())
        .where(AlertRow.state.in_(LIVE_ALERT_STATES))
        .group_by(AlertRow.rule, AlertRow.severity, AlertRow.state)
    )
    return Counter({(rule, severity, state): count for rule, severity, state, count in rows})


def deliveries(
    session: so.Session, alert_id: int
) -> list[tuple[Delivery, str, list[DeliveryAttempt]]]:
    """Every notification of an alert, in the order they were made: each with the transition
    it told of and its attempts, in order."""
    rows = session.execute(
        sa.select(Delivery, AlertEvent.transition)
        .join(AlertEvent, AlertEvent.id == Delivery.alert_event_id)
        .where(AlertEvent.alert_id == alert_id)
        .order_by(Delivery.id)
    ).all()
    attempts: dict[int, list[DeliveryAttempt]] = {delivery.id: [] for delivery, _ in rows}
    for attempt in session.scalars(
        sa.select(DeliveryAttempt)
        .where(DeliveryAttempt.delivery_id.in_(attempts))
        .order_by(DeliveryAttempt.id)
    ):
        attempts[attempt.delivery_id].append(attempt)
    return [(delivery, transition, attempts[delivery.id]) for delivery, transition in rows]
