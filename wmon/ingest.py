"""`wmon ingest`: Spark's event logs into the store, as a backfill or following live ones."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from contextlib import AbstractContextManager, nullcontext
from typing import TextIO

from monitor.ingest.ingester import Ingester, Totals
from monitor.ingest.logfiles import Application
from monitor.store.schema import migrate
from monitor.store.schema.engine import display_url
from wmon.options import CliError
from wmon.render import printable
from wmon.runtime import configured_timeouts, open_store
from wmon.stopping import sigterm_stops


def _size(count: int) -> str:
    return f"{count / 1_000_000:,.1f} MB"


def _summary(totals: Totals, seconds: float) -> str:
    rate = totals.events / seconds if seconds > 0 else 0.0
    # Files found rewritten since they were read: each said so on its line, and read again.
    again = f"; {totals.rewritten:,} rewritten files read again" if totals.rewritten else ""
    return (
        f"{totals.applications:,} applications, {totals.files:,} files: {totals.lines:,} lines, "
        f"{totals.events:,} events stored, {_size(totals.bytes_read)} read in {seconds:,.1f} s "
        f"({rate:,.0f} events/s){again}; {totals.problems:,} problems"
    )


class Progress:
    """One line per application on `out`, rewritten in place on a terminal; problems on
    lines of their own."""

    def __init__(self, out: TextIO) -> None:
        self._out, self._live = out, out.isatty()

    def application(self, application: Application, number: int, of: int, totals: Totals) -> None:
        """An application's turn is over."""
        line = (
            f"ingest: [{number}/{of}] {printable(application.app_id)}: "
            f"{totals.events:,} events, {_size(totals.bytes_read)}"
        )
        if self._live:
            self._out.write(f"\r\x1b[K{line}" + ("\n" if number == of else ""))
        else:
            self._out.write(line + "\n")
        self._out.flush()

    def problem(self, message: str) -> None:
        """A problem, on its own line."""
        # Problems quote the logs (paths, lines, Spark's exception texts): escaped like the tables.
        self._out.write(("\r\x1b[K" if self._live else "") + f"wmon: {printable(message)}\n")
        self._out.flush()


def ingest_logs(args: argparse.Namespace) -> None:
    """Read the logs at the given URLs once, or keep following them until Ctrl-C or SIGTERM
    (each group of lines is stored with its position: a rerun goes on from there)."""
    engine = open_store(args.database_url, must_exist=False)
    if not migrate.is_current(engine):
        migrate.upgrade(engine)
    progress = Progress(sys.stderr)
    ingester = Ingester(
        engine,
        args.urls,
        configured_timeouts(),
        report=progress.problem,
        following=args.follow,
    )

    def show(application: Application, number: int, of: int) -> None:
        progress.application(application, number, of, ingester.totals)

    print(f"wmon: ingesting into {display_url(engine)}", file=sys.stderr)
    started = time.monotonic()
    # Following ends only when stopped, by Ctrl-C or SIGTERM alike (a backfill that SIGTERM
    # stops ends at once: what it stored is stored with its position).
    stop = threading.Event()
    stopping: AbstractContextManager[None] = sigterm_stops(stop) if args.follow else nullcontext()
    with stopping:
        try:
            ingester.step(on_application=show)
            while args.follow and not stop.wait(args.interval):
                ingester.step()
        finally:
            print(_summary(ingester.totals, time.monotonic() - started))
            engine.dispose()
    if ingester.totals.problems:
        raise CliError(
            f"{ingester.totals.problems:,} problems, each reported above: what they name is not "
            "stored; everything else is"
        )
