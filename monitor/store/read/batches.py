"""A query's stored batches: the latest of one query or of many, the recent ones, those after a
given batch for a reader catching up, some by row id, and the rows each dropped by watermark."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.schema.models import Batch, StateOperator
from monitor.store.schema.sql import newest_of
from monitor.store.schema.whole_sum import whole_sum

# At most this many of a query's batches are read for a connection catching up.
CATCH_UP_LIMIT = 1_000


def latest_batch(session: so.Session, query_id: str) -> Batch | None:
    """The query's batch with the highest batch id."""
    return session.scalars(
        sa.select(Batch).where(Batch.query_id == query_id).order_by(Batch.batch_id.desc()).limit(1)
    ).first()


def batch_of(session: so.Session, query_id: str, batch_id: int) -> Batch | None:
    """The query's batch `batch_id`, None when it has none such."""
    return session.scalars(
        sa.select(Batch).where(Batch.query_id == query_id, Batch.batch_id == batch_id)
    ).first()


def latest_batches(session: so.Session, query_ids: Sequence[str]) -> dict[str, Batch]:
    """Each query's batch with the highest batch id, by query id; those with none left out."""
    newest = newest_of(Batch.__table__, "batch_id", query_ids)
    batches = session.scalars(
        sa.select(Batch)
        .join(
            newest, sa.and_(Batch.query_id == newest.c.query_id, Batch.batch_id == newest.c.newest)
        )
    )
    return {batch.query_id: batch for batch in batches}


def recent_batches(session: so.Session, query_id: str, limit: int) -> Sequence[Batch]:
    """The last `limit` batches of a query, oldest first."""
    newest = session.scalars(
        sa.select(Batch)
        .where(Batch.query_id == query_id)
        .order_by(Batch.batch_id.desc())
        .limit(limit)
    ).all()
    return newest[::-1]


def batches_after(
    session: so.Session, query_id: str, after_batch: int | None
) -> tuple[Sequence[Batch], bool]:
    """The newest CATCH_UP_LIMIT batches of a query after `after_batch`, newest first, and
    whether that is all of them; None asks for none.

    When the query's newest batch is below `after_batch` (a restart from an older checkpoint
    superseded what the page has), the answer is none, and not complete.
    """
    if after_batch is None:
        return [], True
    latest = latest_batch(session, query_id)
    if latest is not None and latest.batch_id < after_batch:
        return [], False
    newest = session.scalars(
        sa.select(Batch)
        .where(Batch.query_id == query_id, Batch.batch_id > after_batch)
        .order_by(Batch.batch_id.desc())
        .limit(CATCH_UP_LIMIT + 1)
    ).all()
    return newest[:CATCH_UP_LIMIT], len(newest) <= CATCH_UP_LIMIT


def batches_by_id(session: so.Session, ids: Sequence[int]) -> Sequence[Batch]:
    """The batches with these row ids, in the order they were stored."""
    return session.scalars(sa.select(Batch).where(Batch.id.in_(ids)).order_by(Batch.id)).all()


def rows_dropped(session: so.Session, query_id: str, batch_ids: Collection[int]) -> dict[int, int]:
    """Rows dropped by watermark per batch, summed over its stateful operators."""
    rows = session.execute(
        sa.select(StateOperator.batch_id, whole_sum(StateOperator.num_rows_dropped_by_watermark))
        .where(StateOperator.query_id == query_id, StateOperator.batch_id.in_(batch_ids))
        .group_by(StateOperator.batch_id)
    )
    return {batch_id: int(dropped or 0) for batch_id, dropped in rows}
