"""What the commands share once they run, never to parse their arguments: the store that
`--database-url` names, and the timeouts by which the events they write are judged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monitor.config import load_settings
from monitor.health.predicates import Timeouts
from monitor.store.schema import migrate
from monitor.store.schema.engine import create_engine, display_url, parse_url
from wmon.options import CliError


def open_store(database_url: str | None, must_exist: bool = True) -> Any:
    """An engine on the store named, or configured; by default it must exist and be migrated."""
    url = database_url or load_settings().database_url
    parsed = parse_url(url)
    if must_exist and parsed.get_backend_name() == "sqlite" and parsed.database:
        if not Path(parsed.database).expanduser().exists():
            raise CliError(f"no store at {parsed.database} (run `wmon db upgrade` or attach a job)")
    # A command that only reads or maintains a store never creates one, not even when the
    # file goes away while it runs (`wmon alerts run`).
    engine = create_engine(url, may_create=not must_exist)
    if must_exist and not migrate.is_current(engine):
        raise CliError(f"store {display_url(engine)} is not migrated: run `wmon db upgrade`")
    return engine


def configured_timeouts() -> Timeouts:
    """The idle and stall timeouts of the WMON_ settings, for commands that write events."""
    settings = load_settings()
    return Timeouts(settings.idle_timeout_s * 1000, settings.stall_timeout_s * 1000)
