"""Create engines for the store: SQLite in WAL mode by default, PostgreSQL in production."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa
import sqlalchemy.exc as sa_exc

SQLITE_BUSY_TIMEOUT_MS = 5_000
SUPPORTED_BACKENDS = ("sqlite", "postgresql")


class StoreError(Exception):
    """The store cannot be used: a bad URL, an unsupported backend, a missing schema."""


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


def create_engine(database_url: str, **options: Any) -> sa.Engine:
    """An engine for the store; for SQLite the file's folder is created and WAL switched on."""
    url = parse_url(database_url)
    if url.get_backend_name() == "sqlite":
        if url.database and url.database != ":memory:":
            Path(url.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url, **options)
        sa.event.listen(engine, "connect", _enable_wal)
        return engine
    options.setdefault("pool_pre_ping", True)
    options.setdefault("connect_args", {"connect_timeout": 5})
    return sa.create_engine(url, **options)


def error_reason(error: BaseException) -> str:
    """The first line of what the database driver said, without SQLAlchemy's preamble."""
    cause = error.orig if isinstance(error, sa_exc.DBAPIError) and error.orig else error
    lines = str(cause).strip().splitlines()
    return lines[0] if lines else type(cause).__name__


def display_url(engine_or_url: sa.Engine | str) -> str:
    """The URL with any password hidden, for messages."""
    url = engine_or_url.url if isinstance(engine_or_url, sa.Engine) else sa.make_url(engine_or_url)
    return url.render_as_string(hide_password=True)
