"""One evaluation: every rule over every stored query, alerts moved along their lifecycle.

Facts come from the store as the listener left it, through the one reader the dashboard uses
too (the latest batch's health flags; late records and rewinds per partition over the windows
the rules' parameters set), so the evaluator can run in any process. Each transition is
stored as an :class:`~monitor.store.models.AlertEvent`, in the
same transaction as the alerts it changes.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.alerts.lifecycle import Alert, State, Transition, step
from monitor.alerts.outbox import enqueue
from monitor.alerts.rulefile import RuleConfig, RuleSet, thresholds_of
from monitor.alerts.rules import RULES, Finding, query_unreadable
from monitor.health.facts import QueryFacts
from monitor.store.facts import Asked, fleet_facts, unreadable
from monitor.store.isolation import is_outage, unreadable_reason
from monitor.store.models import LIVE_ALERT_STATES, AlertEvent, AlertRow
from monitor.store.notify import announce
from monitor.store.reads import list_queries

UNREADABLE = query_unreadable.__name__


def evaluate(session: so.Session, rules: RuleSet, now_ms: int) -> list[AlertEvent]:
    """Evaluate every rule on every query at `now_ms`; the transitions, stored and committed
    with the notifications they call for."""
    live = {
        (row.rule, row.query_id, row.partition): row
        for row in session.scalars(sa.select(AlertRow).where(AlertRow.state.in_(LIVE_ALERT_STATES)))
    }
    queries = list_queries(session)
    configs = {query.id: rules.for_query(query.name) for query in queries}
    alerting = _alerting(live)
    asked = [
        Asked(query, thresholds_of(configs[query.id]), alerting.get(query.id, frozenset()))
        for query in queries
    ]
    # Every query's facts first, in a few statements per chunk of queries, not per query.
    facts = fleet_facts(session, asked, now_ms)
    known = _known(live)
    changed: list[tuple[AlertRow, Transition]] = []
    for query, item in zip(queries, asked, strict=True):
        for name, findings in _judge(item, facts[query.id], configs[query.id], now_ms).items():
            subjects = known.get((name, query.id), set())
            config = configs[query.id][name]
            changed += _apply(session, live, query.id, name, findings, subjects, config, now_ms)
    _write_alerts(session)
    events = [_event(row, transition, now_ms) for row, transition in changed]
    session.add_all(events)
    session.flush()
    enqueue(session, events, rules.receivers, now_ms)
    if events:
        announce(session)
    session.commit()
    return events


# What a pass changes in a stored alert.
_STEPPED = ("state", "value", "message", "fired_at_ms", "resolved_at_ms")


def _write_alerts(session: so.Session) -> None:
    """Store every alert the pass changed, in a few statements however large the fleet: the
    changed ones in one UPDATE of many rows, the new ones in batched INSERTs. (The ORM sends
    an UPDATE per row whenever a row's changed columns differ from the one before it's.)"""
    changed = [
        row for row in session.dirty if isinstance(row, AlertRow) and session.is_modified(row)
    ]
    updates = [{"id": row.id} | {name: getattr(row, name) for name in _STEPPED} for row in changed]
    for row in changed:
        for name in _STEPPED:  # written by the UPDATE below: nothing left for a flush
            so.attributes.set_committed_value(row, name, getattr(row, name))
    if updates:
        session.execute(sa.update(AlertRow), updates)
    session.flush()


def _alerting(live: dict[tuple[str, str, str], AlertRow]) -> dict[str, frozenset[str]]:
    """By query id, the rules with a live alert on the query itself."""
    rules: dict[str, set[str]] = {}
    for rule, query_id, partition in live:
        if not partition:
            rules.setdefault(query_id, set()).add(rule)
    return {query_id: frozenset(found) for query_id, found in rules.items()}


def _known(live: dict[tuple[str, str, str], AlertRow]) -> dict[tuple[str, str], set[str]]:
    """By rule and query id, the subjects ("" or a partition) of their live alerts."""
    known: dict[tuple[str, str], set[str]] = {}
    for rule, query_id, partition in live:
        known.setdefault((rule, query_id), set()).add(partition)
    return known


def _judge(
    asked: Asked, facts: QueryFacts, configs: dict[str, RuleConfig], now_ms: int
) -> dict[str, dict[str, Finding]]:
    """What each rule finds on one query, by rule and subject. A query whose rows break a
    rule is judged unreadable; an unreadable query is judged by `query_unreadable` alone, and
    its other alerts wait as they are: one bad row must not resolve them."""
    if facts.unreadable is None:
        try:
            return {
                name: _findings(name, config, facts, now_ms) for name, config in configs.items()
            }
        except Exception as error:  # a row no rule can handle: this query's alone
            if is_outage(error):
                raise
            facts = unreadable(asked, unreadable_reason(error))
    config = configs[UNREADABLE]
    return {UNREADABLE: _findings(UNREADABLE, config, facts, now_ms)}


def _findings(name: str, config: RuleConfig, facts: QueryFacts, now_ms: int) -> dict[str, Finding]:
    if not config.enabled:
        return {}
    found = RULES[name].check(facts, now_ms, config.params)
    return {finding.partition or "": finding for finding in found}


def _apply(
    session: so.Session,
    live: dict[tuple[str, str, str], AlertRow],
    query_id: str,
    rule: str,
    findings: dict[str, Finding],
    known: set[str],
    config: RuleConfig,
    now_ms: int,
) -> list[tuple[AlertRow, Transition]]:
    """Step every alert of one rule on one query (`known`, the subjects of its live alerts);
    the rows that changed, with how, added to the session and not yet flushed."""
    subjects = set(findings) | known
    changed = []
    for partition in sorted(subjects):
        key = (rule, query_id, partition)
        row = live.get(key)
        alert, transition = step(_alert(row), findings.get(partition), now_ms, config.for_ms, key)
        row = _store(session, row, alert, transition, rule, now_ms)
        if transition is not None and row is not None:
            changed.append((row, transition))
    return changed


def _event(row: AlertRow, transition: Transition, now_ms: int) -> AlertEvent:
    """The stored record of one transition of the alert in `row`."""
    return AlertEvent(
        alert_id=row.id,
        transition=transition.value,
        at_ms=now_ms,
        value=row.value,
        message=row.message,
    )


def _alert(row: AlertRow | None) -> Alert | None:
    if row is None:
        return None
    return Alert(
        row.rule,
        row.query_id,
        row.partition,
        State(row.state),
        row.active_since_ms,
        row.value,
        row.message,
        row.fired_at_ms,
        row.resolved_at_ms,
    )


def _store(
    session: so.Session,
    row: AlertRow | None,
    alert: Alert | None,
    transition: Transition | None,
    rule: str,
    now_ms: int,
) -> AlertRow | None:
    """The alert's row, created or brought up to date; None when nothing was ever stored."""
    if transition is Transition.CANCELLED and row is not None:
        row.state, row.resolved_at_ms = Transition.CANCELLED.value, now_ms
        return row
    if alert is None:
        return row
    if row is None:
        row = AlertRow(
            rule=rule,
            query_id=alert.query_id,
            partition=alert.partition,
            severity=RULES[rule].severity.value,
            active_since_ms=alert.active_since_ms,
        )
        session.add(row)
    row.state, row.value, row.message = alert.state.value, alert.value, alert.message
    row.fired_at_ms, row.resolved_at_ms = alert.fired_at_ms, alert.resolved_at_ms
    return row
