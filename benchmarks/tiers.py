"""How long a History range takes to open on a store that holds what the default retention
keeps of one 64-partition query with a batch every 10 s: 48 hours of batches, 30 days of
per-minute rollups and a year of per-hour ones.

The batches go in through tests.support.bulk_history (their minutes and hours kept as the writer
keeps them); the older minutes and hours are inserted directly, rows of plausible figures (the
partitions' packed a row per span, as the writer packs them). A
range is opened as the History page opens it, both reads of 800 points (the query's series,
then the partitions'), first on a new connection ("cold"), then the best of three ("warm");
then the History page itself is drawn in Debian's Chromium for its presets of a day to 30 days.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.packed.packing import pack
from monitor.store.read.history import Kept, Window, batch_series, partition_series, resolution
from monitor.store.schema.bulk import insert_rows
from monitor.store.schema.models import Base, Query
from monitor.store.tiers.minutes import (
    HOUR_MS,
    MINUTE_MS,
    PARTITION_HOURS,
    PARTITION_MINUTES,
    QUERY_HOURS,
    QUERY_MINUTES,
    Tier,
)
from tests.support.bulk_history import fill

QUERY = "bench-tiers"
BATCH_EVERY_MS = 10_000
DAY_MS = 86_400_000
BATCHES_KEPT_MS = 2 * DAY_MS
MINUTES_KEPT_MS = 30 * DAY_MS
HOURS_KEPT_MS = 365 * DAY_MS
POINTS = 800
RANGES = (
    ("1 h", HOUR_MS),
    ("1 d", DAY_MS),
    ("7 d", 7 * DAY_MS),
    ("30 d", 30 * DAY_MS),
    ("365 d", HOURS_KEPT_MS),
)
CHUNK = 50_000
CHROMIUM = "/usr/bin/chromium"  # Debian's, as the browser tests use it
# The History page's presets drawn in the browser (?range=...).
PRESETS = (("1 d", "day"), ("7 d", "week"), ("30 d", "month"))
# In the page, from its start: a frame at a time until the range line tells what the charts
# show (it is written once they are loaded), then one more frame, in which they are painted;
# the milliseconds since navigation began.
DRAWN = """async () => {
  const frame = () => new Promise(requestAnimationFrame);
  const note = () => document.querySelector("#range-note").textContent;
  while (!note().includes("local time")) await frame();
  await frame();
  return performance.now();
}"""


def fill_retained(engine: sa.Engine, partitions: int, now_ms: int) -> None:
    """What the default retention keeps of one query at `now_ms`: 48 hours of batches, the
    minutes before them back to 30 days, the hours before those back to a year."""
    batches_from = now_ms - BATCHES_KEPT_MS
    batches_from -= batches_from % HOUR_MS
    fill(
        engine,
        QUERY,
        batches_from,
        (now_ms - batches_from) // BATCH_EVERY_MS,
        partitions,
        step_ms=BATCH_EVERY_MS,
    )
    minutes_from = now_ms - MINUTES_KEPT_MS
    minutes_from -= minutes_from % HOUR_MS
    hours_from = now_ms - HOURS_KEPT_MS
    hours_from -= hours_from % HOUR_MS
    with engine.begin() as connection:
        for tier, start, end in (
            (PARTITION_MINUTES, minutes_from, batches_from),
            (QUERY_MINUTES, minutes_from, batches_from),
            (PARTITION_HOURS, hours_from, batches_from),
            (QUERY_HOURS, hours_from, batches_from),
        ):
            rows = list(_rollup_rows(tier, start, end, partitions))
            table = Base.metadata.tables[tier.model.__tablename__]
            for first in range(0, len(rows), CHUNK):
                insert_rows(connection, table, rows[first : first + CHUNK])
        connection.execute(
            sa.update(Query)
            .where(Query.id == QUERY)
            .values(batches_kept_from_ms=batches_from, minutes_kept_from_ms=minutes_from)
        )


def _rollup_rows(
    tier: Tier, start_ms: int, end_ms: int, partitions: int
) -> Iterator[dict[str, Any]]:
    """A tier's rows of plausible figures for the spans from `start_ms` to `end_ms`."""
    batches = tier.width_ms // BATCH_EVERY_MS
    for span in range(start_ms, end_ms, tier.width_ms):
        key = {"query_id": QUERY, tier.start: span}
        if not tier.per_partition:
            yield key | _query_figures(span, batches)
            continue
        rows = {f"telemetry/{p}": _partition_figures(span, batches) for p in range(partitions)}
        yield key | {"figures": pack(tier.figures, rows)}


def _partition_figures(span_ms: int, batches: int) -> dict[str, Any]:
    return {
        "batches": batches,
        "records": 100 * batches,
        "offset_records": 100 * batches,
        "late_records": 1 if span_ms // MINUTE_MS % 50 == 0 else 0,
        "future_records": 0,
        "max_event_time_ms": span_ms,
        "watermark_min_ms": span_ms - 10_000,
        "watermark_max_ms": span_ms,
        "time_lag_max_ms": 10_000,
        "offset_lag_max": 50,
        "idle_batches": 0,
        "stalled_batches": 0,
        "rewound_batches": 0,
        "delay_max_ms": 10_000,
    }


def _query_figures(span_ms: int, batches: int) -> dict[str, Any]:
    return {
        "batches": batches,
        "first_batch_id": span_ms // BATCH_EVERY_MS,
        "last_batch_id": span_ms // BATCH_EVERY_MS + batches - 1,
        "watermark_min_ms": span_ms - 10_000,
        "watermark_max_ms": span_ms,
        "flink_watermark_max_ms": span_ms - 12_000,
        "watermark_age_max_ms": 10_000,
        "skew_sum_ms": 2_000 * batches,
        "skew_batches": batches,
        "skew_max_ms": 3_000,
        "duration_sum_ms": 550 * batches,
        "duration_batches": batches,
        "duration_max_ms": 600,
        "input_rows": 6_400 * batches,
        "input_rate_sum": 640.0 * batches,
        "input_rate_batches": batches,
        "processed_rate_sum": 1_280.0 * batches,
        "processed_rate_batches": batches,
        "stalled_batches": 0,
        "rewound_batches": 0,
        "rows_dropped_by_watermark": 0,
        "state_rows_max": 1_000,
        "state_memory_max_bytes": 2_048,
    }


def open_times(database_url: str, now_ms: int) -> Iterator[tuple[str, str, float, float]]:
    """Each range ending at `now_ms`: its label, the resolution read, seconds cold and warm."""
    from monitor.store.schema.engine import create_engine

    for label, span_ms in RANGES:
        window = Window(now_ms - span_ms, now_ms, POINTS)
        engine = create_engine(database_url)
        try:
            times = [_opened(engine, window) for _ in range(4)]
            with so.Session(engine) as session:
                kept = Kept.of(session.get_one(Query, QUERY))
        finally:
            engine.dispose()
        yield label, resolution(window, kept), times[0], min(times[1:])


def _opened(engine: sa.Engine, window: Window) -> float:
    """Seconds to read a range's query and partition series, as the History page asks."""
    started = time.perf_counter()
    with so.Session(engine) as session:
        kept = Kept.of(session.get_one(Query, QUERY))
        batch_series(session, QUERY, window, kept)
        partition_series(session, QUERY, window, kept)
    return time.perf_counter() - started


def page_times(database_url: str) -> list[tuple[str, float, float]]:
    """Each of PRESETS: its label, and the seconds from navigating to the History page until
    its charts are painted, in a fresh browser context each time (nothing cached): the first
    time ("cold") and the best of the next two ("warm")."""
    from playwright.sync_api import sync_playwright

    from tests.support.serving import serving
    from web import create_app
    from web.background import retention

    app = create_app({"DATABASE_URL": database_url})
    # Stopped before a first request starts it, pruning does not share the cores.
    retention.pruner(app).stop()
    found = []
    with serving(app) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            for label, preset in PRESETS:
                page = f"{url}/queries/{QUERY}/history?range={preset}"
                times = [_drawn(browser, page) for _ in range(3)]
                found.append((label, times[0], min(times[1:])))
        finally:
            browser.close()
    return found


def _drawn(browser: Any, url: str) -> float:
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    try:
        page = context.new_page()
        page.goto(url, wait_until="commit")
        return float(page.evaluate(DRAWN)) / 1000
    finally:
        context.close()
