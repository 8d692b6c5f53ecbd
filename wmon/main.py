"""The `wmon` command: migrate the store, inspect stored history, serve the dashboard, evaluate
alerts, generate data and run the demo."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.metadata import version

import sqlalchemy.exc as sa_exc

from monitor.store.engine import StoreError, unusable
from monitor.store.queries import QueryNotFound
from wmon import advise, alerts, db, demo, ingest, pipelines, queries, rejected, serve, submit
from wmon.options import CliError, Parser
from wmon.render import printable

# Each group adds its own sub-commands, in the order `wmon --help` lists them.
GROUPS = (db, queries, advise, alerts, demo, serve, ingest, rejected, submit, pipelines)


def build_parser() -> Parser:
    """The argument parser of every subcommand."""
    parser = Parser(prog="wmon", description=__doc__)
    parser.add_argument(
        "--version", action="version", version=f"wmon {version('watermark-monitor')}"
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for group in GROUPS:
        group.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `wmon` command; errors are one line on stderr and a non-zero exit."""
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except (CliError, StoreError, QueryNotFound, ValueError) as error:
        message = error.args[0] if isinstance(error, QueryNotFound) else str(error)
        # A message can quote a job's exception text or names: escaped like the tables.
        print(f"wmon: error: {printable(message)}", file=sys.stderr)
        return 1
    except sa_exc.DatabaseError as error:
        print(f"wmon: error: {printable(unusable(error))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`wmon batches q | head`): stop quietly, as other tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return 0
