"""`wmon alerts` and `wmon alerts run`: list alerts, and evaluate the rules on a schedule."""

from __future__ import annotations

import argparse
import threading
from typing import TYPE_CHECKING

import sqlalchemy.orm as so

from monitor.alerts.rules import URGENT
from monitor.config import load_settings
from monitor.store.read.alerts import cancelled_count, recent_alerts
from monitor.store.schema.engine import display_url
from monitor.store.signals.leases import job_done_at, job_held
from wmon.options import CliError
from wmon.queries import print_rows
from wmon.render import ALERT_COLUMNS, evaluation_text, paragraph
from wmon.runtime import open_store
from wmon.stopping import sigterm_stops

if TYPE_CHECKING:
    from monitor.alerts.runner import AlertRunner


def list_alerts(args: argparse.Namespace) -> None:
    """List alerts: the pending and firing ones, or with --all every one but the cancelled,
    the firing first; under the table, how many were cancelled and, when no process
    evaluates the rules now, since when the alerts have not been evaluated."""
    from monitor.alerts.runner import LEASE, now_ms

    now = now_ms()
    with so.Session(open_store(args.database_url)) as session:
        print_rows(args, ALERT_COLUMNS, recent_alerts(session, not args.all, args.limit, URGENT))
        cancelled = cancelled_count(session) if args.all else 0
        held, evaluated = job_held(session, LEASE, now), job_done_at(session, LEASE)
    if args.json:
        return
    if cancelled:
        said = f"{cancelled:,} pending alerts cleared before their rule's for: counted, not listed."
        print(paragraph(said))
    if not held:
        print(paragraph(evaluation_text(evaluated, now)))


def run_alerts(args: argparse.Namespace) -> None:
    """Evaluate the alert rules on a schedule until Ctrl-C or SIGTERM (or once, with --once)."""
    runner = _alert_runner(args)
    if args.once:
        _run_once(runner)
    else:
        _run_until_stopped(runner)


def _alert_runner(args: argparse.Namespace) -> AlertRunner:
    """A runner over the store with the rules and interval given, or else configured."""
    from monitor.alerts.rulefile import RulesFileError
    from monitor.alerts.runner import AlertRunner

    settings = load_settings()
    rules = args.rules or settings.alert_rules
    engine = open_store(args.database_url)
    try:
        return AlertRunner(engine, rules, args.interval or settings.alert_interval_s)
    except RulesFileError as error:
        raise CliError(str(error)) from error


def _run_once(runner: AlertRunner) -> None:
    """One pass and one round of sending; print how many transitions it stored."""
    try:
        events = runner.run_once()
        runner.deliver_once()
    finally:
        runner.close()
    print(
        "another process holds the evaluation lease"
        if events is None
        else f"{len(events)} transitions"
    )


def _run_until_stopped(runner: AlertRunner) -> None:
    """Say where and with which rules, then evaluate every interval until Ctrl-C or SIGTERM,
    which hand the lease on."""
    store = display_url(runner.engine)
    print(f"wmon: evaluating alert rules every {runner.interval_s:g} s in {store}")
    rules = runner.rules_path or "the built-in defaults"
    print(f"wmon: rules from {rules}; Ctrl-C stops", flush=True)
    stop = threading.Event()
    with sigterm_stops(stop):
        runner.run(stop)
