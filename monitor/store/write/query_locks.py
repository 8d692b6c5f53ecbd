"""Writers to one query take turns, on both stores: a group of events reads its queries'
latest state and writes after it, so two groups of one query must not interleave.

No writer waits without end: a lock held elsewhere (another writer, an operator's LOCK
TABLE, a long migration) or a statement that hangs fails the write after a bound, as a store
that is unavailable for now, and the write is retried whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import sqlalchemy as sa
import sqlalchemy.orm as so

# How long a write waits for a lock, and how long one statement may run, on PostgreSQL; on
# SQLite the busy timeout (store.engine) bounds the wait for the write lock alike.
LOCK_TIMEOUT_MS = 5_000
STATEMENT_TIMEOUT_MS = 30_000


def _key(query_id: str) -> int:
    """A query's advisory lock key: 64 bits of a hash that every process computes alike."""
    digest = hashlib.blake2b(query_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def lock_queries(session: so.Session, query_ids: Iterable[str]) -> None:
    """Wait, at the start of the session's transaction, until no other writer holds any of
    these queries; held until the transaction ends.

    SQLite has one writer at a time: the transaction takes the write lock before it reads
    (it waits for it up to the busy timeout). PostgreSQL locks each query alone, in one
    order for every writer, so that two groups of different queries never wait on each other.
    """
    connection = session.connection()
    if connection.dialect.name == "sqlite":
        connection.exec_driver_sql("BEGIN IMMEDIATE")
        return
    connection.exec_driver_sql(f"SET LOCAL lock_timeout = {int(LOCK_TIMEOUT_MS)}")
    connection.exec_driver_sql(f"SET LOCAL statement_timeout = {int(STATEMENT_TIMEOUT_MS)}")
    keys = sorted({_key(query_id) for query_id in query_ids})
    if keys:
        connection.execute(
            sa.text(
                "SELECT count(pg_advisory_xact_lock(k)) "
                "FROM (SELECT unnest(CAST(:keys AS bigint[])) AS k ORDER BY 1) AS ordered"
            ),
            {"keys": keys},
        )
