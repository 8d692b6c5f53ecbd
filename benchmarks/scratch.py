"""Throwaway stores for the benchmarks and the tests: PostgreSQL databases created and dropped
on one server, and a fresh SQLite store then a PostgreSQL one for a benchmark's measurement."""

from __future__ import annotations

import argparse
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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


def fresh_stores(args: argparse.Namespace, name: str) -> Iterator[tuple[str, str]]:
    """A fresh store at a time, (its kind, its URL): SQLite, then, unless --no-postgres, a
    scratch PostgreSQL database on --postgres-url; each gone once the next is asked for."""
    with tempfile.TemporaryDirectory(prefix=f"wmon-{name}-") as folder:
        yield "SQLite", f"sqlite:///{Path(folder) / f'{name}.db'}"
    if not args.no_postgres:
        with scratch_database(args.postgres_url, f"wmon_bench_{name}") as url:
            yield "PostgreSQL", url
