"""What every command group shares: the one-line-error parser, argument types, and the store
that `--database-url` names."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from monitor.config import load_settings
from monitor.store import migrate
from monitor.store.engine import create_engine, display_url, parse_url


class CliError(Exception):
    """A problem to report in one line, with a non-zero exit."""


class Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        """Report a usage error in one line."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def store_option() -> Parser:
    """A parent parser with `--database-url`."""
    store = Parser(add_help=False)
    store.add_argument(
        "--database-url",
        help="store URL (default: $WMON_DATABASE_URL or "
        "the SQLite file under $WMON_HOME / ~/.local/share/wmon)",
    )
    return store


def json_option() -> Parser:
    """A parent parser with `--json`."""
    output = Parser(add_help=False)
    output.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return output


def open_store(database_url: str | None, must_exist: bool = True) -> Any:
    """An engine on the store named, or configured; by default it must exist and be migrated."""
    url = database_url or load_settings().database_url
    parsed = parse_url(url)
    if must_exist and parsed.get_backend_name() == "sqlite" and parsed.database:
        if not Path(parsed.database).expanduser().exists():
            raise CliError(f"no store at {parsed.database} (run `wmon db upgrade` or attach a job)")
    engine = create_engine(url)
    if must_exist and not migrate.is_current(engine):
        raise CliError(f"store {display_url(engine)} is not migrated: run `wmon db upgrade`")
    return engine


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number no smaller than `minimum`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        return value

    return parse


def positive_float(text: str) -> float:
    """An argparse type: a number above zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
    return value


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 1 to 65535."""
    value = at_least(1)(text)
    if value > 65_535:
        raise argparse.ArgumentTypeError(f"must be at most 65535, not {value}")
    return value


def add_address(parser: argparse.ArgumentParser) -> None:
    """`--host` and `--port` of a dashboard."""
    parser.add_argument(
        "--host", default="127.0.0.1", help="the dashboard's address (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=port_number, default=5000, help="the dashboard's port (default 5000)"
    )
