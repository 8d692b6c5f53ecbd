"""What every command group shares: the one-line-error parser, argument types, and the store
that `--database-url` names."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from monitor.config import load_settings
from monitor.health.predicates import Timeouts
from monitor.numbers import INT64_MAX, NumberError, decimal, whole
from monitor.store import migrate
from monitor.store.engine import create_engine, display_url, parse_url

# The most rows a listing (`--limit`) prints.
MAX_ROWS = 1_000_000
# The bounds of `positive_float`: rates and seconds of the demo, not a measure of anything.
MIN_POSITIVE, MAX_DECIMAL = 0.001, 1_000_000_000
# argparse names the argument itself ("argument --limit: must be ..."): the number goes unnamed.
_ARGUMENT = ""


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


def output_options() -> Parser:
    """A parent parser with `--json` and `--wide`."""
    output = Parser(add_help=False)
    output.add_argument("--json", action="store_true", help="print JSON instead of a table")
    output.add_argument(
        "--wide",
        action="store_true",
        help="every column, values whole (by default some are left out and long values cut"
        " to fit the terminal, or 120 columns)",
    )
    return output


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


def whole_number(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from `low` to `high`, read as monitor.numbers reads
    every number from outside (ASCII digits only)."""

    def parse(text: str) -> int:
        try:
            return whole(text, _ARGUMENT, low, high)
        except NumberError as error:
            raise argparse.ArgumentTypeError(str(error).strip()) from None

    return parse


def decimal_number(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a finite decimal number (`2`, `0.25`) from `low` to `high`."""

    def parse(text: str) -> float:
        try:
            return decimal(text, _ARGUMENT, low, high)
        except NumberError as error:
            raise argparse.ArgumentTypeError(str(error).strip()) from None

    return parse


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number no smaller than `minimum`, up to what the store's 64-bit
    columns hold."""
    return whole_number(minimum, INT64_MAX)


def positive_float(text: str) -> float:
    """An argparse type: a decimal number from 0.001 to a billion."""
    return decimal_number(MIN_POSITIVE, MAX_DECIMAL)(text)


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 1 to 65535."""
    return whole_number(1, 65_535)(text)


def add_address(parser: argparse.ArgumentParser) -> None:
    """`--host` and `--port` of a dashboard."""
    parser.add_argument(
        "--host", default="127.0.0.1", help="the dashboard's address (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=port_number, default=5000, help="the dashboard's port (default 5000)"
    )


def configured_timeouts() -> Timeouts:
    """The idle and stall timeouts of the WMON_ settings, for commands that write events."""
    settings = load_settings()
    return Timeouts(settings.idle_timeout_s * 1000, settings.stall_timeout_s * 1000)
