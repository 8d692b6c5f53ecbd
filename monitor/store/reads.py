"""Read the stored history back: queries, their batches and their partitions."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.models import Batch, Partition, Query


class QueryNotFound(LookupError):
    """No stored query has that id or name."""


def list_queries(session: so.Session) -> Sequence[Query]:
    """Every query, the most recently updated first."""
    return session.scalars(sa.select(Query).order_by(Query.updated_at_ms.desc())).all()


def find_query(session: so.Session, ref: str) -> Query:
    """A query by its id or, failing that, by its name (the most recently updated one)."""
    query = session.get(Query, ref)
    if query is None:
        query = session.scalars(
            sa.select(Query).where(Query.name == ref).order_by(Query.updated_at_ms.desc())
        ).first()
    if query is None:
        raise QueryNotFound(f"no query with id or name {ref!r} (see `wmon queries`)")
    return query


def recent_batches(session: so.Session, query_id: str, limit: int) -> Sequence[Batch]:
    """The last `limit` batches of a query, oldest first."""
    newest = session.scalars(
        sa.select(Batch)
        .where(Batch.query_id == query_id)
        .order_by(Batch.batch_id.desc())
        .limit(limit)
    ).all()
    return newest[::-1]


def batch_partitions(
    session: so.Session, query_id: str, batch_id: int | None = None
) -> Sequence[Partition]:
    """The partitions of one batch, the query's latest batch by default."""
    if batch_id is None:
        batch_id = session.scalar(
            sa.select(sa.func.max(Batch.batch_id)).where(Batch.query_id == query_id)
        )
        if batch_id is None:
            return []
    return session.scalars(
        sa.select(Partition)
        .where(Partition.query_id == query_id, Partition.batch_id == batch_id)
        .order_by(Partition.source_index, Partition.id)
    ).all()
