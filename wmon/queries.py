"""`wmon queries`, `batches`, `partitions` and `timers`: the stored history, as tables or JSON."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import sqlalchemy.orm as so

from monitor.numbers import INT64_MAX
from monitor.store.reads import (
    find_query,
    list_queries,
    partition_views,
    recent_batches,
    recent_timer_snapshots,
)
from wmon.options import MAX_ROWS, json_option, open_store, store_option, whole_number
from wmon.render import (
    BATCH_COLUMNS,
    PARTITION_COLUMNS,
    QUERY_COLUMNS,
    TIMER_COLUMNS,
    render_json,
    render_table,
)


def register(commands: Any) -> None:
    """Add the commands that read the stored history."""
    parents = [store_option(), json_option()]
    commands.add_parser("queries", parents=parents, help="list stored queries").set_defaults(
        func=queries
    )
    batches_parser = commands.add_parser(
        "batches", parents=parents, help="a query's recent batches"
    )
    batches_parser.add_argument("query", help="query id or name")
    batches_parser.add_argument(
        "--limit",
        type=whole_number(1, MAX_ROWS),
        default=20,
        help="how many, at most 1000000 (default 20)",
    )
    batches_parser.set_defaults(func=batches)
    partitions_parser = commands.add_parser(
        "partitions", parents=parents, help="a batch's source partitions"
    )
    partitions_parser.add_argument("query", help="query id or name")
    partitions_parser.add_argument(
        "--batch", type=whole_number(0, INT64_MAX), help="batch id (default: latest)"
    )
    partitions_parser.set_defaults(func=partitions)
    timers_parser = commands.add_parser(
        "timers", parents=parents, help="a query's pending timers over time"
    )
    timers_parser.add_argument("query", help="query id or name")
    timers_parser.add_argument(
        "--limit",
        type=whole_number(1, MAX_ROWS),
        default=20,
        help="how many, at most 1000000 (default 20)",
    )
    timers_parser.set_defaults(func=timers)


def print_rows(args: argparse.Namespace, columns: Any, rows: Sequence[Any]) -> None:
    """Rows as a table, or as JSON with --json."""
    print(render_json(columns, rows) if args.json else render_table(columns, rows))


def queries(args: argparse.Namespace) -> None:
    """List every stored query."""
    with so.Session(open_store(args.database_url)) as session:
        print_rows(args, QUERY_COLUMNS, list_queries(session))


def batches(args: argparse.Namespace) -> None:
    """List a query's most recent batches."""
    with so.Session(open_store(args.database_url)) as session:
        query = find_query(session, args.query)
        print_rows(args, BATCH_COLUMNS, recent_batches(session, query.id, args.limit))


def partitions(args: argparse.Namespace) -> None:
    """List the source partitions of a query's batch (the latest by default)."""
    with so.Session(open_store(args.database_url)) as session:
        query = find_query(session, args.query)
        print_rows(args, PARTITION_COLUMNS, partition_views(session, query.id, args.batch))


def timers(args: argparse.Namespace) -> None:
    """List a query's most recent pending-timer snapshots."""
    with so.Session(open_store(args.database_url)) as session:
        query = find_query(session, args.query)
        print_rows(args, TIMER_COLUMNS, recent_timer_snapshots(session, query.id, args.limit))
