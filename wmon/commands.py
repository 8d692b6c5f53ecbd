"""Every `wmon` command's arguments, and the function that runs it, named "module:function":
wmon.main imports that module only when the command runs. Building the parser therefore
imports no store, dashboard or Spark, and `wmon --help` answers at once."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from monitor.config import DAY_S, MAX_RETENTION_DAYS
from monitor.numbers import INT64_MAX
from streaming.demo import DEMO_SCENARIOS
from streaming.generator import DEFAULT_START_MS
from streaming.scenarios import SCENARIOS
from wmon.options import (
    MAX_ROWS,
    Parser,
    add_address,
    add_collector,
    at_least,
    decimal_number,
    moment,
    output_options,
    positive_float,
    store_option,
    whole_number,
)

# `wmon alerts run`: the evaluation lease lasts three intervals; shorter than this, it would
# lapse between passes.
MIN_INTERVAL_S = 0.1
# `wmon ingest --follow`: seconds between looks for new data.
DEFAULT_INTERVAL_S = 2.0


def add_commands(commands: Any) -> None:
    """Add every command, in the order `wmon --help` lists them."""
    for group in (
        _db,
        _history,
        _advise,
        _alerts,
        _generate,
        _demo,
        _serve,
        _ingest,
        _rejected,
        _submit,
        _pipelines,
    ):
        group(commands)


def _db(commands: Any) -> None:
    """`wmon db upgrade` and `wmon prune`."""
    db = commands.add_parser("db", help="manage the store's schema")
    db_commands = db.add_subparsers(dest="db_command", required=True, parser_class=Parser)
    db_commands.add_parser(
        "upgrade", parents=[store_option()], help="migrate the store to the newest schema"
    ).set_defaults(func="wmon.database:upgrade")
    prune = commands.add_parser(
        "prune", parents=[store_option()], help="delete history older than each tier keeps it"
    )
    prune.add_argument(
        "--batches-hours",
        type=whole_number(1, 24 * MAX_RETENTION_DAYS),
        help="keep every batch this many hours (default: $WMON_RETENTION_BATCHES_HOURS or 48; "
        "no longer than --days)",
    )
    prune.add_argument(
        "--days",
        type=whole_number(1, MAX_RETENTION_DAYS),
        help="keep the per-minute rollups, ended alerts and silences this many days, 1 to 36500 "
        "(default: $WMON_RETENTION_DAYS or 30)",
    )
    prune.add_argument(
        "--hours-days",
        type=whole_number(1, MAX_RETENTION_DAYS),
        help="keep the per-hour rollups this many days (default: $WMON_RETENTION_HOURS_DAYS or "
        "400; no shorter than --days)",
    )
    prune.set_defaults(func="wmon.database:prune_history")


def _history(commands: Any) -> None:
    """The commands that read the stored history: queries, batches, partitions, state, timers."""
    parents = [store_option(), output_options()]
    queries = commands.add_parser(
        "queries", parents=parents, help="stored queries and their health, the most urgent first"
    )
    queries.add_argument(
        "--rules",
        type=Path,
        help="the alert rules whose thresholds judge health (default: $WMON_ALERT_RULES)",
    )
    queries.set_defaults(func="wmon.queries:queries")
    batches = commands.add_parser("batches", parents=parents, help="a query's recent batches")
    batches.add_argument("query", help="query id or name")
    _add_limit(batches, 20)
    batches.set_defaults(func="wmon.queries:batches")
    partitions = commands.add_parser(
        "partitions", parents=parents, help="a batch's source partitions"
    )
    partitions.add_argument("query", help="query id or name")
    partitions.add_argument(
        "--batch", type=whole_number(0, INT64_MAX), help="batch id (default: latest)"
    )
    partitions.set_defaults(func="wmon.queries:partitions")
    state = commands.add_parser(
        "state", parents=parents, help="a query's stateful operators over the last five minutes"
    )
    state.add_argument("query", help="query id or name")
    state.set_defaults(func="wmon.queries:state")
    timers = commands.add_parser(
        "timers", parents=parents, help="a query's pending timers over time"
    )
    timers.add_argument("query", help="query id or name")
    _add_limit(timers, 20)
    timers.set_defaults(func="wmon.queries:timers")


def _add_limit(parser: argparse.ArgumentParser, default: int, listed: str = "") -> None:
    """`--limit`: how many rows a listing prints."""
    parser.add_argument(
        "--limit",
        type=whole_number(1, MAX_ROWS),
        default=default,
        help=f"how many{listed}, at most {MAX_ROWS} (default {default})",
    )


def _advise(commands: Any) -> None:
    """`wmon advise`."""
    parser = commands.add_parser(
        "advise",
        parents=[store_option(), output_options()],
        help="the watermark delay that would have kept 99%%, 99.9%% and all of the records",
    )
    parser.add_argument("query", help="query id or name")
    parser.add_argument(
        "--from",
        dest="from_ms",
        type=moment,
        metavar="TIME",
        help="first batch time (ISO 8601, UTC by default)",
    )
    parser.add_argument(
        "--to", dest="to_ms", type=moment, metavar="TIME", help="last batch time (ISO 8601)"
    )
    parser.set_defaults(func="wmon.advise:advise")


def _alerts(commands: Any) -> None:
    """`wmon alerts` and its `run` sub-command."""
    alerts = commands.add_parser(
        "alerts",
        parents=[store_option(), output_options()],
        help="list alerts, or evaluate the rules (alerts run)",
    )
    alerts.add_argument("--all", action="store_true", help="resolved ones too, newest first")
    _add_limit(alerts, 50)
    alerts.set_defaults(func="wmon.alerts:list_alerts")
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
    run.set_defaults(func="wmon.alerts:run_alerts")


def _generate(commands: Any) -> None:
    """`wmon generate`."""
    parser = commands.add_parser("generate", help="write scooter telemetry into a partitioned log")
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
    parser.add_argument("--seed", type=at_least(0), default=0, help="default 0")
    parser.add_argument(
        "--max-disorder-ms",
        type=at_least(0),
        default=2_000,
        help="how far out of order event times may be (default 2000)",
    )
    parser.set_defaults(func="wmon.demo:generate")


def _demo(commands: Any) -> None:
    """`wmon demo`."""
    parser = commands.add_parser(
        "demo", help="play the scenarios into monitored streaming queries, with the dashboard"
    )
    parser.add_argument(
        "--database-url",
        help="store URL (default: $WMON_DATABASE_URL or wmon.db in --workdir, not the default "
        "store)",
    )
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
    others = sorted(set(SCENARIOS) - set(DEMO_SCENARIOS))
    parser.add_argument(
        "--scenarios",
        type=scenario_list,
        default=list(DEMO_SCENARIOS),
        help=f"comma-separated, one query each (default {','.join(DEMO_SCENARIOS)}; "
        f"also {', '.join(others)})",
    )
    parser.add_argument("--partitions", type=at_least(2), default=4, help="default 4")
    for option, default, help_text in (
        ("--rate", 20.0, "records per second of each scenario (default 20)"),
        (
            "--round-seconds",
            60.0,
            "each scenario's telemetry is written in rounds this long (default 60)",
        ),
        (
            "--trigger-seconds",
            5.0,
            "the queries' trigger interval, and event time read per trigger (default 5)",
        ),
        (
            "--idle-timeout",
            10.0,
            "seconds without new records before a partition is idle (default 10)",
        ),
        (
            "--stall-timeout",
            30.0,
            "seconds without progress before a watermark or partition is stalled (default 30)",
        ),
    ):
        parser.add_argument(option, type=positive_float, default=default, help=help_text)
    add_address(parser)
    parser.set_defaults(func="wmon.demo:demo")


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


def _serve(commands: Any) -> None:
    """`wmon serve`."""
    parser = commands.add_parser("serve", help="serve the dashboard and its JSON API")
    add_address(parser)
    parser.add_argument(
        "--database-url",
        "--database",
        dest="database_url",
        help="store URL (default: $WMON_DATABASE_URL or the embedded SQLite store)",
    )
    parser.set_defaults(func="wmon.serve:serve")


def _ingest(commands: Any) -> None:
    """`wmon ingest`."""
    ingest = commands.add_parser(
        "ingest",
        parents=[store_option()],
        help="read Spark event logs (files, rolling directories, history directories) into "
        "the store",
        description="Read Spark event logs into the store, exactly once: local paths or fsspec "
        "URLs (s3://, hdfs://, ...), single files or rolling directories, any of Spark's codecs "
        "but lzf, or a history directory of many applications. Run again, it goes on from "
        "where it stopped. A line or file it cannot read is reported and skipped; then it "
        "exits with status 1.",
    )
    ingest.add_argument("urls", metavar="PATH_OR_URL", nargs="+", help="where the logs are")
    ingest.add_argument(
        "--follow",
        action="store_true",
        help="keep reading new lines and new applications until interrupted",
    )
    ingest.add_argument(
        "--interval",
        type=positive_float,
        default=DEFAULT_INTERVAL_S,
        help=f"seconds between looks for new data with --follow (default {DEFAULT_INTERVAL_S:g})",
    )
    ingest.set_defaults(func="wmon.ingest:ingest_logs")


def _rejected(commands: Any) -> None:
    """`wmon rejected`."""
    parser = commands.add_parser(
        "rejected",
        parents=[store_option(), output_options()],
        help="events refused as invalid and set aside: list them, or replay them",
    )
    _add_limit(parser, 20, " to list, newest first")
    parser.add_argument(
        "--replay",
        action="store_true",
        help="write them again (once what refused them is mended); those stored leave the list",
    )
    parser.add_argument(
        "ids",
        nargs="*",
        type=whole_number(1, INT64_MAX),
        metavar="ID",
        help="with --replay, only these (default: every one)",
    )
    parser.set_defaults(func="wmon.rejected:rejected")


def _submit(commands: Any) -> None:
    """`wmon spark-conf` and `wmon submit`."""
    conf = commands.add_parser(
        "spark-conf", help="print the Spark settings that make a job report to the collector"
    )
    add_collector(conf)
    conf.add_argument(
        "--format",
        choices=("args", "defaults"),
        default="args",
        help="spark-submit arguments (default) or spark-defaults.conf lines",
    )
    conf.set_defaults(func="wmon.submit:spark_conf")
    submit = commands.add_parser(
        "submit",
        help="run pyspark's spark-submit with the listener added",
        usage="wmon submit [--url URL] [--token TOKEN] -- SPARK_SUBMIT_ARGS...",
    )
    add_collector(submit)
    submit.add_argument("submit_args", nargs=argparse.REMAINDER, help="spark-submit's arguments")
    submit.set_defaults(func="wmon.submit:submit_job")


def _pipelines(commands: Any) -> None:
    """`wmon pipelines`."""
    pipelines = commands.add_parser(
        "pipelines",
        help="run pyspark's spark-pipelines with every flow recorded by the listener",
        usage="wmon pipelines [--url URL] [--token TOKEN] {run,dry-run} [ARGS...]",
    )
    add_collector(pipelines)
    pipelines.add_argument(
        "pipelines_args", nargs=argparse.REMAINDER, help="spark-pipelines' command and arguments"
    )
    pipelines.set_defaults(func="wmon.pipelines:run_pipelines")
