"""`wmon advise`: the smallest watermark delay that would have kept 99%, 99.9% and 100% of a
query's records, per query and partition, beside the delay in force."""

from __future__ import annotations

import argparse
import json
import sys
from types import SimpleNamespace

import sqlalchemy.orm as so

from monitor.config import load_settings
from monitor.health.lateness import SHARES
from monitor.store.read.drop_causes import NO_DELAY_KEEPS, Lateness
from monitor.store.read.lateness_reads import lateness_over
from monitor.store.read.queries import find_query
from wmon.render import Column, change, duration, iso_time, paragraph, plain, render_view
from wmon.runtime import open_store


def delay_text(ms: int | None, delay_ms: int) -> str:
    """A delay as people read it, with how much longer (+) or shorter (−) than `delay_ms`
    state is kept with it."""
    if ms is None:
        return "-"
    return f"{duration(ms)} ({change(ms - delay_ms)})"


COLUMNS = (
    Column("partition", "partition", lambda name: "(query)" if name is None else name, cut=True),
    Column("records", "records"),
    Column("late", "late_records"),
    Column("delay now", "delay_ms", duration),
) + tuple(
    Column(f"keeps {share:.1%}".replace(".0%", "%"), f"share_{index}", plain)
    for index, share in enumerate(SHARES)
)


def share_text(item: Lateness, share: float) -> str:
    """The advice for one share: its delay written out, or that no delay keeps them."""
    if item.no_delay_keeps(share):
        return "no delay keeps these"
    return delay_text(item.smallest_delay(share), item.delay_ms)


def _shown(item: Lateness) -> SimpleNamespace:
    """A table row: the figures, and each share's advice written out."""
    delays = {f"share_{index}": share_text(item, share) for index, share in enumerate(SHARES)}
    return SimpleNamespace(**item.advice(), **delays)


def advise(args: argparse.Namespace) -> None:
    """Print the delays that would have kept each share of the query's records."""
    with so.Session(open_store(args.database_url)) as session:
        query = find_query(session, args.query)
        tolerance_ms = load_settings().future_tolerance_s * 1000
        read = lateness_over(session, query, args.from_ms, args.to_ms, tolerance_ms)
        kept_from_ms = query.batches_kept_from_ms
    found = read.items
    if read.resolution != "batch":
        # Beside the table or the JSON, which stays as it is for the programs that read it.
        print(
            f"wmon: the query's batches before {iso_time(kept_from_ms)} UTC are no longer kept"
            f" (WMON_RETENTION_BATCHES_HOURS): read from its per-{read.resolution} rollups, to"
            f" the {read.resolution}",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps([item.advice() for item in found], indent=2))
        return
    if not found:
        print(
            paragraph(
                "(none: no batch in that range was measured against a watermark by the"
                " instrumented operator; the event-log and JVM-listener ways in cannot measure"
                " records)"
            )
        )
        return
    print(render_view(COLUMNS, [_shown(item) for item in found], args.wide))
    print(
        paragraph(
            "Each delay keeps at least that share of the records, at most one bucket (a factor"
            " of two in lateness) above the exact delay; (+/-) is how much longer state is kept."
        )
    )
    if any(item.no_delay_keeps(share) for item in found for share in SHARES):
        print(paragraph(f"{NO_DELAY_KEEPS[0].upper()}{NO_DELAY_KEEPS[1:]}."))
