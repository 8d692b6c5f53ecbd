"""Throwaway PostgreSQL databases for the tests and the benchmarks, created and dropped on one
server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa

from monitor.store.schema.engine import parse_url


def _admin(server_url: str) -> sa.Engine:
    url = parse_url(server_url).set(database="postgres")
    return sa.create_engine(url, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)


def create_database(
    server_url: str, prefix: str = "wmon_scratch", template: str | None = None
) -> str:
    """Create a new empty database (or a copy of `template`) and return its URL."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = _admin(server_url)
    clause = f" TEMPLATE {template}" if template else ""
    with admin.connect() as connection:
        connection.execute(sa.text(f'CREATE DATABASE "{name}"{clause}'))
    admin.dispose()
    return parse_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop_database(database_url: str) -> None:
    """Drop a database made by create_database, closing its other sessions first."""
    name = parse_url(database_url).database
    admin = _admin(database_url)
    with admin.connect() as connection:
        connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@contextmanager
def scratch_database(server_url: str, prefix: str = "wmon_scratch") -> Iterator[str]:
    """A new empty database for the duration of a with-block."""
    url = create_database(server_url, prefix)
    try:
        yield url
    finally:
        drop_database(url)
