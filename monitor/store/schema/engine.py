"""Create engines for the store: SQLite in WAL mode by default, PostgreSQL in production."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

import sqlalchemy as sa
import sqlalchemy.exc as sa_exc

SQLITE_BUSY_TIMEOUT_MS = 5_000
SUPPORTED_BACKENDS = ("sqlite", "postgresql")


class StoreError(Exception):
    """The store cannot be used: a bad URL, an unsupported backend, a missing schema."""


# Every way the store fails to be usable: what the driver says, an exhausted connection
# pool, or our own StoreError.
STORE_FAILURES = (sa_exc.DBAPIError, sa_exc.TimeoutError, StoreError)


def parse_url(database_url: str) -> sa.URL:
    """Validate a database URL and return it parsed, or raise StoreError saying what is wrong."""
    try:
        url = sa.make_url(database_url)
    except (sa_exc.ArgumentError, ValueError):
        raise StoreError(
            f"not a database URL: {database_url!r} "
            "(expected e.g. sqlite:///path/to/wmon.db or postgresql://user@host/db)"
        ) from None
    if url.get_backend_name() not in SUPPORTED_BACKENDS:
        raise StoreError(
            f"unsupported database {url.get_backend_name()!r} in {url.render_as_string()!r}: "
            f"use one of {', '.join(SUPPORTED_BACKENDS)}"
        )
    if url.get_backend_name() == "postgresql" and url.get_driver_name() in ("", "psycopg2"):
        url = url.set(drivername="postgresql+psycopg")
    return url


def _enable_wal(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.close()


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino


class _SameFile:
    """Hands out a pooled SQLite connection only while its file is still the store's file.

    A connection keeps writing into a file that was deleted or moved away, where nothing will
    ever read it, and reports success; so each checkout compares the file at the path with
    the one the connection opened, and a mismatch makes the pool connect afresh.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def connected(self, _dbapi_connection: Any, record: Any) -> None:
        record.info["wmon.file"] = _file_identity(self.path)

    def checked_out(self, _dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        if _file_identity(self.path) != record.info.get("wmon.file"):
            raise sa_exc.DisconnectionError(f"the store file {self.path} was moved or replaced")


def _open_existing(path: Path) -> Any:
    """A `do_connect` hook that opens the store's file only if it exists."""

    def connect(_dialect: Any, _record: Any, cargs: list[Any], cparams: dict[str, Any]) -> None:
        # The driver's own error type, so that it is met like any other store failure.
        if not path.exists():
            raise sqlite3.OperationalError(
                f"no store at {path} (`wmon db upgrade` creates one, as does a job's listener)"
            )
        # mode=rw: a file that goes missing between the check and the open is an error too,
        # never a new, empty store.
        cargs[0] = f"file:{quote(str(path))}?mode=rw"
        cparams["uri"] = True

    return connect


def _sqlite_engine(url: sa.URL, may_create: bool, options: dict[str, Any]) -> sa.Engine:
    path = Path(url.database).expanduser() if url.database and url.database != ":memory:" else None
    if path is not None and may_create:
        path.parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(url, **options)
    if path is not None and not may_create:
        sa.event.listen(engine, "do_connect", _open_existing(path))
    sa.event.listen(engine, "connect", _enable_wal)
    if path is not None:
        same_file = _SameFile(path)
        sa.event.listen(engine, "connect", same_file.connected)
        sa.event.listen(engine, "checkout", same_file.checked_out)
    return engine


def create_engine(database_url: str, *, may_create: bool = True, **options: Any) -> sa.Engine:
    """An engine for the store. For SQLite, WAL is switched on, and a missing file and its
    folder are created only when `may_create` (a job's listener, `wmon db upgrade`); a reader
    such as the dashboard gets an error instead."""
    url = parse_url(database_url)
    if url.get_backend_name() == "sqlite":
        return _sqlite_engine(url, may_create, options)
    options.setdefault("pool_pre_ping", True)
    options.setdefault("connect_args", {"connect_timeout": 5})
    return sa.create_engine(url, **options)


_NO_SCHEMA = ("no such table", "does not exist")


def error_reason(error: BaseException) -> str:
    """The first line of what the database driver said, without SQLAlchemy's preamble; for a
    missing table, with what to do about it."""
    cause = error.orig if isinstance(error, sa_exc.DBAPIError) and error.orig else error
    lines = str(cause).strip().splitlines()
    reason = lines[0] if lines else type(cause).__name__
    if isinstance(error, sa_exc.DatabaseError) and any(sign in reason for sign in _NO_SCHEMA):
        return f"{reason} (is the store migrated? run `wmon db upgrade`)"
    return reason


def unusable(error: BaseException) -> str:
    """What the dashboard says of a store failure, in one line."""
    return f"cannot use the store: {error_reason(error)}"


def display_url(engine_or_url: sa.Engine | str) -> str:
    """The URL with any password hidden, for messages."""
    url = engine_or_url.url if isinstance(engine_or_url, sa.Engine) else sa.make_url(engine_or_url)
    return url.render_as_string(hide_password=True)
