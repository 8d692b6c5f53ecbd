"""`wmon rejected`: the events the write path refused and set aside, listed or replayed."""

from __future__ import annotations

import argparse

import sqlalchemy.orm as so

from monitor.collect.replay import replay
from monitor.store.write.rejected import list_rejected
from wmon.render import REJECTED_COLUMNS, render_json, render_view
from wmon.runtime import configured_timeouts, open_store


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
