"""The live state of a query as the dashboard shows it: its facts, latest batch, partitions,
late records and pending timers."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy.orm as so

from monitor.health.facts import QueryFacts, Thresholds
from monitor.store.alerts import live_rules
from monitor.store.batches import latest_batches
from monitor.store.isolation import read_apart
from monitor.store.models import (
    Batch,
    Query,
    TimerSnapshotRow,
)
from monitor.store.read_facts import Asked, facts_of, unreadable
from monitor.store.sql import chunks
from monitor.store.timers import latest_timers


@dataclass(frozen=True)
class QuerySummary:
    """What the overview shows of one query: its facts, latest batch and pending timers."""

    query: Query
    latest: Batch | None
    facts: QueryFacts
    timers: TimerSnapshotRow | None


def summarize(
    session: so.Session, query: Query, now_ms: int, thresholds: Thresholds
) -> QuerySummary:
    """The overview of one query at `now_ms`, its facts read over the thresholds' windows."""
    return summaries(session, [Asked(query, thresholds)], now_ms)[0]


def summaries(session: so.Session, asked: Sequence[Asked], now_ms: int) -> list[QuerySummary]:
    """The overview of each asked query at `now_ms`, in their order, a chunk at a time: a
    fixed number of statements per chunk, however many queries. A query whose rows cannot be
    read has only its stored state, and facts that say why."""
    found: list[QuerySummary] = []
    for chunk in chunks(asked):
        read = read_apart(
            session,
            chunk,
            lambda part: _summaries(session, part, now_ms),
            lambda item: item.query.id,
            _unreadable,
        )
        found += [read[item.query.id] for item in chunk]
    return found


def _unreadable(asked: Asked, reason: str) -> QuerySummary:
    return QuerySummary(asked.query, None, unreadable(asked, reason), None)


def _summaries(session: so.Session, asked: Sequence[Asked], now_ms: int) -> dict[str, QuerySummary]:
    ids = [item.query.id for item in asked]
    # A live stall alert, held by its keep_firing_for, keeps the status stalled too.
    alerting = live_rules(session, ids)
    asked = [
        dataclasses.replace(item, alerting=item.alerting | alerting.get(key, frozenset()))
        for item, key in zip(asked, ids, strict=True)
    ]
    latest = latest_batches(session, ids)
    facts = facts_of(session, asked, latest, now_ms)
    timers = latest_timers(session, ids)
    return {
        key: QuerySummary(item.query, latest.get(key), facts[key], timers.get(key))
        for item, key in zip(asked, ids, strict=True)
    }
