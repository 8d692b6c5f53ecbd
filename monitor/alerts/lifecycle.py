"""An alert's life, as Alertmanager's: pending until its condition has held `for`, then firing,
then resolved once the condition clears. One alert per rule and subject, never a flood.

:func:`step` is pure: given the alert as it stands (or None), what the rule finds now (or None)
and the time, it returns the alert as it becomes and the transition, if any, to record.
Acknowledging and silencing are kept beside the state and do not change it (a silence holds
notifications back, see :mod:`monitor.alerts.outbox`; an acknowledgement only records who is
on it).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from monitor.alerts.rules import Finding


class State(enum.Enum):
    """Where an alert stands."""

    PENDING = "pending"
    FIRING = "firing"
    RESOLVED = "resolved"


class Transition(enum.Enum):
    """A change worth recording; FIRING and RESOLVED are the ones receivers hear of."""

    PENDING = "pending"
    FIRING = "firing"
    RESOLVED = "resolved"
    # A pending alert whose condition cleared before its `for` ran out: it never fired.
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class Alert:
    """One rule's alert on one subject: a query, or a partition of it ('' for the query)."""

    rule: str
    query_id: str
    partition: str
    state: State
    active_since_ms: int
    value: float | None
    message: str
    fired_at_ms: int | None = None
    resolved_at_ms: int | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes an alert one: its rule and its subject."""
        return self.rule, self.query_id, self.partition


def step(
    alert: Alert | None,
    finding: Finding | None,
    now_ms: int,
    for_ms: int,
    subject: tuple[str, str, str],
) -> tuple[Alert | None, Transition | None]:
    """The alert on `subject` (rule, query id, partition) after one evaluation at `now_ms`."""
    live = alert is not None and alert.state is not State.RESOLVED
    if finding is None:
        if not live or alert is None:
            return alert, None
        if alert.state is State.PENDING:
            return None, Transition.CANCELLED
        resolved = replace(alert, state=State.RESOLVED, resolved_at_ms=now_ms)
        return resolved, Transition.RESOLVED
    if not live or alert is None:
        rule, query_id, partition = subject
        pending = Alert(
            rule, query_id, partition, State.PENDING, now_ms, finding.value, finding.message
        )
        return _fire_if_due(pending, now_ms, for_ms, Transition.PENDING)
    updated = replace(alert, value=finding.value, message=finding.message)
    if alert.state is State.FIRING:
        return updated, None
    return _fire_if_due(updated, now_ms, for_ms, None)


def _fire_if_due(
    alert: Alert, now_ms: int, for_ms: int, otherwise: Transition | None
) -> tuple[Alert, Transition | None]:
    if now_ms - alert.active_since_ms >= for_ms:
        return replace(alert, state=State.FIRING, fired_at_ms=now_ms), Transition.FIRING
    return alert, otherwise
