"""The `wmon` command: migrate the store, inspect stored history, serve the dashboard, evaluate
alerts, generate data and run the demo."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from wmon.commands import add_commands
from wmon.options import CliError, Parser
from wmon.render import printable
from wmon.stopping import Terminated


class Version(argparse.Action):
    """`--version`: the installed package's version, read only when asked for (importing
    importlib.metadata costs half of what reading the arguments does)."""

    def __init__(self, option_strings: Sequence[str], dest: str) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            default=argparse.SUPPRESS,
            help="show program's version number and exit",
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> NoReturn:
        """Print the version, and exit."""
        from importlib.metadata import version

        print(f"wmon {version('watermark-monitor')}")
        parser.exit()


def build_parser() -> Parser:
    """The argument parser of every subcommand."""
    parser = Parser(prog="wmon", description=__doc__)
    parser.add_argument("--version", action=Version)
    add_commands(parser.add_subparsers(dest="command", required=True, parser_class=Parser))
    return parser


def implementation(name: str) -> Callable[[argparse.Namespace], None]:
    """The function a command's "module:function" name gives, its module imported now."""
    module, _, function = name.partition(":")
    found: Callable[[argparse.Namespace], None] = getattr(importlib.import_module(module), function)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `wmon` command; errors are one line on stderr and a non-zero exit."""
    args = build_parser().parse_args(argv)
    run = implementation(args.func)
    try:
        run(args)
    except Terminated:
        return 0  # SIGTERM: the stop a service manager asks for, done as Ctrl-C's
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`wmon batches q | head`): stop quietly, as other tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as error:
        message = failure(error)
        if message is None:
            raise
        # A message can quote a job's exception text or names: escaped like the tables.
        print(f"wmon: error: {printable(message)}", file=sys.stderr)
        return 1
    return 0


def failure(error: Exception) -> str | None:
    """What a command's failure says in one line; None for an error that is a bug."""
    if isinstance(error, (CliError, ValueError)):
        return str(error)
    # The store's errors are imported only now: a command that never opens the store, and
    # `--help`, never import it.
    import sqlalchemy.exc as sa_exc

    from monitor.store.read.queries import QueryNotFound
    from monitor.store.schema.engine import StoreError, unusable

    if isinstance(error, QueryNotFound):
        return str(error.args[0])
    if isinstance(error, StoreError):
        return str(error)
    if isinstance(error, sa_exc.DatabaseError):
        return unusable(error)
    return None
