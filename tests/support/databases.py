"""Throwaway PostgreSQL databases for the tests and the benchmarks, created and dropped on one
server, and the copy of a template that a test worker's tests use in turn (ReusedDatabase)."""

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


# What a database's schema is made of, in the catalog's words: every relation of the public
# schema (day partitions and their bounds, indexes, sequences), every column, constraint and
# index definition, the migration it is at, and which tables hold rows. Two databases that read
# the same are the same store for a test.
_SCHEMA_DESCRIPTION = """
SELECT 'relation', concat_ws(' ', c.relname, c.relkind, pg_get_expr(c.relpartbound, c.oid))
FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace
UNION ALL
SELECT 'column', concat_ws(' ', a.attrelid::regclass, a.attname,
    format_type(a.atttypid, a.atttypmod), a.attnotnull, pg_get_expr(d.adbin, d.adrelid))
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT 'constraint', concat_ws(' ', conrelid::regclass, conname, pg_get_constraintdef(oid))
FROM pg_constraint WHERE connamespace = 'public'::regnamespace
UNION ALL
SELECT 'index', indexdef FROM pg_indexes WHERE schemaname = 'public'
UNION ALL
SELECT 'routine', proname::text FROM pg_proc WHERE pronamespace = 'public'::regnamespace
UNION ALL
SELECT 'trigger', tgname::text FROM pg_trigger WHERE NOT tgisinternal
UNION ALL
SELECT 'setting', array_to_string(setconfig, ',') FROM pg_db_role_setting
WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
"""


def _description(connection: sa.Connection) -> list[tuple[str, str]]:
    """The schema as _SCHEMA_DESCRIPTION reads it, the migration and the tables with rows."""
    described = [tuple(row) for row in connection.execute(sa.text(_SCHEMA_DESCRIPTION))]
    tables = _tables(connection)
    described += [("rows", table) for table in _with_rows(connection, tables)]
    if "alembic_version" in tables:
        for version in connection.scalars(sa.text("SELECT version_num FROM alembic_version")):
            described.append(("migration", version))
    return sorted(described)


def _tables(connection: sa.Connection) -> list[str]:
    return list(
        connection.scalars(sa.text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))
    )


def _with_rows(connection: sa.Connection, tables: list[str]) -> list[str]:
    """Which of `tables` hold a row, in one statement."""
    if not tables:
        return []
    holding = " UNION ALL ".join(
        f"SELECT '{table}' WHERE EXISTS (SELECT FROM \"{table}\")" for table in tables
    )
    return list(connection.scalars(sa.text(holding)))


def describe(database_url: str) -> list[tuple[str, str]]:
    """What the database's schema is made of, and which of its tables hold rows."""
    engine = sa.create_engine(parse_url(database_url), poolclass=sa.NullPool)
    with engine.connect() as connection:
        described = _description(connection)
    engine.dispose()
    return described


def restored(database_url: str, template: list[tuple[str, str]]) -> bool:
    """Make a database that a test used read as `template` (a `describe`) again, cheaper than
    dropping it and copying the template: its other sessions ended, the tables that were not in
    the template dropped (day partitions made by writes), every row deleted and the sequences
    restarted. Whether it now reads as the template; if not, it must be made again."""
    name = parse_url(database_url).database
    engine = sa.create_engine(parse_url(database_url), poolclass=sa.NullPool)
    relations = {entry.split(" ")[0] for kind, entry in template if kind == "relation"}
    kept_rows = {entry for kind, entry in template if kind == "rows"}
    with engine.begin() as connection:
        connection.execute(
            sa.text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = :name AND pid <> pg_backend_pid()"
            ),
            {"name": name},
        )
        tables = _tables(connection)
        for table in sorted(set(tables) - relations):
            connection.execute(sa.text(f'DROP TABLE IF EXISTS "{table}" CASCADE'))
        # Every row goes, in any order: foreign keys are not checked for this transaction.
        connection.execute(sa.text("SET LOCAL session_replication_role = replica"))
        for table in _with_rows(connection, [table for table in tables if table in relations]):
            if table not in kept_rows:
                connection.execute(sa.text(f'DELETE FROM "{table}"'))
        connection.execute(
            sa.text(
                "SELECT setval(format('%I', sequencename)::regclass, start_value, false) "
                "FROM pg_sequences WHERE schemaname = 'public'"
            )
        )
    with engine.connect() as connection:
        same = _description(connection) == template
    engine.dispose()
    return same


class ReusedDatabase:
    """A copy of a template database that tests use one after another: restored after each, and
    made again from the template where a test changed more than its rows (its schema, its
    migration)."""

    def __init__(self, server_url: str, template: str, prefix: str) -> None:
        self._server_url = server_url
        self._template = template
        self._prefix = prefix
        self.url = create_database(server_url, prefix, template=template)
        self._described = describe(self.url)

    def restore(self) -> None:
        """Make the database read as the template again."""
        if not restored(self.url, self._described):
            drop_database(self.url)
            self.url = create_database(self._server_url, self._prefix, template=self._template)

    def drop(self) -> None:
        drop_database(self.url)
