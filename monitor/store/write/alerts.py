"""What the alerts write: the lifecycle's changes with their transitions, acknowledgements,
silences, and the deliveries the outbox queues with them.

Each adds to the caller's session and leaves the transaction to it, so that what an
evaluation or an action changes is committed as one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.schema.models import LIVE_ALERT_STATES, AlertEvent, AlertRow, Delivery, Silence

# The columns of a stored alert that an evaluation changes.
STEPPED = (
    "state",
    "value",
    "message",
    "partitions",
    "caused_by",
    "held_at_ms",
    "fired_at_ms",
    "resolved_at_ms",
)
# An alert event that records who is on it: no transition of a rule's.
ACKNOWLEDGED = "acknowledged"


@dataclass(frozen=True)
class Recorded:
    """A transition to store: of the stored alert `row_id`, or else of the new alert on
    (`rule`, `query_id`), with the value and message its alert has after it."""

    row_id: int | None
    rule: str
    query_id: str
    transition: str
    value: float | None
    message: str


def store_alert_changes(
    session: so.Session,
    updated: Sequence[dict[str, Any]],
    new: Sequence[dict[str, Any]],
    recorded: Sequence[Recorded],
    now_ms: int,
) -> list[AlertEvent]:
    """Write the changed alerts (their STEPPED columns, by `row_id`), the new ones and the
    transitions, each kind in one statement run for many rows; the transitions as stored.

    New rows are not asked back with RETURNING (drivers write that as one long statement
    per thousand rows, which psycopg parses afresh: seconds for a fleet's alerts) but read
    after: new alerts are live and unique by rule and query, and the transitions are
    those at `now_ms` past the newest stored before (an acknowledgement is no transition
    of a rule's)."""
    # On the connection: plain statements, not the ORM's per-row bookkeeping.
    connection = session.connection()
    if updated:
        update = sa.update(AlertRow).where(AlertRow.id == sa.bindparam("row_id"))
        values: dict[str, Any] = {name: sa.bindparam(name) for name in STEPPED}
        connection.execute(update.values(values), updated)
    if new:
        connection.execute(sa.insert(AlertRow), list(new))
    if not recorded:
        return []
    made = _new_ids(session, now_ms) if new else {}
    before = session.scalar(sa.select(sa.func.max(AlertEvent.id))) or 0
    connection.execute(
        sa.insert(AlertEvent),
        [
            {
                "alert_id": made[item.rule, item.query_id] if item.row_id is None else item.row_id,
                "transition": item.transition,
                "at_ms": now_ms,
                "value": item.value,
                "message": item.message,
            }
            for item in recorded
        ],
    )
    return list(
        session.scalars(
            sa.select(AlertEvent)
            .where(
                AlertEvent.id > before,
                AlertEvent.at_ms == now_ms,
                AlertEvent.transition != ACKNOWLEDGED,
            )
            .order_by(AlertEvent.id)
        )
    )


def _new_ids(session: so.Session, now_ms: int) -> dict[tuple[str, str], int]:
    """The row ids of the live alerts that became active at `now_ms`, by rule and query."""
    rows = session.execute(
        sa.select(AlertRow.id, AlertRow.rule, AlertRow.query_id).where(
            AlertRow.active_since_ms == now_ms, AlertRow.state.in_(LIVE_ALERT_STATES)
        )
    )
    return {(row.rule, row.query_id): row.id for row in rows}


def store_acknowledgement(session: so.Session, alert: AlertRow, by: str, now_ms: int) -> None:
    """Mark `alert` acknowledged by `by`, and store that as one of its events."""
    alert.acknowledged_at_ms, alert.acknowledged_by = now_ms, by
    session.add(
        AlertEvent(
            alert_id=alert.id,
            transition=ACKNOWLEDGED,
            at_ms=now_ms,
            value=alert.value,
            message=f"acknowledged by {by}",
        )
    )


def store_silence(
    session: so.Session,
    *,
    rule: str | None,
    query_id: str | None,
    partition: str | None,
    until_ms: int,
    now_ms: int,
    by: str,
    comment: str | None,
) -> Silence:
    """A new silence of the matching alerts (None matches anything) until `until_ms`."""
    created = Silence(
        rule=rule,
        query_id=query_id,
        partition=partition,
        created_at_ms=now_ms,
        until_ms=until_ms,
        created_by=by,
        comment=comment,
    )
    session.add(created)
    return created


def end_silence(silence: Silence, now_ms: int) -> None:
    """End `silence` at `now_ms`, unless it ended before."""
    silence.until_ms = min(silence.until_ms, now_ms)


def queue_deliveries(
    session: so.Session, told: Iterable[tuple[AlertEvent, str]], now_ms: int
) -> list[Delivery]:
    """A delivery of each (alert event, receiver name), due at once."""
    deliveries = [
        Delivery(
            alert_event_id=event.id,
            receiver=receiver,
            created_at_ms=now_ms,
            attempts=0,
            next_attempt_at_ms=now_ms,
        )
        for event, receiver in told
    ]
    session.add_all(deliveries)
    return deliveries
