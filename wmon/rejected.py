"""`wmon rejected`: the events the write path refused and set aside, listed or replayed."""

from __future__ import annotations

import argparse
from typing import Any

import sqlalchemy.orm as so

from monitor.collect.replay import replay
from monitor.numbers import INT64_MAX
from monitor.store.rejected import list_rejected
from wmon.options import (
    MAX_ROWS,
    configured_timeouts,
    open_store,
    output_options,
    store_option,
    whole_number,
)
from wmon.render import REJECTED_COLUMNS, render_json, render_view


def register(commands: Any) -> None:
    """Add `wmon rejected`."""
    parser = commands.add_parser(
        "rejected",
        parents=[store_option(), output_options()],
        help="events refused as invalid and set aside: list them, or replay them",
    )
    parser.add_argument(
        "--limit",
        type=whole_number(1, MAX_ROWS),
        default=20,
        help="how many to list, newest first, at most 1000000 (default 20)",
    )
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
    parser.set_defaults(func=rejected)


def rejected(args: argparse.Namespace) -> None:
    """List the set-aside events, or replay them."""
    engine = open_store(args.database_url)
    if args.replay:
        done = replay(engine, args.ids or None, configured_timeouts())
        print(
            f"replayed: {done.stored} stored, {done.unchanged} unchanged "
            f"(already stored or superseded), {done.refused} refused again"
        )
        return
    with so.Session(engine) as session:
        rows = list_rejected(session, args.limit)
        print(
            render_json(REJECTED_COLUMNS, rows)
            if args.json
            else render_view(REJECTED_COLUMNS, rows, args.wide)
        )
