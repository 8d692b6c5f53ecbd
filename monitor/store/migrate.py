"""Bring a store's schema to the newest migration, through Alembic and migrations/ only."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

import migrations


def alembic_config(connection: sa.Connection | None = None) -> Config:
    """An Alembic configuration over migrations/, bound to a connection when given."""
    config = Config()
    config.set_main_option("script_location", str(Path(migrations.__file__).parent))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


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
