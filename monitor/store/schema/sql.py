"""SQL building blocks shared by the store's reads and writes: chunks of query ids short
enough for one statement, a query id's own value as SQL, membership in a list as one parameter
on PostgreSQL, and each query's newest row of a table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa
import sqlalchemy.orm as so
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.visitors import InternalTraversal

from monitor.store.schema.models import Query

# Keys per `IN (...)`: few enough for one statement on every store.
IN_CHUNK = 500


Key = TypeVar("Key")


def chunks(keys: Sequence[Key], size: int = IN_CHUNK) -> list[list[Key]]:
    """`keys` in lists short enough for one `IN (...)` on every store."""
    return [list(keys[start : start + size]) for start in range(0, len(keys), size)]


def per_query(
    query_id: sa.ColumnElement[str] | so.InstrumentedAttribute[str], values: Mapping[str, int]
) -> sa.ColumnElement[int]:
    """Each query's own value (a bound of its window), as SQL over the column `query_id`: the
    value itself when the queries share it, so that a store plans it as a constant."""
    by_value: dict[int, list[str]] = {}
    for key, value in values.items():
        by_value.setdefault(value, []).append(key)
    if len(by_value) == 1:
        return sa.literal(next(iter(by_value)), sa.BigInteger)
    return sa.case(*((among(query_id, keys), value) for value, keys in by_value.items()))


class _Among(sa.ColumnElement[Any]):
    """`column IN (values)`; on PostgreSQL `column = ANY(values)`. Both parameters are kept,
    so that a statement compiled once is reused with the values of each execution."""

    type = sa.types.NullType()  # a condition: no "= 1" after it where booleans are numbers
    _traverse_internals = [
        ("column", InternalTraversal.dp_clauseelement),
        ("listed", InternalTraversal.dp_clauseelement),
        ("array", InternalTraversal.dp_clauseelement),
    ]

    def __init__(self, column: sa.ColumnElement[Any], values: Sequence[Any]) -> None:
        values = list(values)
        self.column = column
        self.listed: sa.BindParameter[Any] = sa.bindparam(None, values, expanding=True)
        self.array = sa.bindparam(None, values, type_=postgresql.ARRAY(column.type))


@compiles(_Among)
def _in_list(among: _Among, compiler: Any, **options: Any) -> str:
    return str(compiler.process(among.column.in_(among.listed), **options))


@compiles(_Among, "postgresql")
def _any_of(among: _Among, compiler: Any, **options: Any) -> str:
    return str(compiler.process(among.column == sa.any_(among.array), **options))


def among(column: Any, values: Sequence[Any]) -> sa.ColumnElement[bool]:
    """Whether `column` holds one of `values`. On PostgreSQL the values go as one array
    (`= ANY(:values)`): a statement with hundreds of parameters would cost its driver more to
    parse than the store to run."""
    return _Among(column, values)


def newest_of(
    table: sa.FromClause, column: str, query_ids: Sequence[str], below: int | None = None
) -> sa.Subquery:
    """Each of the queries with the largest value of `column` in `table` (a table of rows
    with a query_id; the column a batch id or a snapshot's time), or the largest `below` a
    bound, as (query_id, newest): a look-up of the index on (query_id, column) per query,
    however many rows are stored."""
    queries = Query.__table__
    newest = sa.select(sa.func.max(table.c[column])).where(table.c.query_id == queries.c.id)
    if below is not None:
        newest = newest.where(table.c[column] < below)
    return (
        sa.select(queries.c.id.label("query_id"), newest.scalar_subquery().label("newest"))
        .where(among(queries.c.id, query_ids))
        .subquery()
    )


def rows_at_newest(
    session: so.Session, table: sa.FromClause, column: str, newest: sa.Subquery, *order: Any
) -> sa.Result[Any]:
    """The rows of `table` whose `column` holds their query's value in `newest` (from
    :func:`newest_of`), in `order`."""
    return session.execute(
        sa.select(table)
        .join(
            newest,
            sa.and_(table.c.query_id == newest.c.query_id, table.c[column] == newest.c.newest),
        )
        .order_by(*order)
    )
