"""One evaluation: every rule over every stored query, alerts moved along their lifecycle.

Facts come from the store as the listener left it, through the one reader the dashboard uses
too (the latest batch's health flags; late records and rewinds per partition over the windows
the rules' parameters set), so the evaluator can run in any process. Each transition is
stored as an :class:`~monitor.store.models.AlertEvent`, in the
same transaction as the alerts it changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.alerts.lifecycle import Alert, State, Transition, step
from monitor.alerts.outbox import enqueue
from monitor.alerts.rulefile import RuleConfig, RuleSet, thresholds_of
from monitor.alerts.rules import RULES, Finding, query_unreadable
from monitor.health.facts import QueryFacts
from monitor.store.isolation import is_outage, unreadable_reason
from monitor.store.models import LIVE_ALERT_STATES, AlertEvent, AlertRow
from monitor.store.notify import announce
from monitor.store.queries import list_queries
from monitor.store.read_facts import Asked, fleet_facts, unreadable

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
        Asked(query, thresholds_of(configs[query.id]), alerting.get(query.id, frozenset()))
        for query in queries
    ]
    # Every query's facts first, in a few statements per chunk of queries, not per query; no
    # rule looks at a query's trend (the dashboard's status does), so it is not read.
    facts = fleet_facts(session, asked, now_ms, trend=False)
    known = _known(live)
    changes = _Changes()
    for query, item in zip(queries, asked, strict=True):
        for name, findings in _judge(item, facts[query.id], configs[query.id], now_ms).items():
            alerted = known.get((name, query.id))
            if not findings and not alerted:
                continue  # nothing found, nothing to resolve: most rules on most queries
            for_ms = configs[query.id][name].for_ms
            for partition in sorted(set(findings) | (alerted or set())):
                key = (name, query.id, partition)
                changes.step(key, live.get(key), findings.get(partition), now_ms, for_ms)
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


# What a pass changes in a stored alert.
_STEPPED = ("state", "value", "message", "fired_at_ms", "resolved_at_ms")


@dataclass(frozen=True)
class _Recorded:
    """A transition to record: of the stored alert `row_id`, or else of a new one, `alert`
    being the alert as it stands after it."""

    row_id: int | None
    alert: Alert
    transition: Transition


@dataclass
class _Changes:
    """What one pass changes: the stored alerts it moves or brings up to date, the new ones,
    and the transitions to record, written in a few statements however large the fleet."""

    updated: list[dict[str, Any]] = field(default_factory=list)
    new: list[Alert] = field(default_factory=list)
    recorded: list[_Recorded] = field(default_factory=list)

    def step(
        self,
        key: tuple[str, str, str],
        stored: _Stored | None,
        finding: Finding | None,
        now_ms: int,
        for_ms: int,
    ) -> None:
        """Step the alert on `key` (rule, query id, subject) with what its rule found now."""
        alert, transition = step(stored.alert if stored else None, finding, now_ms, for_ms, key)
        row_id = stored.id if stored else None
        if transition is Transition.CANCELLED and stored is not None:
            ended = _columns(replace(stored.alert, resolved_at_ms=now_ms))
            self.updated.append(ended | {"state": transition.value, "row_id": row_id})
            self.recorded.append(_Recorded(row_id, stored.alert, transition))
            return
        if alert is None:
            return
        if stored is None:
            self.new.append(alert)
        elif alert != stored.alert:
            self.updated.append(_columns(alert) | {"row_id": row_id})
        if transition is not None:
            self.recorded.append(_Recorded(row_id, alert, transition))

    def store(self, session: so.Session, now_ms: int) -> list[AlertEvent]:
        """Write the changed alerts, the new ones and the transitions, each kind in one
        statement run for many rows; the transitions as stored.

        New rows are not asked back with RETURNING (drivers write that as one long statement
        per thousand rows, which psycopg parses afresh: seconds for a fleet's alerts) but read
        after: new alerts are live and unique by rule and subject, and the transitions are
        those at `now_ms` past the newest stored before (an acknowledgement is no transition
        of a rule's)."""
        # On the connection: plain statements, not the ORM's per-row bookkeeping.
        connection = session.connection()
        if self.updated:
            update = sa.update(AlertRow).where(AlertRow.id == sa.bindparam("row_id"))
            values: dict[str, Any] = {name: sa.bindparam(name) for name in _STEPPED}
            connection.execute(update.values(values), self.updated)
        if self.new:
            connection.execute(sa.insert(AlertRow), [_new_row(alert) for alert in self.new])
        if not self.recorded:
            return []
        made = _new_ids(session, now_ms) if self.new else {}
        before = session.scalar(sa.select(sa.func.max(AlertEvent.id))) or 0
        connection.execute(
            sa.insert(AlertEvent),
            [
                {
                    "alert_id": made[item.alert.key] if item.row_id is None else item.row_id,
                    "transition": item.transition.value,
                    "at_ms": now_ms,
                    "value": item.alert.value,
                    "message": item.alert.message,
                }
                for item in self.recorded
            ],
        )
        stepped = [transition.value for transition in Transition]
        return list(
            session.scalars(
                sa.select(AlertEvent)
                .where(
                    AlertEvent.id > before,
                    AlertEvent.at_ms == now_ms,
                    AlertEvent.transition.in_(stepped),
                )
                .order_by(AlertEvent.id)
            )
        )


def _new_ids(session: so.Session, now_ms: int) -> dict[tuple[str, str, str], int]:
    """The row ids of the live alerts that became active at `now_ms`, by rule and subject."""
    rows = session.execute(
        sa.select(AlertRow.id, AlertRow.rule, AlertRow.query_id, AlertRow.partition).where(
            AlertRow.active_since_ms == now_ms, AlertRow.state.in_(LIVE_ALERT_STATES)
        )
    )
    return {(row.rule, row.query_id, row.partition): row.id for row in rows}


def _columns(alert: Alert) -> dict[str, Any]:
    """The stored columns a pass may change (:data:`_STEPPED`), as `alert` has them."""
    columns = {name: getattr(alert, name) for name in _STEPPED}
    return columns | {"state": alert.state.value}


def _new_row(alert: Alert) -> dict[str, Any]:
    """The columns of a new alert's row."""
    return {
        "rule": alert.rule,
        "query_id": alert.query_id,
        "partition": alert.partition,
        "severity": RULES[alert.rule].severity.value,
        "active_since_ms": alert.active_since_ms,
    } | _columns(alert)


def _live_alerts(session: so.Session) -> dict[tuple[str, str, str], _Stored]:
    """Every pending or firing alert, by rule and subject: read as plain rows, not objects."""
    rows = session.execute(
        sa.select(
            AlertRow.id,
            AlertRow.rule,
            AlertRow.query_id,
            AlertRow.partition,
            AlertRow.state,
            AlertRow.active_since_ms,
            AlertRow.value,
            AlertRow.message,
            AlertRow.fired_at_ms,
            AlertRow.resolved_at_ms,
        ).where(AlertRow.state.in_(LIVE_ALERT_STATES))
    )
    return {
        (rule, query_id, partition): _Stored(
            row_id,
            Alert(rule, query_id, partition, State(state), since, value, message, fired, ended),
        )
        for row_id, rule, query_id, partition, state, since, value, message, fired, ended in rows
    }


def _alerting(live: Mapping[tuple[str, str, str], _Stored]) -> dict[str, frozenset[str]]:
    """By query id, the rules with a live alert on the query itself."""
    rules: dict[str, set[str]] = {}
    for rule, query_id, partition in live:
        if not partition:
            rules.setdefault(query_id, set()).add(rule)
    return {query_id: frozenset(found) for query_id, found in rules.items()}


def _known(live: Mapping[tuple[str, str, str], _Stored]) -> dict[tuple[str, str], set[str]]:
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
