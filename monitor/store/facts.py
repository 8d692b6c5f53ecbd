"""The one reader of the facts about a query (:class:`~monitor.health.facts.QueryFacts`), which
the dashboard's status and the alert rules both decide on.

Windows over time are turned into batch id ranges first (:mod:`monitor.store.summary`), so that
every read uses the `(query_id, batch_id, ...)` indexes however long the stored history is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.health.facts import FutureDated, PartitionFacts, QueryFacts, Thresholds, TrendPoint
from monitor.store.lateness import future_dated
from monitor.store.models import Batch, Partition, PartitionEventTime, Query
from monitor.store.reads import batch_partitions
from monitor.store.sums import whole_sum

TREND_POINTS = 30


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
    since_rewound = now_ms - thresholds.rewound_window_ms
    watermark_rewound, rewound = rewound_since(session, query.id, since_rewound)
    late = late_by_partition(session, query.id, now_ms - thresholds.late_window_ms)
    future = future_dated(session, query.id, now_ms - thresholds.future_window_ms)
    rows = batch_partitions(session, query.id, batch.batch_id) if batch else []
    return QueryFacts(
        query_id=query.id,
        name=query.name,
        status=query.status,
        last_progress_ms=query.updated_at_ms,
        ended_at_ms=query.terminated_at_ms,
        exception=query.exception,
        watermark_ms=batch.watermark_ms if batch else None,
        watermark_stalled=bool(batch and batch.watermark_stalled),
        watermark_rewound=watermark_rewound,
        skew_ms=batch.watermark_skew_ms if batch else None,
        thresholds=thresholds,
        partitions=_partitions(rows, late, rewound, future),
        trend=tuple(trend(session, query.id)),
        alerting=alerting,
    )


def _partitions(
    rows: Sequence[Partition],
    late: Mapping[str, int],
    rewound: set[str],
    future: Mapping[str, FutureDated],
) -> tuple[PartitionFacts, ...]:
    """The facts of every partition in the latest batch, or with late records, a rewind or
    future-dated records in the windows."""
    by_name = {row.partition: row for row in rows}
    names = sorted(set(by_name) | set(late) | rewound | set(future))
    return tuple(
        _partition(name, by_name.get(name), late.get(name, 0), name in rewound, future.get(name))
        for name in names
    )


def _partition(
    name: str, row: Partition | None, late: int, rewound: bool, future: FutureDated | None
) -> PartitionFacts:
    if row is None:
        return PartitionFacts(
            name, rewound=rewound, late_records=late, in_latest_batch=False, future=future
        )
    return PartitionFacts(name, row.idle, row.stalled, rewound, row.offset_lag, late, future=future)


def trend(session: so.Session, query_id: str, points: int = TREND_POINTS) -> list[TrendPoint]:
    """The last `points` batches: watermark and total offset lag, oldest first."""
    recent = (
        sa.select(Batch.batch_id)
        .where(Batch.query_id == query_id)
        .order_by(Batch.batch_id.desc())
        .limit(points)
    )
    rows = session.execute(
        sa.select(
            Batch.batch_id,
            Batch.batch_time_ms,
            Batch.watermark_ms,
            whole_sum(Partition.offset_lag),
        )
        .outerjoin(
            Partition,
            sa.and_(Partition.query_id == Batch.query_id, Partition.batch_id == Batch.batch_id),
        )
        .where(Batch.query_id == query_id, Batch.batch_id.in_(recent))
        .group_by(Batch.batch_id, Batch.batch_time_ms, Batch.watermark_ms)
        .order_by(Batch.batch_id)
    )
    return [TrendPoint(b, t, w, None if lag is None else int(lag)) for b, t, w, lag in rows]


def latest_batch(session: so.Session, query_id: str) -> Batch | None:
    """The query's batch with the highest batch id."""
    return session.scalars(
        sa.select(Batch).where(Batch.query_id == query_id).order_by(Batch.batch_id.desc()).limit(1)
    ).first()


def first_batch_since(session: so.Session, query_id: str, since_ms: int) -> int | None:
    """The id of the query's first batch at or after `since_ms`, None when there is none."""
    # Read on its own: as a literal, the batch id lets PostgreSQL plan an index range scan.
    return session.scalar(
        sa.select(Batch.batch_id)
        .where(Batch.query_id == query_id, Batch.batch_time_ms >= since_ms)
        .order_by(Batch.batch_time_ms, Batch.batch_id)
        .limit(1)
    )


def late_by_partition(session: so.Session, query_id: str, since_ms: int) -> dict[str, int]:
    """Late records per partition in the batches stored from `since_ms` on."""
    first = first_batch_since(session, query_id, since_ms)
    if first is None:
        return {}
    rows = session.execute(
        sa.select(PartitionEventTime.partition, whole_sum(PartitionEventTime.late_records))
        .where(PartitionEventTime.query_id == query_id, PartitionEventTime.batch_id >= first)
        .group_by(PartitionEventTime.partition)
    )
    return {partition: int(late or 0) for partition, late in rows}


def rewound_since(session: so.Session, query_id: str, since_ms: int) -> tuple[bool, set[str]]:
    """Whether the watermark went back in the batches stored from `since_ms` on, and the
    partitions that did."""
    first = first_batch_since(session, query_id, since_ms)
    if first is None:
        return False, set()
    watermark = session.scalar(
        sa.select(
            sa.exists().where(
                Batch.query_id == query_id, Batch.batch_id >= first, Batch.watermark_rewound
            )
        )
    )
    partitions = session.scalars(
        sa.select(Partition.partition)
        .distinct()
        .where(Partition.query_id == query_id, Partition.batch_id >= first, Partition.rewound)
    )
    return bool(watermark), set(partitions)
