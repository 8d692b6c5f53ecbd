"""`wmon db upgrade` and `wmon prune`: the store's schema and its retention."""

from __future__ import annotations

import argparse
import time
from datetime import datetime, timezone
from typing import Any

from monitor.config import load_settings
from monitor.store import migrate
from monitor.store.engine import display_url
from wmon.options import Parser, open_store, store_option, whole_number

# As WMON_RETENTION_DAYS: a century.
MAX_RETENTION_DAYS = 36_500


def register(commands: Any) -> None:
    """Add `wmon db upgrade` and `wmon prune`."""
    db = commands.add_parser("db", help="manage the store's schema")
    db_commands = db.add_subparsers(dest="db_command", required=True, parser_class=Parser)
    db_commands.add_parser(
        "upgrade", parents=[store_option()], help="migrate the store to the newest schema"
    ).set_defaults(func=upgrade)
    prune = commands.add_parser(
        "prune", parents=[store_option()], help="delete history older than the retention period"
    )
    prune.add_argument(
        "--days",
        type=whole_number(1, MAX_RETENTION_DAYS),
        help="keep this many days, 1 to 36500 (default: $WMON_RETENTION_DAYS or 30)",
    )
    prune.set_defaults(func=prune_history)


def upgrade(args: argparse.Namespace) -> None:
    """Create or migrate the store's schema to the newest revision."""
    engine = open_store(args.database_url, must_exist=False)
    before = migrate.current_revision(engine)
    migrate.upgrade(engine)
    after = migrate.current_revision(engine)
    state = "already at" if before == after else f"upgraded from {before or 'empty'} to"
    print(f"store {display_url(engine)}: {state} revision {after}")


def prune_history(args: argparse.Namespace) -> None:
    """Delete history older than the retention period, in short transactions."""
    from monitor.store.prune import cutoff_ms, prune

    engine = open_store(args.database_url)
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
