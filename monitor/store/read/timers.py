"""Stored pending-timer snapshots: a query's recent ones, each query's newest, some by row id."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.schema.models import TimerSnapshotRow
from monitor.store.schema.sql import newest_of


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


def latest_timers(session: so.Session, query_ids: Sequence[str]) -> dict[str, TimerSnapshotRow]:
    """Each query's newest pending-timer snapshot, by query id; those with none left out."""
    newest = newest_of(TimerSnapshotRow.__table__, "taken_at_ms", query_ids)
    rows = session.scalars(
        sa.select(TimerSnapshotRow)
        .join(
            newest,
            sa.and_(
                TimerSnapshotRow.query_id == newest.c.query_id,
                TimerSnapshotRow.taken_at_ms == newest.c.newest,
            ),
        )
        .order_by(TimerSnapshotRow.id)
    )
    # Of two taken at the same time, the later stored.
    return {row.query_id: row for row in rows}


def timer_snapshots_by_id(session: so.Session, ids: Sequence[int]) -> Sequence[TimerSnapshotRow]:
    """The pending-timer snapshots with these row ids, in the order they were stored."""
    return session.scalars(
        sa.select(TimerSnapshotRow)
        .where(TimerSnapshotRow.id.in_(ids))
        .order_by(TimerSnapshotRow.id)
    ).all()
