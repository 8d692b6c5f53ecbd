"""`python -m benchmarks`: the listener's time per progress event, the store's sustained ingest
rate, the instrumented operator's overhead, writes beside a prune, the three ways in (the JVM
listener, the collector over HTTP, an event-log backfill), the dashboard's latency and history, a
fleet, a flood of queries, a flood of senders and the live push from several servers.

The benchmarks wire Spark, the store and the dashboard together and need the `dev` extra's
packages, so they run from a checkout and are not part of the installed package; each module is
imported only when its measurement runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from wmon.options import CliError, Parser, whole_number

PROG = "python -m benchmarks"
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks asked for; a missing prerequisite is one line on stderr and exit 1."""
    args = build_parser().parse_args(argv)
    try:
        run(args)
    except CliError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


def build_parser() -> Parser:
    """The benchmarks' options."""
    parser = Parser(prog=PROG, description="benchmark the listener, the store and the dashboard")
    parser.add_argument(
        "--events",
        type=whole_number(1, 10_000_000),
        default=2_000,
        help="progress events per measurement (default 2000)",
    )
    parser.add_argument(
        "--partitions",
        type=whole_number(1, 100_000),
        default=64,
        help="source partitions per event (default 64)",
    )
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get("WMON_TEST_POSTGRES_URL", DEFAULT_POSTGRES),
        help="a PostgreSQL server where a scratch database may be made",
    )
    parser.add_argument("--no-postgres", action="store_true", help="skip PostgreSQL")
    parser.add_argument(
        "--spark-seconds",
        type=whole_number(0, 86_400),
        default=60,
        help="length of the real Spark run (default 60; 0 skips it)",
    )
    parser.add_argument(
        "--overhead-records",
        type=whole_number(0, 100_000_000),
        default=100_000,
        help="records per run of the instrumented-operator overhead test (default 100000; 0 skips)",
    )
    parser.add_argument(
        "--operator-rows",
        type=whole_number(0, 1_000_000_000),
        default=4_000_000,
        help="rows per run of the instrumented operator on the JVM-only pipeline "
        "(default 4000000; 0 skips)",
    )
    parser.add_argument(
        "--operator-rounds",
        type=whole_number(1, 100),
        default=5,
        help="runs of each pipeline, plain and with each operator, alternating; the best of "
        "each counts (default 5)",
    )
    parser.add_argument(
        "--prune-hours",
        type=whole_number(0, 24 * 365),
        default=1,
        help="hours of 1-second batches pruned beside a writer (default 1; 0 skips)",
    )
    parser.add_argument(
        "--request-events",
        type=whole_number(1, 10_000),
        default=100,
        help="progress events per request to the collector over HTTP (default 100)",
    )
    _add_selection(parser)
    _add_dashboard_arguments(parser)
    _add_fleet_arguments(parser)
    return parser


def _add_selection(parser: argparse.ArgumentParser) -> None:
    only = parser.add_mutually_exclusive_group()
    only.add_argument(
        "--dashboard",
        action="store_true",
        help="measure only the dashboard: store-to-browser latency and opening a day of history",
    )
    only.add_argument(
        "--ways-in",
        action="store_true",
        help="measure only the ways in: the JVM listener on Spark's bus (--spark-seconds), the "
        "collector over HTTP and an event-log backfill (--events, --partitions)",
    )
    only.add_argument(
        "--fleet",
        type=fleet_sizes,
        metavar="N[,N…]",
        help="measure only a fleet of N queries (several sizes, comma-separated) on PostgreSQL: "
        "writer processes, the dashboard's push and the evaluator on one store "
        "(--fleet-seconds, --fleet-writers, --clients)",
    )
    only.add_argument(
        "--flood",
        type=fleet_sizes,
        metavar="N[,N…]",
        help="measure only a flood of N new queries (several sizes, comma-separated) on a fresh "
        "SQLite store and, unless --no-postgres, a scratch PostgreSQL database: the overview, "
        "/metrics and an evaluation pass",
    )
    only.add_argument(
        "--senders",
        type=fleet_sizes,
        metavar="N[,N…]",
        help="measure only a flood of N senders posting to the collector at once (several "
        "numbers, comma-separated), on a fresh SQLite store and, unless --no-postgres, a scratch "
        "PostgreSQL database: each POST's time and the overview's meanwhile",
    )
    only.add_argument(
        "--storage",
        action="store_true",
        help="measure only what the history costs on disk: --events instrumented batches of "
        "--partitions partitions into a fresh SQLite store and, unless --no-postgres, a scratch "
        "PostgreSQL database, table by table, and 30 days of such a query",
    )
    only.add_argument(
        "--backlog",
        action="store_true",
        help="measure only the backlog reads: one query's heads 3 h back and a fleet of 20 "
        "queries' on a fresh SQLite store and, unless --no-postgres, a scratch PostgreSQL "
        "database, filled in bulk",
    )
    only.add_argument(
        "--servers",
        type=whole_number(1, 64),
        metavar="N",
        help="measure only the live push from N `wmon serve` processes on one scratch PostgreSQL "
        "database, the --clients spread over them by --client-processes (a multiple of N): "
        "store-to-browser latency (--live-seconds, --partitions)",
    )
    only.add_argument(
        "--operator",
        action="store_true",
        help="measure only the instrumented operator, in the JVM and in Python: on the JVM-only "
        "pipeline (--operator-rows) and the scooter pipeline (--overhead-records)",
    )


def fleet_sizes(text: str) -> list[int]:
    """Fleet sizes: whole numbers from 1 to 100,000, comma-separated."""
    size = whole_number(1, 100_000)
    return [size(part.strip()) for part in text.split(",")]


def _add_fleet_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fleet-seconds",
        type=whole_number(1, 86_400),
        default=60,
        help="seconds each fleet size runs for, a batch a second per query (default 60)",
    )
    parser.add_argument(
        "--fleet-writers",
        type=whole_number(1, 64),
        default=4,
        help="processes writing the fleet's batches (default 4)",
    )


def _add_dashboard_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--clients",
        type=whole_number(0, 10_000),
        default=100,
        help="Socket.IO clients watching one query (default 100; 0 skips the latency test)",
    )
    parser.add_argument(
        "--client-processes",
        type=whole_number(1, 64),
        default=4,
        help="processes the clients are spread over (default 4)",
    )
    parser.add_argument(
        "--live-seconds",
        type=whole_number(1, 86_400),
        default=60,
        help="batches written, one a second, while the clients watch (default 60)",
    )
    parser.add_argument(
        "--history-hours",
        type=whole_number(0, 24 * 365),
        default=24,
        help="hours of 1-second batches the History page opens (default 24; 0 skips)",
    )
    parser.add_argument(
        "--history-points",
        type=whole_number(1, 5_000),
        default=800,
        help="points per series (default 800, what a History chart 1,600 pixels wide asks for)",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path("var/bench"),
        help="where the filled SQLite history store is kept for the next run (default var/bench)",
    )


def run(args: argparse.Namespace) -> None:
    """Run every measurement asked for and print the figures the docs quote."""
    from benchmarks.backlog import backlog_figures
    from benchmarks.collect_path import collector_figures
    from benchmarks.fleet import fleet_figures
    from benchmarks.flood import flood_figures
    from benchmarks.history import history_figures
    from benchmarks.operator import operator_figures
    from benchmarks.prune import prune_figures
    from benchmarks.push import live_figures, servers_figures
    from benchmarks.senders import sender_figures
    from benchmarks.spark import spark_figures
    from benchmarks.storage import storage_figures
    from benchmarks.ways_in import ways_in_figures

    only = {
        "ways_in": ways_in_figures,
        "fleet": fleet_figures,
        "flood": flood_figures,
        "senders": sender_figures,
        "operator": operator_figures,
        "storage": storage_figures,
        "backlog": backlog_figures,
        "servers": servers_figures,
    }
    for selection, figures in only.items():
        if getattr(args, selection):
            figures(args)
            return
    if not args.dashboard:
        collector_figures(args)
        spark_figures(args)
        ways_in_figures(args)
        if args.prune_hours > 0:
            prune_figures(args)
    if args.clients > 0:
        live_figures(args)
    if args.history_hours > 0:
        history_figures(args)
