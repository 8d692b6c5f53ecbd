"""An alert's life, as Alertmanager's: pending until its condition has held `for`, then firing,
then resolved once the condition has been clear for `keep_firing_for`. One alert per rule and
query, whatever number of partitions it covers: never a flood.

:func:`step` is pure: given the alert as it stands (or None), what the rule finds now (or None),
the time and the rule's timing, it returns the alert as it becomes and the transition, if any,
to record.

Acknowledging and silencing are kept beside the state and do not change it (a silence holds
notifications back, see :mod:`monitor.notify.outbox`; an acknowledgement only records who is
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
class Timing:
    """How long a rule's finding must hold before its alert fires (`for_ms`), and how long a
    firing alert stays once it cleared (`keep_firing_ms`), as Prometheus' `for` and
    `keep_firing_for`."""

    for_ms: int = 0
    keep_firing_ms: int = 0


@dataclass(frozen=True)
class Alert:
    """One rule's alert on one query, over the `partitions` its finding names (none when it is
    about the query itself), and `caused_by`, the rule whose finding explains it."""

    rule: str
    query_id: str
    state: State
    active_since_ms: int
    value: float | None
    message: str
    # The last time the rule found its condition: a firing alert stays for `keep_firing_ms`.
    held_at_ms: int
    partitions: tuple[str, ...] = ()
    caused_by: str | None = None
    fired_at_ms: int | None = None
    resolved_at_ms: int | None = None


def step(
    alert: Alert | None,
    finding: Finding | None,
    now_ms: int,
    timing: Timing,
    subject: tuple[str, str],
) -> tuple[Alert | None, Transition | None]:
    """The alert on `subject` (rule, query id) after one evaluation at `now_ms`."""
    live = alert is not None and alert.state is not State.RESOLVED
    if finding is None:
        if not live or alert is None:
            return alert, None
        if alert.state is State.PENDING:
            return None, Transition.CANCELLED
        if now_ms - alert.held_at_ms < timing.keep_firing_ms:
            return alert, None
        resolved = replace(alert, state=State.RESOLVED, resolved_at_ms=now_ms)
        return resolved, Transition.RESOLVED
    if not live or alert is None:
        rule, query_id = subject
        pending = Alert(rule, query_id, State.PENDING, now_ms, None, "", now_ms)
        return _fire_if_due(
            _found(pending, finding, now_ms), now_ms, timing.for_ms, Transition.PENDING
        )
    updated = _found(alert, finding, now_ms)
    if alert.state is State.FIRING:
        return updated, None
    return _fire_if_due(updated, now_ms, timing.for_ms, None)


def _found(alert: Alert, finding: Finding, now_ms: int) -> Alert:
    """The alert with what its rule found at `now_ms`."""
    return replace(
        alert,
        value=finding.value,
        message=finding.message,
        partitions=finding.partitions,
        caused_by=finding.caused_by,
        held_at_ms=now_ms,
    )


def _fire_if_due(
    alert: Alert, now_ms: int, for_ms: int, otherwise: Transition | None
) -> tuple[Alert, Transition | None]:
    if now_ms - alert.active_since_ms >= for_ms:
        return replace(alert, state=State.FIRING, fired_at_ms=now_ms), Transition.FIRING
    return alert, otherwise
