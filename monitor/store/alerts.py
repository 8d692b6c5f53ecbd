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
from monitor.store.sql import among


@dataclass(frozen=True)
class AlertView:
    """An alert as `wmon alerts` lists it, with its query's name."""

    id: int
    rule: str
    query: str
    partitions: tuple[str, ...]
    caused_by: str | None
    severity: str
    state: str
    active_since_ms: int
    fired_at_ms: int | None
    resolved_at_ms: int | None
    message: str


def alerts_with_names(
    session: so.Session,
    live_only: bool,
    limit: int,
    query_id: str | None = None,
    urgent_rules: Sequence[str] = (),
) -> Sequence[Any]:
    """(alert, query name) pairs: every one, the newest first; or only live ones, the most
    urgent first (:func:`urgency`)."""
    select = sa.select(AlertRow, Query.name).join(Query, Query.id == AlertRow.query_id)
    if live_only:
        select = select.where(AlertRow.state.in_(LIVE_ALERT_STATES))
        select = select.order_by(*urgency(urgent_rules)).limit(limit)
    else:
        select = select.order_by(AlertRow.active_since_ms.desc(), AlertRow.id.desc()).limit(limit)
    if query_id is not None:
        select = select.where(AlertRow.query_id == query_id)
    return session.execute(select).all()


def urgency(urgent_rules: Sequence[str]) -> list[sa.ColumnElement[Any]]:
    """The order of live alerts, the most urgent first: firing before pending, causes before
    what they cause, `urgent_rules` (a query that is down) before the rest, critical before
    warning, then the longest active first (web/static/js/alertbook.js orders them so too)."""
    return [
        sa.case((AlertRow.state == "firing", 0), else_=1),
        sa.case((AlertRow.caused_by.is_(None), 0), else_=1),
        sa.case((AlertRow.rule.in_(urgent_rules), 0), else_=1),
        sa.case((AlertRow.severity == "critical", 0), else_=1),
        AlertRow.active_since_ms.asc(),
        AlertRow.id.asc(),
    ]


def recent_alerts(
    session: so.Session, live_only: bool, limit: int, urgent_rules: Sequence[str] = ()
) -> list[AlertView]:
    """Every alert, the newest first; or only the pending and firing ones, the most urgent
    first."""
    return [
        AlertView(
            row.id,
            row.rule,
            name or row.query_id,
            tuple(row.partitions),
            row.caused_by,
            row.severity,
            row.state,
            row.active_since_ms,
            row.fired_at_ms,
            row.resolved_at_ms,
            row.message,
        )
        for row, name in alerts_with_names(session, live_only, limit, None, urgent_rules)
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


def live_rules(session: so.Session, query_ids: Sequence[str]) -> dict[str, frozenset[str]]:
    """By query id (at most IN_CHUNK of them), the rules with a live (pending or firing) alert
    on the query."""
    rows = session.execute(
        sa.select(AlertRow.query_id, AlertRow.rule).where(
            AlertRow.state.in_(LIVE_ALERT_STATES), among(AlertRow.query_id, query_ids)
        )
    )
    found: dict[str, set[str]] = {}
    for query_id, rule in rows:
        found.setdefault(query_id, set()).add(rule)
    return {query_id: frozenset(rules) for query_id, rules in found.items()}


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
