"""`python -m benchmarks --flood N`: does the dashboard stay up when a store holds N queries?

A flood of new query ids (a misconfigured job, a sender with a bug) leaves a store with
thousands of queries, each with a batch or two. What must hold then is that the fleet's reads
take a bounded number of statements: the overview (`GET /api/queries`) and the scrape
(`GET /metrics`) answer over HTTP from the real app in a threaded server, the overview page
draws its first rows in Debian's Chromium (from navigation until they are painted), and an
evaluation pass of the default rules runs as the dashboard's evaluator runs it, first an hour
later (each query's `no_progress` fires and its `watermark_age` is pending: two new alerts and
their transitions a query), then a second after that (no transitions, every live alert's value
brought up to date). Each store is fresh: a temporary SQLite file, a scratch PostgreSQL
database; the pruner is not run.
"""

from __future__ import annotations

import argparse
import time
import uuid
from typing import Any

import sqlalchemy.orm as so

from benchmarks.fetching import fetched
from benchmarks.scratch import fresh_stores
from monitor.alerts.evaluate import evaluate
from monitor.alerts.rulefile import RuleSet
from monitor.alerts.runner import now_ms as wall_clock_ms
from monitor.collect.progress import parse_progress
from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import upgrade
from monitor.store.write.writes import write_events
from tests.support.serving import serving
from tests.support.synthetic import synthetic_progress
from web import create_app
from web.background import retention

PARTITIONS = 4  # each flooded query's source partitions: a flood's events are small
GROUP_SIZE = 500  # events stored in one transaction while filling
HOUR_MS = 3_600_000
TARGETS_S = {1_000: 1.0, 10_000: 5.0}  # docs/benchmarks.md: under 1 s, and a few seconds
CHROMIUM = "/usr/bin/chromium"  # Debian's, as the browser tests use it
PAGE_ROWS = 100  # the overview draws a hundred rows at first
SETTLE_MS = 1_000  # after a load, before the next
# In the page, from its start: a frame at a time until `rows` rows are in the table, then one
# more frame, in which they are painted; the milliseconds since navigation began, and since
# the list of queries (GET /api/queries) came in.
DRAWN = """async (rows) => {
  const frame = () => new Promise(requestAnimationFrame);
  while (document.querySelectorAll("#queries tbody tr").length < rows) await frame();
  await frame();
  const [list] = performance.getEntriesByName(new URL("/api/queries", location.href).href);
  return [performance.now(), performance.now() - list.responseEnd];
}"""


def flood(database_url: str, size: int, now_ms: int) -> float:
    """Store one batch of each of `size` new queries, at `now_ms`; seconds it took."""
    engine = create_engine(database_url)
    upgrade(engine)
    started = time.perf_counter()
    try:
        for start in range(0, size, GROUP_SIZE):
            events = [
                parse_progress(
                    synthetic_progress(str(uuid.uuid4()), str(uuid.uuid4()), 0, PARTITIONS, now_ms)
                )
                for _ in range(min(GROUP_SIZE, size - start))
            ]
            write_events(engine, events)
    finally:
        engine.dispose()
    return time.perf_counter() - started


def evaluated(database_url: str, now_ms: int) -> tuple[float, int]:
    """Seconds one evaluation pass of the default rules takes at `now_ms`, and the alerts'
    transitions it stored."""
    engine = create_engine(database_url)
    try:
        with so.Session(engine) as session:
            started = time.perf_counter()
            events = evaluate(session, RuleSet(), now_ms)
            return time.perf_counter() - started, len(events)
    finally:
        engine.dispose()


def measure(kind: str, database_url: str, size: int) -> None:
    """Flood one store with `size` queries and print what each read and pass took, and whether
    the slowest met the target for that size."""
    now_ms = wall_clock_ms()
    filled = flood(database_url, size, now_ms)
    app = create_app({"DATABASE_URL": database_url})
    # Pruning has a measurement of its own (--prune-hours); stopped before a first request
    # starts it, its pass over every query does not share the cores with what is measured.
    retention.pruner(app).stop()
    with serving(app) as url:
        overview = [fetched(f"{url}/api/queries") for _ in range(3)]
        scrape = [fetched(f"{url}/metrics") for _ in range(3)]
        page, after_list = drawn(url, min(size, PAGE_ROWS))
    firing, fired = evaluated(database_url, now_ms + HOUR_MS)
    quiet, moved = evaluated(database_url, now_ms + HOUR_MS + 1_000)
    target = TARGETS_S.get(size)
    slowest = max(overview + scrape + page + [firing, quiet])
    print(
        f"  {kind}, {size:,} queries (stored in {filled:.1f} s): overview "
        f"{_seconds(overview)}, /metrics {_seconds(scrape)}, the page drawn {_seconds(page)} "
        f"({_seconds(after_list)} after its list came); evaluation {firing:.2f} s "
        f"({fired:,} transitions), then {quiet:.2f} s ({moved:,} transitions)"
        + (
            "" if target is None else f": {'meets' if slowest <= target else 'misses'} {target:g} s"
        ),
        flush=True,
    )


def drawn(url: str, rows: int, times: int = 3) -> tuple[list[float], list[float]]:
    """Seconds from navigating to the overview page until its first `rows` rows are painted,
    and of those the seconds after its list of queries came in, in Debian's Chromium, each
    time in a fresh browser context (nothing cached)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            loads = [_drawn_once(browser, url, rows) for _ in range(times)]
        finally:
            browser.close()
    return [total for total, _ in loads], [after for _, after in loads]


def _drawn_once(browser: Any, url: str, rows: int) -> tuple[float, float]:
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    try:
        page = context.new_page()
        page.goto(url, wait_until="commit")
        total_ms, after_list_ms = page.evaluate(DRAWN, rows)
        # Once live, the page has the server read the fleet again: let it finish before the
        # next load, which would otherwise share the cores with it.
        page.wait_for_selector("#connection.connection-live")
        page.wait_for_timeout(SETTLE_MS)
        return total_ms / 1000, after_list_ms / 1000
    finally:
        context.close()


def _seconds(timings: list[float]) -> str:
    """The first of `timings` (cold) and the best of the rest (warm)."""
    return f"{timings[0]:.2f} s cold, {min(timings[1:]):.2f} s warm"


def flood_figures(args: argparse.Namespace) -> None:
    """Each flood size on a fresh SQLite store and a fresh PostgreSQL database."""
    print(
        f"a flood of new queries ({PARTITIONS} partitions, one batch each): the overview and "
        "/metrics over HTTP (3 requests each), the overview page in Chromium (3 loads), then "
        "two evaluation passes of the default rules:",
        flush=True,
    )
    for size in args.flood:
        for kind, database_url in fresh_stores(args, "flood"):
            measure(kind, database_url, size)
