"""What people do to alerts: acknowledge one, silence some for a time, lift a silence.

Each action is stored (an acknowledgement as one of the alert's events), so that the history
of an incident shows who did what when.
"""

from __future__ import annotations

import sqlalchemy.orm as so

from monitor.store.read.alerts import alert_row, silence_row
from monitor.store.schema.models import LIVE_ALERT_STATES, AlertRow, Silence
from monitor.store.signals.notify import announce
from monitor.store.write.alerts import end_silence, store_acknowledgement, store_silence


class ActionError(ValueError):
    """An action that cannot be done."""


class NotFound(ActionError):
    """No alert or silence with that id."""


class NotAllowed(ActionError):
    """The alert is not in a state that allows the action."""


def acknowledge(session: so.Session, alert_id: int, by: str, now_ms: int) -> AlertRow:
    """Mark a pending or firing alert acknowledged by `by`; stored as one of its events."""
    alert = alert_row(session, alert_id)
    if alert is None:
        raise NotFound(f"no alert {alert_id}")
    if alert.state not in LIVE_ALERT_STATES:
        raise NotAllowed(f"alert {alert_id} is {alert.state}: only a live alert is acknowledged")
    store_acknowledgement(session, alert, by, now_ms)
    announce(session)
    session.commit()
    return alert


def silence(
    session: so.Session,
    *,
    rule: str | None,
    query_id: str | None,
    partition: str | None,
    until_ms: int,
    now_ms: int,
    by: str,
    comment: str | None = None,
) -> Silence:
    """Hold back firing notifications of matching alerts (None matches anything) until
    `until_ms`."""
    if until_ms <= now_ms:
        raise NotAllowed("a silence must end in the future")
    created = store_silence(
        session,
        rule=rule,
        query_id=query_id,
        partition=partition,
        until_ms=until_ms,
        now_ms=now_ms,
        by=by,
        comment=comment,
    )
    announce(session)
    session.commit()
    return created


def lift_silence(session: so.Session, silence_id: int, now_ms: int) -> Silence:
    """End a silence now."""
    found = silence_row(session, silence_id)
    if found is None:
        raise NotFound(f"no silence {silence_id}")
    end_silence(found, now_ms)
    announce(session)
    session.commit()
    return found
