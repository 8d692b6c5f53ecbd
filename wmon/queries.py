"""`wmon queries`, `batches`, `partitions` and `timers`: the stored history, as tables or JSON."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.health.facts import DEFAULT_WINDOW_MS
from monitor.numbers import INT64_MAX
from monitor.store.batches import recent_batches
from monitor.store.models import Batch
from monitor.store.partitions import partition_details
from monitor.store.queries import find_query, list_queries
from monitor.store.timers import recent_timer_snapshots
from wmon.options import MAX_ROWS, json_option, open_store, store_option, whole_number
from wmon.render import (
    BATCH_COLUMNS,
    PARTITION_COLUMNS,
    QUERY_COLUMNS,
    TIMER_COLUMNS,
    partition_state,
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
    """List the source partitions of a query's batch (the latest by default), as the API's
    query page has them: the late window is the last five minutes, as the API's default."""
    with so.Session(open_store(args.database_url)) as session:
        query = find_query(session, args.query)
        batch = _batch(session, query.id, args.batch)
        since_ms = time.time_ns() // 1_000_000 - DEFAULT_WINDOW_MS
        details = [] if batch is None else partition_details(session, batch, since_ms)
        rows = [detail.as_dict() for detail in details]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(
            render_table(PARTITION_COLUMNS, [row | {"state": partition_state(row)} for row in rows])
        )


def _batch(session: so.Session, query_id: str, batch_id: int | None) -> Batch | None:
    """The query's batch `batch_id`, or its latest."""
    select = sa.select(Batch).where(Batch.query_id == query_id)
    if batch_id is not None:
        return session.scalars(select.where(Batch.batch_id == batch_id)).first()
    return session.scalars(select.order_by(Batch.batch_id.desc()).limit(1)).first()


def timers(args: argparse.Namespace) -> None:
    """List a query's most recent pending-timer snapshots."""
    with so.Session(open_store(args.database_url)) as session:
        query = find_query(session, args.query)
        print_rows(args, TIMER_COLUMNS, recent_timer_snapshots(session, query.id, args.limit))
