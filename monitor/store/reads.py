"""Read the stored history back: queries, their batches and their partitions."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.numbers import shown
from monitor.store.models import (
    LIVE_ALERT_STATES,
    AlertRow,
    Batch,
    Partition,
    Query,
    TimerSnapshotRow,
)
from monitor.store.sql import chunks


class QueryNotFound(LookupError):
    """No stored query has that id or name."""


def list_queries(session: so.Session) -> Sequence[Query]:
    """Every query, the most recently updated first."""
    return session.scalars(sa.select(Query).order_by(Query.updated_at_ms.desc())).all()


def queries_by_id(session: so.Session, ids: Collection[str]) -> Sequence[Query]:
    """The queries with these ids, in no particular order."""
    return session.scalars(sa.select(Query).where(Query.id.in_(ids))).all()


MAX_REF_LENGTH = 255


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def find_query(session: so.Session, ref: str) -> Query:
    """A query by its id or, failing that, by its name (the most recently updated one).

    A ref no stored name could be (too long, with a NUL, which PostgreSQL refuses in a query,
    or not encodable as UTF-8) is not looked up at all.
    """
    if len(ref) > MAX_REF_LENGTH or "\x00" in ref or not _encodable(ref):
        raise QueryNotFound(f"no query with id or name {shown(ref)} (see `wmon queries`)")
    query = session.get(Query, ref)
    if query is None:
        query = session.scalars(
            sa.select(Query).where(Query.name == ref).order_by(Query.updated_at_ms.desc())
        ).first()
    if query is None:
        raise QueryNotFound(f"no query with id or name {shown(ref)} (see `wmon queries`)")
    return query


def stored_query_ids(session: so.Session, query_ids: Sequence[str]) -> set[str]:
    """Those of `query_ids` the store has a query of."""
    found: set[str] = set()
    for chunk in chunks(sorted(set(query_ids))):
        found.update(session.scalars(sa.select(Query.id).where(Query.id.in_(chunk))))
    return found


def recent_batches(session: so.Session, query_id: str, limit: int) -> Sequence[Batch]:
    """The last `limit` batches of a query, oldest first."""
    newest = session.scalars(
        sa.select(Batch)
        .where(Batch.query_id == query_id)
        .order_by(Batch.batch_id.desc())
        .limit(limit)
    ).all()
    return newest[::-1]


def latest_batch_id(session: so.Session, query_id: str) -> int | None:
    """The newest stored batch id of a query, None when it has none."""
    return session.scalar(sa.select(sa.func.max(Batch.batch_id)).where(Batch.query_id == query_id))


def batch_partitions(
    session: so.Session, query_id: str, batch_id: int | None = None
) -> Sequence[Partition]:
    """The partitions of one batch, the query's latest batch by default."""
    batch_id = batch_id if batch_id is not None else latest_batch_id(session, query_id)
    if batch_id is None:
        return []
    return session.scalars(
        sa.select(Partition)
        .where(Partition.query_id == query_id, Partition.batch_id == batch_id)
        .order_by(Partition.source_index, Partition.id)
    ).all()


def recent_timer_snapshots(
    session: so.Session, query_id: str, limit: int
) -> Sequence[TimerSnapshotRow]:
    """The last `limit` pending-timer snapshots of a query, oldest first."""
    newest = session.scalars(
        sa.select(TimerSnapshotRow)
        .where(TimerSnapshotRow.query_id == query_id)
        .order_by(TimerSnapshotRow.taken_at_ms.desc(), TimerSnapshotRow.id.desc())
        .limit(limit)
    ).all()
    return newest[::-1]


@dataclass(frozen=True)
class AlertView:
    """An alert as `wmon alerts` lists it, with its query's name."""

    id: int
    rule: str
    query: str
    partition: str | None
    severity: str
    state: str
    active_since_ms: int
    fired_at_ms: int | None
    resolved_at_ms: int | None
    message: str


def alerts_with_names(
    session: so.Session, live_only: bool, limit: int, query_id: str | None = None
) -> Sequence[Any]:
    """(alert, query name) pairs, the newest first: only live ones, or every one."""
    select = (
        sa.select(AlertRow, Query.name)
        .join(Query, Query.id == AlertRow.query_id)
        .order_by(AlertRow.active_since_ms.desc(), AlertRow.id.desc())
        .limit(limit)
    )
    if live_only:
        select = select.where(AlertRow.state.in_(LIVE_ALERT_STATES))
    if query_id is not None:
        select = select.where(AlertRow.query_id == query_id)
    return session.execute(select).all()


def recent_alerts(session: so.Session, live_only: bool, limit: int) -> list[AlertView]:
    """The newest alerts first: only pending and firing ones, or every one."""
    return [
        AlertView(
            row.id,
            row.rule,
            name or row.query_id,
            row.partition or None,
            row.severity,
            row.state,
            row.active_since_ms,
            row.fired_at_ms,
            row.resolved_at_ms,
            row.message,
        )
        for row, name in alerts_with_names(session, live_only, limit)
    ]
