"""`python -m benchmarks --backlog`: what reading backlogs costs (store.backlog).

Into a fresh SQLite store and, unless --no-postgres, a scratch PostgreSQL database, filled in
bulk (tests.support.bulk_history): one query of 64 partitions with 6 hours of 1-second batches
(21,600) whose every partition is read 3 hours behind what has arrived, and a fleet of 20 such
queries with 30 minutes of batches each, read 15 minutes behind. Then the query page's read of
the one query's backlog (its window, and its 64 heads' arrivals by bisection) and the overview's
read of the fleet's (every query's window in one statement, the bisections in lock-step) are
timed, best of three, and their statements counted; each head's age is checked against the data
(the head arrived exactly `behind` batches before).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from benchmarks.scratch import fresh_stores
from monitor.store.read.backlog import backlogs, fleet_backlogs
from monitor.store.read.batches import latest_batches
from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import upgrade
from tests.support.bulk_history import fill

PARTITIONS = 64
START_MS = 1_795_000_000_000
DEEP = ("deep", 21_600, 10_800)
FLEET = [(f"fleet-{n:02d}", 1_800, 900) for n in range(20)]


def backlog_figures(args: argparse.Namespace) -> None:
    """Fill each store, then time and count the reads."""
    for kind, url in fresh_stores(args, "backlog"):
        engine = create_engine(url)
        upgrade(engine)
        started = time.perf_counter()
        for query_id, batches, behind in [DEEP, *FLEET]:
            fill(engine, query_id, START_MS, batches, PARTITIONS, behind=behind)
        filled = DEEP[1] + sum(batches for _, batches, _ in FLEET)
        print(
            f"{kind}: filled {filled:,} batches of {PARTITIONS} partitions "
            f"in {time.perf_counter() - started:.0f} s"
        )
        _measure(engine)
        engine.dispose()


def _measure(engine: sa.Engine) -> None:
    """Time and count the query page's read and the overview's, checking the ages found."""
    with so.Session(engine) as session:
        newest = latest_batches(session, [query_id for query_id, _, _ in [DEEP, *FLEET]])
        deep = newest[DEEP[0]]
        fleet = {query_id: newest[query_id] for query_id, _, _ in FLEET}
        running = dict.fromkeys(fleet, True)
        one = partial(backlogs, session, deep, deep.batch_time_ms, True)
        found, seconds, statements = _timed(engine, one)
        _check(found, DEEP[2])
        print(
            "  the query page's backlog of one query, heads 3 h back in 21,600 batches: "
            f"{seconds * 1000:.0f} ms, {statements} statements"
        )
        # The fleet's newest batches are as old as one another: their ages as of them.
        as_of = next(iter(fleet.values())).batch_time_ms
        many = partial(fleet_backlogs, session, fleet, as_of, running)
        found, seconds, statements = _timed(engine, many)
        for query_id, _, behind in FLEET:
            _check(found[query_id], behind)
        print(
            "  the overview's backlogs of 20 queries, heads 15 min back: "
            f"{seconds * 1000:.0f} ms, {statements} statements"
        )


def head_age_ms(behind: int, p: int) -> int:
    """How long partition `p`'s head has waited at the newest batch, from the data: it is the
    first record of the batch `behind` batches back, and partition p's latest offsets run p
    records ahead of the 100 a batch; records arrive evenly between batches' latest offsets."""
    if p == 0:  # the first of the 100 that arrived in the second after that batch
        return behind * 1_000 - 10
    # The (101 - p)-th of the 100 that arrived in the second before it.
    return (behind + 1) * 1_000 - (101 - p) * 10


def _check(found: Any, behind: int) -> None:
    """Every partition's backlog age is the data's."""
    ages = {p.partition: p.backlog.age_ms for p in found.partitions}
    expected = {f"telemetry/{p}": head_age_ms(behind, p) for p in range(PARTITIONS)}
    if ages != expected:
        raise AssertionError(f"backlog ages {ages}, the data says {expected}")


def _timed(engine: sa.Engine, read: Callable[[], Any]) -> tuple[Any, float, int]:
    """What `read()` gives, its best time of three and how many statements it runs."""
    statements: list[str] = []

    def count(*args: Any) -> None:
        statements.append(args[2])

    best, found = float("inf"), None
    for attempt in range(3):
        if attempt == 0:
            sa.event.listen(engine, "before_cursor_execute", count)
        started = time.perf_counter()
        found = read()
        best = min(best, time.perf_counter() - started)
        if attempt == 0:
            sa.event.remove(engine, "before_cursor_execute", count)
    return found, best, len(statements)
