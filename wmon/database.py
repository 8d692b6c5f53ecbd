"""`wmon db upgrade` and `wmon prune`: the store's schema and its retention."""

from __future__ import annotations

import argparse
import time
from datetime import datetime, timezone

from monitor.config import load_settings
from monitor.store.schema import migrate
from monitor.store.schema.engine import display_url
from wmon.runtime import open_store


def upgrade(args: argparse.Namespace) -> None:
    """Create or migrate the store's schema to the newest revision."""
    engine = open_store(args.database_url, must_exist=False)
    before = migrate.current_revision(engine)
    migrate.upgrade(engine)
    after = migrate.current_revision(engine)
    state = "already at" if before == after else f"upgraded from {before or 'empty'} to"
    print(f"store {display_url(engine)}: {state} revision {after}")


def prune_history(args: argparse.Namespace) -> None:
    """Delete each tier's history older than its retention, in short transactions."""
    from monitor.store.tiers.prune import Retention, prune

    engine = open_store(args.database_url)
    settings = load_settings()
    retention = Retention(
        args.batches_hours or settings.retention_batches_hours,
        args.days or settings.retention_days,
        args.hours_days or settings.retention_hours_days,
    )
    now_ms = time.time_ns() // 1_000_000
    cutoffs = retention.cutoffs(now_ms)
    pruned = prune(engine, cutoffs)
    print(f"store {display_url(engine)}: pruned in {pruned.transactions} transactions")
    for tier, before_ms, unit, unit_ms in (
        ("batches", cutoffs.batches_ms, "hours", 3_600_000),
        ("minutes", cutoffs.minutes_ms, "days", 86_400_000),
        ("hours", cutoffs.hours_ms, "days", 86_400_000),
    ):
        before = datetime.fromtimestamp(before_ms / 1000, tz=timezone.utc)
        kept = f"{(now_ms - before_ms) // unit_ms} {unit}"
        print(f"  {tier:<8} before {before:%Y-%m-%d %H:%M:%S} UTC ({kept} kept)")
    print()
    for table, count in pruned.deleted.items():
        estimated = " (estimated: a large day dropped)" if table in pruned.estimated else ""
        print(f"  {table:<22} {count:>12,} rows deleted{estimated}")
