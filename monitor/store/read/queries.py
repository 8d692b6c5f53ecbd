"""The stored queries: every one, those a scrape exports, some by id, one by its id or name."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.events import MAX_NAME
from monitor.health.facts import RUNNING
from monitor.numbers import shown
from monitor.store.schema.models import Query
from monitor.store.schema.sql import chunks


class QueryNotFound(LookupError):
    """No stored query has that id or name."""


def list_queries(session: so.Session) -> Sequence[Query]:
    """Every query, the most recently updated first."""
    return session.scalars(sa.select(Query).order_by(Query.updated_at_ms.desc())).all()


def exported_queries(session: so.Session, now_ms: int, keep_ended_ms: int) -> Sequence[Query]:
    """The queries running, or ended less than `keep_ended_ms` ago, by id: those an
    exporter's scrape shows."""
    return session.scalars(
        sa.select(Query)
        .where(
            sa.or_(
                Query.status.in_(RUNNING),
                Query.terminated_at_ms >= now_ms - keep_ended_ms,
            )
        )
        .order_by(Query.id)
    ).all()


def queries_by_id(session: so.Session, ids: Collection[str]) -> Sequence[Query]:
    """The queries with these ids, in no particular order."""
    return session.scalars(sa.select(Query).where(Query.id.in_(ids))).all()


def query_name(session: so.Session, query_id: str) -> str | None:
    """The name of the query with this id; None when it has none or there is no such query."""
    return session.scalar(sa.select(Query.name).where(Query.id == query_id))


def replaced_by(session: so.Session, query_id: str) -> str | None:
    """The query that replaced this one in a reset of its pipeline flow, if one did."""
    return session.scalars(sa.select(Query.id).where(Query.replaces_id == query_id)).first()


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def find_query(session: so.Session, ref: str) -> Query:
    """A query by its id or, failing that, by its name (the most recently updated one).

    A ref no stored id or name could be is not looked up at all: longer than MAX_NAME (the
    longest name a way in stores, so a name stored is always found), with a NUL (which
    PostgreSQL refuses in a query), or not encodable as UTF-8.
    """
    if len(ref) > MAX_NAME or "\x00" in ref or not _encodable(ref):
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
