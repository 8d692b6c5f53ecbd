"""A fresh store at a time for a benchmark's measurement: SQLite, then a scratch PostgreSQL
database (tests.support.databases)."""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.support.databases import scratch_database


def fresh_stores(args: argparse.Namespace, name: str) -> Iterator[tuple[str, str]]:
    """A fresh store at a time, (its kind, its URL): SQLite, then, unless --no-postgres, a
    scratch PostgreSQL database on --postgres-url; each gone once the next is asked for."""
    with tempfile.TemporaryDirectory(prefix=f"wmon-{name}-") as folder:
        yield "SQLite", f"sqlite:///{Path(folder) / f'{name}.db'}"
    if not args.no_postgres:
        with scratch_database(args.postgres_url, f"wmon_bench_{name}") as url:
            yield "PostgreSQL", url
