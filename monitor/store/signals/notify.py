"""Tell readers at once that the store changed, instead of leaving them to find out at their
next poll.

On PostgreSQL a writer calls :func:`announce` in its transaction: a `NOTIFY` that the server
delivers when the transaction commits, to every connection listening, on any machine. SQLite
has no notifications across processes; its `PRAGMA data_version` changes when another
connection commits, and is cheap enough to read every few milliseconds. A :class:`ChangeSignal`
waits for either; when it cannot (the store unreachable, moved or gone) it simply waits out
its timeout, so its caller falls back to polling.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.schema.engine import STORE_FAILURES

CHANNEL = "wmon_changes"
# How often a SQLite store's data version is read while waiting.
SQLITE_CHECK_S = 0.005

log = logging.getLogger(__name__)


def announce(session: so.Session) -> None:
    """Within a writing transaction: have its commit wake the store's listeners."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(sa.text("SELECT pg_notify(:channel, '')"), {"channel": CHANNEL})


class ChangeSignal:
    """Waits until the store may have changed; connects, and reconnects, on its own."""

    def __init__(self, engine: Callable[[], sa.Engine]) -> None:
        self._engine = engine
        self._connection: Any = None
        self._version: int | None = None
        self._postgres = False

    def wait(self, timeout: float, stopping: threading.Event) -> bool:
        """Until the store changes (True), `timeout` seconds pass or `stopping` is set."""
        try:
            if self._connection is None:
                self._connect()
            if self._postgres:
                return self._notified(timeout, stopping)
            return self._new_version(timeout, stopping)
        except (*STORE_FAILURES, psycopg.Error, sqlite3.Error, OSError) as error:
            self.close()
            log.debug("wmon: waiting for store changes by polling: %s", error)
        stopping.wait(timeout)
        return False

    def close(self) -> None:
        """Close the connection it waits on, if any."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def _connect(self) -> None:
        engine = self._engine()
        self._postgres = engine.dialect.name == "postgresql"
        if self._postgres:
            arguments, options = engine.dialect.create_connect_args(engine.url)
            self._connection = engine.dialect.connect(*arguments, **options)
            self._connection.autocommit = True
            self._connection.execute(f"LISTEN {CHANNEL}")
        else:
            # Read-only: the signal must never create a store that is not there.
            path = engine.url.database
            self._connection = sqlite3.connect(
                f"file:{path}?mode=ro", uri=True, check_same_thread=False
            )
            self._version = self._data_version()

    def _notified(self, timeout: float, stopping: threading.Event) -> bool:
        deadline = time.monotonic() + timeout
        while not stopping.is_set() and (left := deadline - time.monotonic()) > 0:
            # In slices, so that `stopping` is seen soon.
            if any(True for _ in self._connection.notifies(timeout=min(left, 0.1), stop_after=1)):
                # Commits that came together are one change to the reader: take them all now.
                for _ in self._connection.notifies(timeout=0):
                    pass
                return True
        return False

    def _new_version(self, timeout: float, stopping: threading.Event) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            version = self._data_version()
            if version != self._version:
                self._version = version
                return True
            if stopping.wait(SQLITE_CHECK_S):
                return False
        return False

    def _data_version(self) -> int:
        return int(self._connection.execute("PRAGMA data_version").fetchone()[0])
