"""Stored alerts: the newest with their queries' names, their events by row id, and the live ones
counted by rule, severity and state; one alert or silence by id, and the silences in force."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.health.judgment import LiveAlert
from monitor.store.schema.models import (
    LIVE_ALERT_STATES,
    AlertEvent,
    AlertRow,
    Delivery,
    DeliveryAttempt,
    Query,
    Silence,
)
from monitor.store.schema.sql import among


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

    @property
    def since_ms(self) -> int:
        """Since when it is what it is, as the pages say it: a firing alert since it fired,
        any other since it went pending."""
        if self.state == "firing" and self.fired_at_ms is not None:
            return self.fired_at_ms
        return self.active_since_ms


# A pending alert whose condition cleared before its `for` ran out: it never fired, and is
# counted (cancelled_count), never listed.
CANCELLED = "cancelled"


def alerts_with_names(
    session: so.Session,
    live_only: bool,
    limit: int,
    query_id: str | None = None,
    urgent_rules: Sequence[str] = (),
) -> Sequence[Any]:
    """(alert, query name) pairs: only live ones, the most urgent first (:func:`urgency`); or
    every one but the cancelled, the firing first, then the pending, then the newest first."""
    select = sa.select(AlertRow, Query.name).join(Query, Query.id == AlertRow.query_id)
    if live_only:
        select = select.where(AlertRow.state.in_(LIVE_ALERT_STATES))
        select = select.order_by(*urgency(urgent_rules))
    else:
        live_first = sa.case((AlertRow.state == "firing", 0), (AlertRow.state == "pending", 1))
        select = select.where(AlertRow.state != CANCELLED).order_by(
            sa.func.coalesce(live_first, 2), AlertRow.active_since_ms.desc(), AlertRow.id.desc()
        )
    if query_id is not None:
        select = select.where(AlertRow.query_id == query_id)
    return session.execute(select.limit(limit)).all()


def cancelled_count(session: so.Session, query_id: str | None = None) -> int:
    """How many stored alerts were cancelled (pending, and cleared before their rule's `for`):
    of one query, or of all."""
    select = sa.select(sa.func.count()).where(AlertRow.state == CANCELLED)
    if query_id is not None:
        select = select.where(AlertRow.query_id == query_id)
    return session.scalar(select) or 0


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
    """Only the pending and firing alerts, the most urgent first; or every one but the
    cancelled, the firing first, then the pending, then the newest first."""
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


def live_alerts(session: so.Session, query_ids: Sequence[str]) -> dict[str, list[LiveAlert]]:
    """By query id (at most IN_CHUNK of them), the live (pending or firing) alerts on the
    query, as its judgment weighs them."""
    rows = session.execute(
        sa.select(
            AlertRow.query_id,
            AlertRow.rule,
            AlertRow.severity,
            AlertRow.state,
            AlertRow.active_since_ms,
            AlertRow.fired_at_ms,
        ).where(AlertRow.state.in_(LIVE_ALERT_STATES), among(AlertRow.query_id, query_ids))
    )
    found: dict[str, list[LiveAlert]] = {}
    for query_id, rule, severity, state, since_ms, fired_ms in rows:
        found.setdefault(query_id, []).append(LiveAlert(rule, severity, state, since_ms, fired_ms))
    return found


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


def live_alert_rows(session: so.Session) -> Sequence[Any]:
    """Every pending or firing alert, as plain rows (not objects): all the columns an
    evaluation steps, with its id, rule, query id and start."""
    return session.execute(
        sa.select(
            AlertRow.id,
            AlertRow.rule,
            AlertRow.query_id,
            AlertRow.state,
            AlertRow.active_since_ms,
            AlertRow.value,
            AlertRow.message,
            AlertRow.held_at_ms,
            AlertRow.partitions,
            AlertRow.caused_by,
            AlertRow.fired_at_ms,
            AlertRow.resolved_at_ms,
        ).where(AlertRow.state.in_(LIVE_ALERT_STATES))
    ).all()


def alert_row(session: so.Session, alert_id: int) -> AlertRow | None:
    """The alert `alert_id`, if there is one."""
    return session.get(AlertRow, alert_id)


def alert_events(session: so.Session, alert_id: int) -> Sequence[AlertEvent]:
    """An alert's events, oldest first."""
    return session.scalars(
        sa.select(AlertEvent).where(AlertEvent.alert_id == alert_id).order_by(AlertEvent.id)
    ).all()


def silence_row(session: so.Session, silence_id: int) -> Silence | None:
    """The silence `silence_id`, if there is one."""
    return session.get(Silence, silence_id)


def active_silences(session: so.Session, now_ms: int) -> Sequence[Silence]:
    """The silences in force at `now_ms`, oldest first."""
    return session.scalars(
        sa.select(Silence).where(Silence.until_ms > now_ms).order_by(Silence.id)
    ).all()
