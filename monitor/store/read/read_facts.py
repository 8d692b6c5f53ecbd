"""The one reader of the facts about queries (:class:`~monitor.health.facts.QueryFacts`), which
the dashboard's status and the alert rules both decide on: one query's, or a fleet's in a fixed
number of statements per :data:`~monitor.store.schema.sql.IN_CHUNK` queries, the same facts either
way (:func:`read_facts` reads a fleet of one).

Windows over time are turned into batch id ranges first (:mod:`monitor.store.read.windows`), so that
every read uses the `(query_id, batch_id, ...)` indexes however long the stored history is.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.health.backlog import Backlogs, Verdict
from monitor.health.facts import FutureDated, PartitionFacts, QueryFacts, Thresholds, TrendPoint
from monitor.health.state_growth import StateGrowth
from monitor.health.trigger_pace import TriggerPace
from monitor.store.packed import batch_offsets
from monitor.store.packed.batch_offsets import StoredPartition
from monitor.store.read.backlog import fleet_backlogs, query_runs
from monitor.store.read.batches import latest_batches
from monitor.store.read.drop_causes import future_dated_since
from monitor.store.read.state_growth import fleet_state
from monitor.store.read.trigger_pace import fleet_pace
from monitor.store.read.windows import LateCount, late_by_partitions, rewinds_since
from monitor.store.schema.isolation import read_apart
from monitor.store.schema.models import Batch, BatchOffsets, Query
from monitor.store.schema.sql import among, chunks, newest_of

TREND_POINTS = 30


@dataclass(frozen=True)
class FactsAsked:
    """A query whose facts are read: the thresholds its rules set, and `alerting`, the rules
    whose alert on the query itself is live."""

    query: Query
    thresholds: Thresholds
    alerting: frozenset[str] = frozenset()


def read_facts(
    session: so.Session,
    query: Query,
    batch: Batch | None,
    now_ms: int,
    thresholds: Thresholds,
    alerting: frozenset[str] = frozenset(),
) -> QueryFacts:
    """What is known of `query` at `now_ms`, `batch` being its latest (:func:`latest_batch`,
    which the caller has read for its own use too): late records and rewinds over the
    thresholds' windows; `alerting`, the rules whose alert on the query itself is live."""
    latest = {query.id: batch} if batch is not None else {}
    return facts_of(session, [FactsAsked(query, thresholds, alerting)], latest, now_ms)[query.id]


def fleet_facts(
    session: so.Session, asked: Sequence[FactsAsked], now_ms: int, overview: bool = True
) -> dict[str, QueryFacts]:
    """The facts of every asked query at `now_ms`, by query id, a chunk of queries at a time;
    a query whose rows cannot be read has facts that say so (:func:`unreadable`). Without
    `overview`, what only the overview shows is left out, not read: their trends (up to 30
    batches of every query) and their backlogs' ages (look-ups of batches per query behind)."""
    facts: dict[str, QueryFacts] = {}
    for chunk in chunks(asked):
        facts |= read_apart(
            session,
            chunk,
            lambda part: _read_facts(session, part, now_ms, overview),
            lambda item: item.query.id,
            unreadable,
        )
    return facts


def _read_facts(
    session: so.Session, asked: Sequence[FactsAsked], now_ms: int, overview: bool
) -> dict[str, QueryFacts]:
    latest = latest_batches(session, [item.query.id for item in asked])
    return facts_of(session, asked, latest, now_ms, overview)


def unreadable(asked: FactsAsked, reason: str) -> QueryFacts:
    """The facts of a query whose rows could not be read or judged: its stored state, and
    why."""
    return _stored(asked, unreadable=reason)


def _stored(asked: FactsAsked, **figures: Any) -> QueryFacts:
    """The query's facts: its stored state, with `figures` of its batches."""
    query = asked.query
    return QueryFacts(
        query_id=query.id,
        name=query.name,
        status=query.status,
        last_progress_ms=query.updated_at_ms,
        ended_at_ms=query.terminated_at_ms,
        exception=query.exception,
        clock_ahead_ms=query.clock_ahead_ms,
        clock_behind_ms=query.clock_behind_ms,
        running_batch_id=query.running_batch_id,
        running_since_ms=query.running_since_ms,
        thresholds=asked.thresholds,
        alerting=asked.alerting,
        **figures,
    )


@dataclass(frozen=True)
class _WindowReads:
    """What a chunk's reads found, by query id."""

    rewound: dict[str, tuple[bool, set[str]]]
    late: dict[str, dict[str, LateCount]]
    future: dict[str, dict[str, FutureDated]]
    partitions: dict[str, list[StoredPartition]]
    trends: dict[str, list[TrendPoint]]
    backlogs: dict[str, Backlogs]
    state: dict[str, tuple[StateGrowth, ...]]
    pace: dict[str, TriggerPace]


def facts_of(
    session: so.Session,
    asked: Sequence[FactsAsked],
    latest: Mapping[str, Batch],
    now_ms: int,
    overview: bool = True,
) -> dict[str, QueryFacts]:
    """The facts of at most IN_CHUNK queries at `now_ms`, by query id, `latest` holding their
    latest batches (:func:`latest_batches`): each query over its own thresholds' windows;
    what only the overview shows (the trends, the backlogs' ages) only with `overview`."""
    ids = [item.query.id for item in asked]
    found = _WindowReads(
        rewinds_since(session, _bounds(asked, now_ms, "rewound")),
        late_by_partitions(session, _bounds(asked, now_ms, "late")),
        future_dated_since(session, _bounds(asked, now_ms, "future")),
        latest_partitions(session, ids),
        trends(session, ids) if overview else {},
        _backlogs(session, asked, latest, now_ms, overview),
        fleet_state(session, latest),
        fleet_pace(session, latest),
    )
    return {item.query.id: _facts(item, latest.get(item.query.id), found) for item in asked}


def _backlogs(
    session: so.Session,
    asked: Sequence[FactsAsked],
    latest: Mapping[str, Batch],
    now_ms: int,
    ages: bool,
) -> dict[str, Backlogs]:
    """The backlog of each query's latest batch, by query id (store.backlog)."""
    running = {
        item.query.id: query_runs(item.query, now_ms, item.thresholds.silence_ms)
        for item in asked
        if item.query.id in latest
    }
    newest = {query_id: latest[query_id] for query_id in running}
    return fleet_backlogs(session, newest, now_ms, running, ages)


def _bounds(asked: Sequence[FactsAsked], now_ms: int, window: str) -> dict[str, int]:
    """Where each query's `window` (late, rewound, future) starts, by query id."""
    return {
        item.query.id: now_ms - getattr(item.thresholds, f"{window}_window_ms") for item in asked
    }


def _facts(asked: FactsAsked, batch: Batch | None, found: _WindowReads) -> QueryFacts:
    query_id = asked.query.id
    watermark_rewound, rewound = found.rewound[query_id]
    rows = found.partitions.get(query_id, []) if batch else []
    late, future = found.late.get(query_id, {}), found.future.get(query_id, {})
    backlog = found.backlogs.get(query_id)
    verdicts = {} if backlog is None else {p: b.verdict for p, b in backlog.by_partition().items()}
    return _stored(
        asked,
        batch_id=batch.batch_id if batch else None,
        watermark_ms=batch.watermark_ms if batch else None,
        watermark_stalled=bool(batch and batch.watermark_stalled),
        watermark_rewound=watermark_rewound,
        skew_ms=batch.watermark_skew_ms if batch else None,
        partitions=_partitions(rows, late, rewound, future, verdicts),
        backlog=backlog,
        state=found.state.get(query_id, ()) if batch else (),
        pace=found.pace.get(query_id) if batch else None,
        trend=tuple(found.trends.get(query_id, [])),
    )


def _partitions(
    rows: Sequence[StoredPartition],
    late: Mapping[str, LateCount],
    rewound: set[str],
    future: Mapping[str, FutureDated],
    verdicts: Mapping[str, Verdict | None],
) -> tuple[PartitionFacts, ...]:
    """The facts of every partition in the latest batch, or with late records, a rewind or
    future-dated records in the windows."""
    by_name = {row.partition: row for row in rows}
    names = sorted(set(by_name) | set(late) | rewound | set(future))
    return tuple(
        _partition(
            name,
            by_name.get(name),
            late.get(name, _NONE),
            name in rewound,
            future.get(name),
            verdicts.get(name),
        )
        for name in names
    )


_NONE = LateCount(0, 0)


def _partition(
    name: str,
    row: StoredPartition | None,
    late: LateCount,
    rewound: bool,
    future: FutureDated | None,
    verdict: Verdict | None,
) -> PartitionFacts:
    if row is None:
        return PartitionFacts(
            name,
            rewound=rewound,
            late_records=late.late,
            records=late.records,
            in_latest_batch=False,
            future=future,
        )
    return PartitionFacts(
        name,
        row.idle,
        row.stalled,
        rewound,
        row.offset_lag,
        late_records=late.late,
        records=late.records,
        future=future,
        verdict=verdict,
        topic=row.topic,
    )


def latest_partitions(
    session: so.Session, query_ids: Sequence[str]
) -> dict[str, list[StoredPartition]]:
    """The partitions of each query's latest batch, in source and storage order, by query id."""
    newest = newest_of(Batch.__table__, "batch_id", query_ids)
    found: dict[str, list[StoredPartition]] = defaultdict(list)
    for partition in batch_offsets.at_newest(session, newest):
        found[partition.query_id].append(partition)
    return found


def _trend_start(points: int) -> sa.ColumnElement[int]:
    """The oldest of a query's last `points` batch ids, correlated with the queries table."""
    queries = Query.__table__
    ids = sa.select(Batch.batch_id).where(Batch.query_id == queries.c.id)
    nth = ids.order_by(Batch.batch_id.desc()).limit(1).offset(points - 1).scalar_subquery()
    oldest = ids.order_by(Batch.batch_id).limit(1).scalar_subquery()
    return sa.func.coalesce(nth, oldest)


def trends(
    session: so.Session, query_ids: Sequence[str], points: int = TREND_POINTS
) -> dict[str, list[TrendPoint]]:
    """Each query's last `points` batches: watermark and total offset lag, oldest first."""
    queries = Query.__table__
    start = (
        sa.select(queries.c.id.label("query_id"), _trend_start(points).label("start"))
        .where(among(queries.c.id, query_ids))
        .subquery()
    )
    rows = session.execute(
        sa.select(
            Batch.query_id,
            Batch.batch_id,
            Batch.batch_time_ms,
            Batch.watermark_ms,
            BatchOffsets.offset_lag,
        )
        .join(start, sa.and_(Batch.query_id == start.c.query_id, Batch.batch_id >= start.c.start))
        .outerjoin(
            BatchOffsets,
            sa.and_(
                BatchOffsets.query_id == Batch.query_id, BatchOffsets.batch_id == Batch.batch_id
            ),
        )
        .order_by(Batch.query_id, Batch.batch_id)
    )
    found: dict[str, list[TrendPoint]] = defaultdict(list)
    for query_id, b, t, w, lag in rows:
        found[query_id].append(TrendPoint(b, t, w, None if lag is None else int(lag)))
    return found


def trend(session: so.Session, query_id: str, points: int = TREND_POINTS) -> list[TrendPoint]:
    """The last `points` batches: watermark and total offset lag, oldest first."""
    return trends(session, [query_id], points).get(query_id, [])
