"""A query now, read once: its facts, latest batch, pending timers and live alerts, and its
judgment (:mod:`monitor.health.judgment`), which the overview, the query page, the CLI, the
API and `/metrics` only format."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy.orm as so

from monitor.health.facts import QueryFacts, Thresholds
from monitor.health.judgment import Judgment, LiveAlert, judge
from monitor.health.status import Meanings
from monitor.store.read.alerts import live_alerts
from monitor.store.read.batches import latest_batches
from monitor.store.read.read_facts import FactsAsked, facts_of, unreadable
from monitor.store.read.timers import latest_timers
from monitor.store.schema.isolation import read_apart
from monitor.store.schema.models import (
    Batch,
    Query,
    TimerSnapshotRow,
)
from monitor.store.schema.sql import chunks


@dataclass(frozen=True)
class QuerySummary:
    """One query now: its facts, latest batch, pending timers and live alerts, judged."""

    query: Query
    latest: Batch | None
    facts: QueryFacts
    timers: TimerSnapshotRow | None
    alerts: tuple[LiveAlert, ...]
    judgment: Judgment


def summarize(
    session: so.Session, query: Query, now_ms: int, thresholds: Thresholds, meanings: Meanings
) -> QuerySummary:
    """The overview of one query at `now_ms`, its facts read over the thresholds' windows,
    its alerts weighed by what their rules mean."""
    return summaries(session, [FactsAsked(query, thresholds)], now_ms, meanings)[0]


def summaries(
    session: so.Session,
    asked: Sequence[FactsAsked],
    now_ms: int,
    meanings: Meanings,
    overview: bool = True,
) -> list[QuerySummary]:
    """The summary of each asked query at `now_ms`, in their order, a chunk at a time: a
    fixed number of statements per chunk, however many queries; its live alerts weighed by
    what their rules mean. A query whose rows cannot be read has only its stored state, and
    facts that say why. Without `overview`, what only the overview shows (trends, backlogs'
    ages) is not read (read_facts.fleet_facts)."""
    found: list[QuerySummary] = []
    for chunk in chunks(asked):
        read = read_apart(
            session,
            chunk,
            lambda part: _summaries(session, part, now_ms, meanings, overview),
            lambda item: item.query.id,
            lambda item, reason: unreadable_summary(item, reason, now_ms),
        )
        found += [read[item.query.id] for item in chunk]
    return found


def judged(
    query: Query,
    latest: Batch | None,
    facts: QueryFacts,
    timers: TimerSnapshotRow | None,
    alerts: Sequence[LiveAlert],
    now_ms: int,
    meanings: Meanings,
) -> QuerySummary:
    """The summary of a query read at `now_ms`, with its judgment."""
    judgment = judge(facts, alerts, now_ms, meanings)
    return QuerySummary(query, latest, facts, timers, tuple(alerts), judgment)


def unreadable_summary(asked: FactsAsked, reason: str, now_ms: int) -> QuerySummary:
    """The summary of a query whose rows cannot be read or judged: its stored state, and why;
    no alert of it is weighed, so no rule's meaning either."""
    return judged(asked.query, None, unreadable(asked, reason), None, (), now_ms, {})


def _summaries(
    session: so.Session,
    asked: Sequence[FactsAsked],
    now_ms: int,
    meanings: Meanings,
    overview: bool,
) -> dict[str, QuerySummary]:
    ids = [item.query.id for item in asked]
    alerts = live_alerts(session, ids)
    # A live stall alert, held by its keep_firing_for, keeps the status stalled too.
    asked = [
        dataclasses.replace(
            item, alerting=item.alerting | {alert.rule for alert in alerts.get(key, ())}
        )
        for item, key in zip(asked, ids, strict=True)
    ]
    latest = latest_batches(session, ids)
    facts = facts_of(session, asked, latest, now_ms, overview)
    timers = latest_timers(session, ids)
    return {
        key: judged(
            item.query,
            latest.get(key),
            facts[key],
            timers.get(key),
            alerts.get(key, ()),
            now_ms,
            meanings,
        )
        for item, key in zip(asked, ids, strict=True)
    }
