"""Configuration from WMON_ environment variables, read in this one place."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_BUFFER_SIZE = 10_000


def default_database_path(environ: Mapping[str, str] = os.environ) -> Path:
    """The embedded SQLite store: $WMON_HOME/wmon.db, else $XDG_DATA_HOME/wmon/wmon.db."""
    if environ.get("WMON_HOME"):
        return Path(environ["WMON_HOME"]).expanduser() / "wmon.db"
    home = environ.get("HOME") or str(Path.home())
    data_home = environ.get("XDG_DATA_HOME") or str(Path(home) / ".local" / "share")
    return Path(data_home).expanduser() / "wmon" / "wmon.db"


@dataclass(frozen=True)
class Settings:
    """Everything the monitor reads from the environment."""

    database_url: str
    buffer_size: int = DEFAULT_BUFFER_SIZE


def load_settings(environ: Mapping[str, str] = os.environ) -> Settings:
    """Read the settings, with defaults for what is not set."""
    url = environ.get("WMON_DATABASE_URL") or f"sqlite:///{default_database_path(environ)}"
    raw_size = environ.get("WMON_BUFFER_SIZE") or str(DEFAULT_BUFFER_SIZE)
    try:
        buffer_size = int(raw_size)
    except ValueError:
        raise ValueError(f"WMON_BUFFER_SIZE must be a whole number, not {raw_size!r}") from None
    if buffer_size < 1:
        raise ValueError(f"WMON_BUFFER_SIZE must be at least 1, not {buffer_size}")
    return Settings(database_url=url, buffer_size=buffer_size)
