"""One query's bad row fails only that query's reading, never a fleet's.

A fleet is read a chunk of queries at a time; a row that a read or a computation cannot handle
(a JSON value of the wrong shape, a number no type holds, a value a hand edit left) would fail
the whole chunk with it. So a chunk that fails on what it read is read again query by query,
and a query that still fails is set aside as unreadable, with why. A store that cannot be used
at all is not a bad row: that error goes up at once, as before, rather than being met again
for every query.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import sqlalchemy.exc as sa_exc
import sqlalchemy.orm as so

from monitor.store.schema.engine import StoreError, error_reason

# The store cannot be used now: it is down, locked, out of connections or not migrated.
OUTAGES = (
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
    sa_exc.TimeoutError,
    sa_exc.DisconnectionError,
    StoreError,
)

Item = TypeVar("Item")
Read = TypeVar("Read")


def is_outage(error: BaseException) -> bool:
    """Whether `error` says the store cannot be used, rather than that a row is bad."""
    return isinstance(error, OUTAGES)


def unreadable_reason(error: BaseException) -> str:
    """Why a query cannot be read, in one line: the error's kind and what it said."""
    return f"{type(error).__name__}: {error_reason(error)}"


class UnreadableRows(Exception):
    """A query's stored rows that a read cannot handle: why, in its message."""


def read_or_say(session: so.Session, read: Callable[[], Read]) -> Read:
    """What `read` reads of one query; its bad row's error as :class:`UnreadableRows` saying
    why (the reason its status `error` gives); an outage goes up as it is."""
    try:
        return read()
    except Exception as error:
        recover(session, error)
        raise UnreadableRows(unreadable_reason(error)) from error


def recover(session: so.Session, error: BaseException) -> None:
    """Make the session usable again after a bad row's error; an outage goes up."""
    if is_outage(error):
        raise error
    if isinstance(error, sa_exc.DBAPIError):
        # PostgreSQL refuses every statement of a transaction after one failed.
        session.rollback()


def read_apart(
    session: so.Session,
    items: Sequence[Item],
    read: Callable[[Sequence[Item]], Mapping[str, Read]],
    key: Callable[[Item], str],
    unreadable: Callable[[Item, str], Read],
) -> dict[str, Read]:
    """`read(items)`, by query id; if that fails on a bad row, each item alone, so that only
    the items whose own read fails are `unreadable(item, why)`."""
    try:
        return dict(read(items))
    except Exception as error:  # any bad row; an outage goes up in recover
        recover(session, error)
        if len(items) == 1:
            return {key(items[0]): unreadable(items[0], unreadable_reason(error))}
    found: dict[str, Read] = {}
    for item in items:
        try:
            found |= read([item])
        except Exception as error:  # as above, for one query
            recover(session, error)
            found[key(item)] = unreadable(item, unreadable_reason(error))
    return found
