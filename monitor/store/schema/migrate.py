"""Bring a store's schema to the newest migration, through Alembic and migrations/ only."""

from __future__ import annotations

import importlib.util

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory


def alembic_config(connection: sa.Connection | None = None) -> Config:
    """An Alembic configuration over migrations/, bound to a connection when given."""
    config = Config()
    config.set_main_option("script_location", _scripts_folder())
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def _scripts_folder() -> str:
    """Where the migration scripts are; found, not imported, as they import the models."""
    spec = importlib.util.find_spec("migrations")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the migrations package is not installed beside monitor")
    return str(next(iter(spec.submodule_search_locations)))


def head_revision() -> str | None:
    """The newest revision in migrations/."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(engine: sa.Engine) -> str | None:
    """The revision a store is at, None for an empty store."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def upgrade(engine: sa.Engine) -> None:
    """Migrate the store to the head revision; a store already there is left as it is."""
    with engine.begin() as connection:
        command.upgrade(alembic_config(connection), "head")


def is_current(engine: sa.Engine) -> bool:
    """Whether the store is at the head revision."""
    return current_revision(engine) == head_revision()
