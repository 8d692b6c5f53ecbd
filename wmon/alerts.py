"""`wmon alerts` and `wmon alerts run`: list alerts, and evaluate the rules on a schedule."""

from __future__ import annotations

import argparse
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy.orm as so

from monitor.alerts.rules import URGENT
from monitor.config import DAY_S, load_settings
from monitor.store.alerts import recent_alerts
from monitor.store.engine import display_url
from wmon.options import (
    MAX_ROWS,
    CliError,
    Parser,
    decimal_number,
    open_store,
    output_options,
    store_option,
    whole_number,
)
from wmon.queries import print_rows
from wmon.render import ALERT_COLUMNS

if TYPE_CHECKING:
    from monitor.alerts.runner import AlertRunner

# The evaluation lease lasts three intervals: shorter than this, it would lapse between passes.
MIN_INTERVAL_S = 0.1


def register(commands: Any) -> None:
    """Add `wmon alerts` and its `run` sub-command."""
    alerts = commands.add_parser(
        "alerts",
        parents=[store_option(), output_options()],
        help="list alerts, or evaluate the rules (alerts run)",
    )
    alerts.add_argument("--all", action="store_true", help="resolved ones too, newest first")
    alerts.add_argument(
        "--limit",
        type=whole_number(1, MAX_ROWS),
        default=50,
        help="how many, at most 1000000 (default 50)",
    )
    alerts.set_defaults(func=list_alerts)
    alert_commands = alerts.add_subparsers(dest="alerts_command", parser_class=Parser)
    # The same option after `run`; unset there, it must not hide one given before `run`.
    store_after = Parser(add_help=False)
    store_after.add_argument(
        "--database-url", default=argparse.SUPPRESS, help="store URL (as for `wmon alerts`)"
    )
    run = alert_commands.add_parser(
        "run", parents=[store_after], help="evaluate the alert rules on a schedule"
    )
    run.add_argument("--rules", type=Path, help="rules file (default: $WMON_ALERT_RULES)")
    run.add_argument(
        "--interval",
        type=decimal_number(MIN_INTERVAL_S, DAY_S),
        help="seconds between passes, 0.1 to 86400 (default 10)",
    )
    run.add_argument("--once", action="store_true", help="one pass, then exit")
    run.set_defaults(func=run_alerts)


def list_alerts(args: argparse.Namespace) -> None:
    """List alerts: the pending and firing ones, or with --all every one, newest first."""
    with so.Session(open_store(args.database_url)) as session:
        print_rows(args, ALERT_COLUMNS, recent_alerts(session, not args.all, args.limit, URGENT))


def run_alerts(args: argparse.Namespace) -> None:
    """Evaluate the alert rules on a schedule until Ctrl-C (or once, with --once)."""
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
    """Say where and with which rules, then evaluate every interval until Ctrl-C."""
    store = display_url(runner.engine)
    print(f"wmon: evaluating alert rules every {runner.interval_s:g} s in {store}")
    rules = runner.rules_path or "the built-in defaults"
    print(f"wmon: rules from {rules}; Ctrl-C stops", flush=True)
    runner.run(threading.Event())
