"""One evaluation: every rule over every stored query, alerts moved along their lifecycle.

Facts come from the store as the listener left it, through the one reader the dashboard uses
too (the latest batch's health flags; late records and rewinds per partition over the windows
the rules' parameters set), so the evaluator can run in any process. Each transition is
stored as an :class:`~monitor.store.schema.models.AlertEvent`, in the
same transaction as the alerts it changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import sqlalchemy.orm as so

from monitor.alerts.lifecycle import Alert, State, Timing, Transition, step
from monitor.alerts.rulefile import RuleConfig, RuleSet, thresholds_of
from monitor.alerts.rules import RULES, Finding, query_unreadable
from monitor.health.facts import QueryFacts
from monitor.notify.outbox import enqueue
from monitor.store.read.alerts import live_alert_rows
from monitor.store.read.queries import list_queries
from monitor.store.read.read_facts import FactsAsked, fleet_facts, unreadable
from monitor.store.schema.isolation import is_outage, unreadable_reason
from monitor.store.schema.models import AlertEvent
from monitor.store.signals.notify import announce
from monitor.store.write.alerts import STEPPED, Recorded, store_alert_changes

UNREADABLE = query_unreadable.__name__


def evaluate(session: so.Session, rules: RuleSet, now_ms: int) -> list[AlertEvent]:
    """Evaluate every rule on every query at `now_ms`; the transitions, stored and committed
    with the notifications they call for."""
    live = _live_alerts(session)
    queries = list_queries(session)
    each = rules.for_queries(query.name for query in queries)
    configs = {query.id: config for query, config in zip(queries, each, strict=True)}
    alerting = _alerting(live)
    asked = [
        FactsAsked(query, thresholds_of(configs[query.id]), alerting.get(query.id, frozenset()))
        for query in queries
    ]
    # Every query's facts first, in a few statements per chunk of queries, not per query; no
    # rule looks at a query's trend (the dashboard's status does), so it is not read.
    facts = fleet_facts(session, asked, now_ms, overview=False)
    changes = _Changes()
    for query, item in zip(queries, asked, strict=True):
        for name, finding in _judge(item, facts[query.id], configs[query.id], now_ms).items():
            key = (name, query.id)
            stored = live.get(key)
            if finding is None and stored is None:
                continue  # nothing found, nothing to resolve: most rules on most queries
            config = configs[query.id][name]
            changes.step(key, stored, finding, now_ms, _timing(config, facts[query.id]))
    events = changes.store(session, now_ms)
    enqueue(session, events, rules.receivers, now_ms)
    if events:
        announce(session)
    session.commit()
    return events


@dataclass(frozen=True)
class _Stored:
    """A live alert as stored: its row's id, and the alert."""

    id: int
    alert: Alert


@dataclass
class _Changes:
    """What one pass changes: the stored alerts it moves or brings up to date, the new ones,
    and the transitions to record, written in a few statements however large the fleet."""

    updated: list[dict[str, Any]] = field(default_factory=list)
    new: list[Alert] = field(default_factory=list)
    recorded: list[Recorded] = field(default_factory=list)

    def step(
        self,
        key: tuple[str, str],
        stored: _Stored | None,
        finding: Finding | None,
        now_ms: int,
        timing: Timing,
    ) -> None:
        """Step the alert on `key` (rule, query id) with what its rule found now."""
        alert, transition = step(stored.alert if stored else None, finding, now_ms, timing, key)
        row_id = stored.id if stored else None
        if transition is Transition.CANCELLED and stored is not None:
            ended = _columns(replace(stored.alert, resolved_at_ms=now_ms))
            self.updated.append(ended | {"state": transition.value, "row_id": row_id})
            self.recorded.append(_recorded(row_id, stored.alert, transition))
            return
        if alert is None:
            return
        if stored is None:
            self.new.append(alert)
        elif alert != stored.alert:
            self.updated.append(_columns(alert) | {"row_id": row_id})
        if transition is not None:
            self.recorded.append(_recorded(row_id, alert, transition))

    def store(self, session: so.Session, now_ms: int) -> list[AlertEvent]:
        """Write the changed alerts, the new ones and the transitions; the transitions as
        stored."""
        new = [_new_row(alert) for alert in self.new]
        return store_alert_changes(session, self.updated, new, self.recorded, now_ms)


def _recorded(row_id: int | None, alert: Alert, transition: Transition) -> Recorded:
    """A transition to record: of the stored alert `row_id`, or else of a new one, `alert`
    being the alert as it stands after it."""
    return Recorded(
        row_id, alert.rule, alert.query_id, transition.value, alert.value, alert.message
    )


def _columns(alert: Alert) -> dict[str, Any]:
    """The stored columns a pass may change (STEPPED), as `alert` has them."""
    columns = {name: getattr(alert, name) for name in STEPPED}
    return columns | {"state": alert.state.value, "partitions": list(alert.partitions)}


def _new_row(alert: Alert) -> dict[str, Any]:
    """The columns of a new alert's row."""
    return {
        "rule": alert.rule,
        "query_id": alert.query_id,
        "severity": RULES[alert.rule].severity.value,
        "active_since_ms": alert.active_since_ms,
    } | _columns(alert)


def _live_alerts(session: so.Session) -> dict[tuple[str, str], _Stored]:
    """Every pending or firing alert, by rule and query: read as plain rows, not objects."""
    rows = live_alert_rows(session)
    return {
        (row.rule, row.query_id): _Stored(
            row.id,
            Alert(
                row.rule,
                row.query_id,
                State(row.state),
                row.active_since_ms,
                row.value,
                row.message,
                row.held_at_ms,
                tuple(row.partitions),
                row.caused_by,
                row.fired_at_ms,
                row.resolved_at_ms,
            ),
        )
        for row in rows
    }


def _alerting(live: Mapping[tuple[str, str], _Stored]) -> dict[str, frozenset[str]]:
    """By query id, the rules with a live alert on it."""
    rules: dict[str, set[str]] = {}
    for rule, query_id in live:
        rules.setdefault(query_id, set()).add(rule)
    return {query_id: frozenset(found) for query_id, found in rules.items()}


def _judge(
    asked: FactsAsked, facts: QueryFacts, configs: dict[str, RuleConfig], now_ms: int
) -> dict[str, Finding | None]:
    """What each rule finds on one query, by rule, each finding whose cause another rule found
    marked `caused_by` it. A query whose rows break a rule is judged unreadable; an
    unreadable query is judged by `query_unreadable` alone, and its other alerts wait as they
    are: one bad row must not resolve them."""
    if facts.unreadable is None:
        try:
            found = {
                name: _finding(name, config, facts, now_ms) for name, config in configs.items()
            }
            return {name: _with_cause(name, finding, found) for name, finding in found.items()}
        except Exception as error:  # a row no rule can handle: this query's alone
            if is_outage(error):
                raise
            facts = unreadable(asked, unreadable_reason(error))
    config = configs[UNREADABLE]
    return {UNREADABLE: _finding(UNREADABLE, config, facts, now_ms)}


def _timing(config: RuleConfig, facts: QueryFacts) -> Timing:
    """The rule's timing for this pass: its own, but nothing is held once the rule is switched
    off or the query has stopped running (there is no condition left to come back)."""
    if not config.enabled:
        return Timing()
    if not facts.active:
        return Timing(config.timing.for_ms, 0)
    return config.timing


def _finding(name: str, config: RuleConfig, facts: QueryFacts, now_ms: int) -> Finding | None:
    if not config.enabled:
        return None
    return RULES[name].check(facts, now_ms, config.params)


def _with_cause(
    name: str, finding: Finding | None, found: Mapping[str, Finding | None]
) -> Finding | None:
    """The finding, marked caused by the first of its rule's causes found on the same query
    (Alertmanager's inhibition, at the source: it is shown under its cause, not told)."""
    if finding is None:
        return None
    cause = next((cause for cause in RULES[name].caused_by if found.get(cause)), None)
    return replace(finding, caused_by=cause)
