"""What the commands' arguments share: the one-line-error parser, argument types and options
that several commands take. Parsing imports nothing more than this (see wmon.commands)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime, timezone
from typing import NoReturn
from urllib.parse import urlsplit

from monitor.numbers import INT64_MAX, NumberError, decimal, whole

# The most rows a listing (`--limit`) prints.
MAX_ROWS = 1_000_000
# The bounds of `positive_float`: rates and seconds of the demo, not a measure of anything.
MIN_POSITIVE, MAX_DECIMAL = 0.001, 1_000_000_000
# Where `wmon serve` collects events by default: the listener's `--url`.
COLLECTOR_URL = "http://127.0.0.1:5000"
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
        help="every column, values whole (by default some are left out, and long values are cut"
        " to fit a terminal, never in a pipe or a file)",
    )
    return output


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


def moment(text: str) -> int:
    """An argparse type: an ISO 8601 time ('2026-11-26T12:00', '…Z', '…+01:00') as epoch ms; UTC
    if no zone."""
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a time: {text!r} (expected ISO 8601, e.g. 2026-11-26T12:00:00Z)"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return int(parsed.timestamp() * 1000)


def collector_url(text: str) -> str:
    """An argparse type: an http(s) URL with a host, as the listener accepts."""
    parts = urlsplit(text)
    spaced = any(character.isspace() for character in text)
    if parts.scheme not in ("http", "https") or not parts.hostname or spaced:
        raise argparse.ArgumentTypeError(f"must be an http:// or https:// URL, not {text!r}")
    return text


def add_collector(parser: argparse.ArgumentParser) -> None:
    """Add `--url` and `--token`: the collector the listener posts to."""
    parser.add_argument(
        "--url",
        type=collector_url,
        default=COLLECTOR_URL,
        help=f"the collector, `wmon serve` (default {COLLECTOR_URL})",
    )
    parser.add_argument(
        "--token", help="the collector's ingest token (default: $WMON_INGEST_TOKEN, else none)"
    )
