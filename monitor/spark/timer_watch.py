"""Pending timers of transformWithState operators, read from the checkpoint off the job's path.

Spark's per-batch timer counters are not a ledger (on PySpark 4.3 numExpiredTimers stayed 0
while timers fired), so the authority is the checkpoint itself, read with the state reader
(`format("statestore")`, `readRegisteredTimers`) by a background thread of the driver.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from monitor.collect.progress import parse_time_ms
from monitor.events import Event, TimerSnapshot

log = logging.getLogger(__name__)


def read_timers(
    spark: Any, checkpoint: str, watermark_ms: int | None, due_within_ms: int
) -> tuple[int, int | None, int]:
    """Pending timers, the next expiry, and how many expire within `due_within_ms` of W."""
    from pyspark.sql import functions as F

    timers = (
        spark.read.format("statestore")
        .option("path", checkpoint)
        .option("readRegisteredTimers", "true")
        .load()
    )
    horizon = (watermark_ms or 0) + due_within_ms
    expiry = F.col("expiration_timestamp_ms")
    row = timers.agg(
        F.count(F.lit(1)).alias("pending"),
        F.min(expiry).alias("next_expiry"),
        F.sum(F.when(expiry <= horizon, 1).otherwise(0)).alias("due"),
    ).first()
    if row is None:
        return 0, None, 0
    return int(row["pending"]), row["next_expiry"], int(row["due"] or 0)


class TimerWatch:
    """Every `interval` seconds, snapshots a query's pending timers and submits them."""

    def __init__(
        self,
        spark: Any,
        query: Any,
        checkpoint: str,
        submit: Callable[[Event], None],
        interval: float = 30.0,
        due_within_ms: int = 30 * 60_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._spark, self._query, self._checkpoint = spark, query, checkpoint
        self._submit, self._interval, self._due_within_ms = submit, interval, due_within_ms
        self._clock = clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wmon-timers", daemon=True)
        self._thread.start()

    def snapshot(self) -> TimerSnapshot | None:
        """Read the timers now and submit them; None before the query's first batch."""
        progress = self._query.lastProgress
        if not progress:
            return None
        watermark = progress["eventTime"].get("watermark")
        watermark_ms = parse_time_ms(watermark) if watermark else None
        pending, next_expiry, due = read_timers(
            self._spark, self._checkpoint, watermark_ms, self._due_within_ms
        )
        snapshot = TimerSnapshot(
            query_id=str(self._query.id),
            run_id=str(self._query.runId),
            taken_at_ms=int(self._clock() * 1000),
            watermark_ms=watermark_ms,
            pending=pending,
            next_expiry_ms=next_expiry,
            due_within_ms=self._due_within_ms,
            due=due,
        )
        self._submit(snapshot)
        return snapshot

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.snapshot()
            except Exception as error:
                # Reading the checkpoint may race a commit; the next round tries again.
                log.warning("wmon: could not read pending timers: %s", error)

    def stop(self) -> None:
        """Stop the background snapshots."""
        self._stop.set()
        self._thread.join(timeout=self._interval + 5)
