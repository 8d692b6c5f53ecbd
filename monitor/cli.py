"""The `wmon` command: migrate the store, inspect stored history, generate data, run the demo."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import sqlalchemy.exc as sa_exc
import sqlalchemy.orm as so

from monitor.bench import add_bench_arguments
from monitor.config import load_settings
from monitor.store import migrate
from monitor.store.engine import (
    StoreError,
    create_engine,
    display_url,
    error_reason,
    parse_url,
)
from monitor.store.reads import (
    QueryNotFound,
    find_query,
    list_queries,
    partition_views,
    recent_alerts,
    recent_batches,
    recent_timer_snapshots,
)
from monitor.tables import (
    ALERT_COLUMNS,
    BATCH_COLUMNS,
    PARTITION_COLUMNS,
    QUERY_COLUMNS,
    TIMER_COLUMNS,
    render_json,
    render_table,
)
from streaming.generator import DEFAULT_START_MS
from streaming.scenarios import SCENARIOS

if TYPE_CHECKING:
    from monitor.alerts.runner import AlertRunner


class CliError(Exception):
    """A problem to report in one line, with a non-zero exit."""


class Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        """Report a usage error in one line."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _open_store(database_url: str | None, must_exist: bool = True) -> Any:
    url = database_url or load_settings().database_url
    parsed = parse_url(url)
    if must_exist and parsed.get_backend_name() == "sqlite" and parsed.database:
        if not Path(parsed.database).expanduser().exists():
            raise CliError(f"no store at {parsed.database} (run `wmon db upgrade` or attach a job)")
    engine = create_engine(url)
    if must_exist and not migrate.is_current(engine):
        raise CliError(f"store {display_url(engine)} is not migrated: run `wmon db upgrade`")
    return engine


def cmd_db_upgrade(args: argparse.Namespace) -> None:
    """Create or migrate the store's schema to the newest revision."""
    engine = _open_store(args.database_url, must_exist=False)
    before = migrate.current_revision(engine)
    migrate.upgrade(engine)
    after = migrate.current_revision(engine)
    state = "already at" if before == after else f"upgraded from {before or 'empty'} to"
    print(f"store {display_url(engine)}: {state} revision {after}")


def cmd_queries(args: argparse.Namespace) -> None:
    """List every stored query."""
    with so.Session(_open_store(args.database_url)) as session:
        _print(args, QUERY_COLUMNS, list_queries(session))


def cmd_batches(args: argparse.Namespace) -> None:
    """List a query's most recent batches."""
    with so.Session(_open_store(args.database_url)) as session:
        query = find_query(session, args.query)
        _print(args, BATCH_COLUMNS, recent_batches(session, query.id, args.limit))


def cmd_partitions(args: argparse.Namespace) -> None:
    """List the source partitions of a query's batch (the latest by default)."""
    with so.Session(_open_store(args.database_url)) as session:
        query = find_query(session, args.query)
        _print(args, PARTITION_COLUMNS, partition_views(session, query.id, args.batch))


def cmd_timers(args: argparse.Namespace) -> None:
    """List a query's most recent pending-timer snapshots."""
    with so.Session(_open_store(args.database_url)) as session:
        query = find_query(session, args.query)
        _print(args, TIMER_COLUMNS, recent_timer_snapshots(session, query.id, args.limit))


def _print(args: argparse.Namespace, columns: Any, rows: Sequence[Any]) -> None:
    print(render_json(columns, rows) if args.json else render_table(columns, rows))


def cmd_alerts(args: argparse.Namespace) -> None:
    """List alerts: the pending and firing ones, or with --all every one, newest first."""
    with so.Session(_open_store(args.database_url)) as session:
        _print(args, ALERT_COLUMNS, recent_alerts(session, not args.all, args.limit))


def cmd_alerts_run(args: argparse.Namespace) -> None:
    """Evaluate the alert rules on a schedule until Ctrl-C (or once, with --once)."""
    runner = _alert_runner(args)
    if args.once:
        _run_alerts_once(runner)
    else:
        _run_alerts_until_stopped(runner)


def _alert_runner(args: argparse.Namespace) -> AlertRunner:
    """A runner over the store with the rules and interval given, or else configured."""
    from monitor.alerts.rulefile import RulesFileError
    from monitor.alerts.runner import AlertRunner

    settings = load_settings()
    rules = args.rules or settings.alert_rules
    engine = _open_store(args.database_url)
    try:
        return AlertRunner(engine, rules, args.interval or settings.alert_interval_s)
    except RulesFileError as error:
        raise CliError(str(error)) from error


def _run_alerts_once(runner: AlertRunner) -> None:
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


def _run_alerts_until_stopped(runner: AlertRunner) -> None:
    """Say where and with which rules, then evaluate every interval until Ctrl-C."""
    store = display_url(runner.engine)
    print(f"wmon: evaluating alert rules every {runner.interval_s:g} s in {store}")
    rules = runner.rules_path or "the built-in defaults"
    print(f"wmon: rules from {rules}; Ctrl-C stops", flush=True)
    runner.run(threading.Event())


def cmd_generate(args: argparse.Namespace) -> None:
    """Write deterministic scooter telemetry into a partitioned log, plainly or as a scenario."""
    from streaming.generator import generate
    from streaming.log import PartitionedLog
    from streaming.scenarios import play

    common = {
        "topic": args.topic,
        "partitions": args.partitions,
        "scooters": args.scooters,
        "records": args.records,
        "rate": args.rate,
        "start_ms": args.start_ms,
        "seed": args.seed,
        "max_disorder_ms": args.max_disorder_ms,
    }
    log = PartitionedLog(args.path)
    if args.scenario is None:
        written = generate(log, **common).partitions
        roles: dict[int, str] = {}
        options: dict[str, str] = {}
    else:
        scenario = play(args.scenario, log, **common)
        written, roles, options = scenario.partitions, scenario.roles, scenario.options
    print(f"wrote {sum(p.records for p in written.values())} records to {args.path / args.topic}")
    for partition, summary in sorted(written.items()):
        role = f" ({roles[partition]})" if partition in roles else ""
        print(f"  partition {partition}: {summary.records} records{role}")
    for name, value in options.items():
        print(f"  read it with .option({name!r}, {value!r})")


def cmd_demo(args: argparse.Namespace) -> None:
    """Play the scenarios into the monitored scooter pipeline and serve the dashboard."""
    from streaming.demo import DemoError, DemoOptions, run_demo

    try:
        run_demo(
            DemoOptions(
                workdir=args.workdir,
                seconds=args.seconds,
                scenarios=tuple(args.scenarios),
                partitions=args.partitions,
                rate=args.rate,
                round_seconds=args.round_seconds,
                trigger_seconds=args.trigger_seconds,
                idle_timeout=args.idle_timeout,
                stall_timeout=args.stall_timeout,
                host=args.host,
                port=args.port,
                database_url=args.database_url,
            )
        )
    except DemoError as error:
        raise CliError(str(error)) from error


def cmd_serve(args: argparse.Namespace) -> None:
    """Serve the dashboard and its JSON API, pushing what the store receives to the browsers."""
    from web import alerting, create_app, socketio

    engine = _open_store(args.database_url)
    url = engine.url.render_as_string(hide_password=False)
    engine.dispose()
    app = create_app({"DATABASE_URL": url})
    print(f"wmon: dashboard on http://{args.host}:{args.port}/ (store {display_url(url)})")
    print("wmon: JSON API at /api/queries; Ctrl-C stops the server", flush=True)
    evaluator = alerting.evaluator(app)
    evaluator.start()
    try:
        # Flask-SocketIO refuses Werkzeug's server when stdin is not a terminal (a service, a
        # container). In threading mode it is the server, serving each connection and WebSocket
        # on its own thread, which suits a monitor's few browsers; the default host keeps it
        # local.
        socketio.run(app, host=args.host, port=args.port, allow_unsafe_werkzeug=True)
    finally:
        evaluator.stop()


def cmd_prune(args: argparse.Namespace) -> None:
    """Delete history older than the retention period, in short transactions."""
    from monitor.store.prune import cutoff_ms, prune

    engine = _open_store(args.database_url)
    days = args.days or load_settings().retention_days
    before_ms = cutoff_ms(days, time.time_ns() // 1_000_000)
    pruned = prune(engine, before_ms)
    before = datetime.fromtimestamp(before_ms / 1000, tz=timezone.utc)
    print(
        f"store {display_url(engine)}: pruned history before {before:%Y-%m-%d %H:%M:%S} UTC "
        f"({days} days kept) in {pruned.transactions} transactions"
    )
    for table, count in pruned.deleted.items():
        print(f"  {table:<22} {count:>12,} rows deleted")


def cmd_bench(args: argparse.Namespace) -> None:
    """Measure the listener, the store, the instrumented operator and the dashboard."""
    from monitor.bench import run_bench

    run_bench(args)


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


def scenario_list(text: str) -> list[str]:
    """An argparse type: comma-separated scenario names, each known."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in SCENARIOS]
    if unknown or not names:
        known = ", ".join(sorted(SCENARIOS))
        raise argparse.ArgumentTypeError(
            f"unknown scenario {', '.join(unknown) or '(none)'}; known: {known}"
        )
    return names


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 1 to 65535."""
    value = at_least(1)(text)
    if value > 65_535:
        raise argparse.ArgumentTypeError(f"must be at most 65535, not {value}")
    return value


def _add_address(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default="127.0.0.1", help="the dashboard's address (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=port_number, default=5000, help="the dashboard's port (default 5000)"
    )


def _add_serve(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    _add_address(parser)
    parser.add_argument(
        "--database-url",
        "--database",
        dest="database_url",
        help="store URL (default: $WMON_DATABASE_URL or the embedded SQLite store)",
    )
    return parser


def _add_generate(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("path", type=Path, help="the partitioned log's folder")
    parser.add_argument(
        "--scenario",
        choices=sorted(SCENARIOS),
        help="write one of the scenarios instead of plain telemetry",
    )
    parser.add_argument("--topic", default="telemetry", help="topic name (default telemetry)")
    parser.add_argument("--partitions", type=at_least(1), default=4, help="default 4")
    parser.add_argument("--scooters", type=at_least(1), default=50, help="default 50")
    parser.add_argument("--records", type=at_least(1), default=10_000, help="default 10000")
    parser.add_argument(
        "--rate",
        type=positive_float,
        default=100.0,
        help="records per second of event time (default 100)",
    )
    parser.add_argument(
        "--start-ms",
        type=at_least(0),
        default=DEFAULT_START_MS,
        help="event time of the first record, epoch ms",
    )
    parser.add_argument("--seed", type=int, default=0, help="default 0")
    parser.add_argument(
        "--max-disorder-ms",
        type=at_least(0),
        default=2_000,
        help="how far out of order event times may be (default 2000)",
    )
    return parser


def _add_demo(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    from streaming.demo import DEMO_SCENARIOS

    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path("var/demo"),
        help="where the logs and checkpoints go (default var/demo)",
    )
    parser.add_argument(
        "--seconds",
        type=at_least(0),
        default=0,
        help="stop after this long (default 0: run until Ctrl-C)",
    )
    parser.add_argument(
        "--scenarios",
        type=scenario_list,
        default=list(DEMO_SCENARIOS),
        help=f"comma-separated, one query each (default {','.join(DEMO_SCENARIOS)})",
    )
    parser.add_argument("--partitions", type=at_least(2), default=4, help="default 4")
    parser.add_argument(
        "--rate",
        type=positive_float,
        default=20.0,
        help="records per second of each scenario (default 20)",
    )
    parser.add_argument(
        "--round-seconds",
        type=positive_float,
        default=60.0,
        help="each scenario's telemetry is written in rounds this long (default 60)",
    )
    parser.add_argument(
        "--trigger-seconds",
        type=positive_float,
        default=5.0,
        help="the queries' trigger interval, and event time read per trigger (default 5)",
    )
    parser.add_argument(
        "--idle-timeout",
        type=positive_float,
        default=10.0,
        help="seconds without new records before a partition is idle (default 10)",
    )
    parser.add_argument(
        "--stall-timeout",
        type=positive_float,
        default=30.0,
        help="seconds without progress before a watermark or partition is stalled (default 30)",
    )
    _add_address(parser)
    return parser


def build_parser() -> Parser:
    """The argument parser of every subcommand."""
    parser = Parser(prog="wmon", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    store = Parser(add_help=False)
    store.add_argument(
        "--database-url",
        help="store URL (default: $WMON_DATABASE_URL or "
        "the SQLite file under $WMON_HOME / ~/.local/share/wmon)",
    )
    output = Parser(add_help=False)
    output.add_argument("--json", action="store_true", help="print JSON instead of a table")

    db = commands.add_parser("db", help="manage the store's schema")
    db_commands = db.add_subparsers(dest="db_command", required=True, parser_class=Parser)
    db_commands.add_parser(
        "upgrade", parents=[store], help="migrate the store to the newest schema"
    ).set_defaults(func=cmd_db_upgrade)

    commands.add_parser(
        "queries", parents=[store, output], help="list stored queries"
    ).set_defaults(func=cmd_queries)
    batches = commands.add_parser(
        "batches", parents=[store, output], help="a query's recent batches"
    )
    batches.add_argument("query", help="query id or name")
    batches.add_argument("--limit", type=at_least(1), default=20, help="how many (default 20)")
    batches.set_defaults(func=cmd_batches)
    partitions = commands.add_parser(
        "partitions", parents=[store, output], help="a batch's source partitions"
    )
    partitions.add_argument("query", help="query id or name")
    partitions.add_argument("--batch", type=at_least(0), help="batch id (default: latest)")
    partitions.set_defaults(func=cmd_partitions)
    timers = commands.add_parser(
        "timers", parents=[store, output], help="a query's pending timers over time"
    )
    timers.add_argument("query", help="query id or name")
    timers.add_argument("--limit", type=at_least(1), default=20, help="how many (default 20)")
    timers.set_defaults(func=cmd_timers)

    alerts = commands.add_parser(
        "alerts", parents=[store, output], help="list alerts, or evaluate the rules (alerts run)"
    )
    alerts.add_argument("--all", action="store_true", help="resolved ones too, newest first")
    alerts.add_argument("--limit", type=at_least(1), default=50, help="how many (default 50)")
    alerts.set_defaults(func=cmd_alerts)
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
    run.add_argument("--interval", type=positive_float, help="seconds between passes (default 10)")
    run.add_argument("--once", action="store_true", help="one pass, then exit")
    run.set_defaults(func=cmd_alerts_run)

    _add_generate(
        commands.add_parser("generate", help="write scooter telemetry into a partitioned log")
    ).set_defaults(func=cmd_generate)
    _add_demo(
        commands.add_parser(
            "demo",
            parents=[store],
            help="play the scenarios into monitored streaming queries, with the dashboard",
        )
    ).set_defaults(func=cmd_demo)
    _add_serve(
        commands.add_parser("serve", help="serve the dashboard and its JSON API")
    ).set_defaults(func=cmd_serve)
    prune = commands.add_parser(
        "prune", parents=[store], help="delete history older than the retention period"
    )
    prune.add_argument(
        "--days",
        type=at_least(1),
        help="keep this many days (default: $WMON_RETENTION_DAYS or 30)",
    )
    prune.set_defaults(func=cmd_prune)
    add_bench_arguments(
        commands.add_parser("bench", help="benchmark the listener, the store and the dashboard")
    ).set_defaults(func=cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `wmon` command; errors are one line on stderr and a non-zero exit."""
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except (CliError, StoreError, QueryNotFound, ValueError) as error:
        message = error.args[0] if isinstance(error, QueryNotFound) else str(error)
        print(f"wmon: error: {message}", file=sys.stderr)
        return 1
    except sa_exc.DatabaseError as error:
        print(f"wmon: error: cannot use the store: {error_reason(error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`wmon batches q | head`): stop quietly, as other tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return 0


if __name__ == "__main__":
    sys.exit(main())
