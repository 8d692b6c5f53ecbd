"""Offline-scooter detection, the pipeline of the Bird scooter story: one event-time timer
per scooter, `offline_after_ms` after the newest report seen from it.

This is the *naive* processor Bird first wrote: every batch's newest record resets the timer.
Its output depends on how records were cut into batches; the buffered processor (next) fixes it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pandas as pd
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BooleanType, LongType, StructField, StructType

OFFLINE_EVENTS = "scooter_id string, event string, event_time_ms long"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
_STATE = StructType(
    [StructField("last_seen_ms", LongType()), StructField("offline", BooleanType())]
)


def _event(scooter: str, event: str, time_ms: int) -> pd.DataFrame:
    return pd.DataFrame({"scooter_id": [scooter], "event": [event], "event_time_ms": [time_ms]})


class NaiveOfflineDetector(StatefulProcessor):
    """Emits 'offline' when a scooter's timer fires and 'online' when it reports again."""

    def __init__(self, offline_after_ms: int = 30 * 60_000) -> None:
        self.offline_after_ms = offline_after_ms

    def init(self, handle: StatefulProcessorHandle) -> None:
        """Declare the per-scooter state."""
        self.handle = handle
        self.state = handle.getValueState("scooter", _STATE)

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any
    ) -> Iterator[pd.DataFrame]:
        """Reset the scooter's timer to its newest report; say it is back if it was offline."""
        newest = max(int(frame["timestamp"].max().value // 1_000_000) for frame in rows)
        before = self.state.get()
        for expiry in list(self.handle.listTimers()):
            self.handle.deleteTimer(expiry)
        self.handle.registerTimer(newest + self.offline_after_ms)
        self.state.update((newest, False))
        if before is not None and before[1]:
            yield _event(key[0], "online", newest)

    def handleExpiredTimer(
        self, key: Any, timerValues: Any, expiredTimerInfo: Any
    ) -> Iterator[pd.DataFrame]:
        """The scooter has been silent for `offline_after_ms` of event time."""
        last_seen = expiredTimerInfo.getExpiryTimeInMs() - self.offline_after_ms
        self.state.update((last_seen, True))
        yield _event(key[0], "offline", last_seen)

    def close(self) -> None:
        """Nothing to release."""


_BUFFERED = StructType([StructField("event_time_ms", LongType())])


class BufferedOfflineDetector(StatefulProcessor):
    """Handles each report only once the watermark passes it, in event-time order with timers.

    Reports wait in state (one timer at each report's time); when a timer fires, the reports up
    to it are taken in order, and a silence of `offline_after_ms` between two of them, or up to
    the timer, is an offline period. The output no longer depends on how records were cut into
    batches, at the cost of keeping unprocessed reports in state.
    """

    def __init__(self, offline_after_ms: int = 30 * 60_000) -> None:
        self.offline_after_ms = offline_after_ms

    def init(self, handle: StatefulProcessorHandle) -> None:
        """Declare the buffered reports and the per-scooter state."""
        self.handle = handle
        self.buffer = handle.getListState("buffer", _BUFFERED)
        self.state = handle.getValueState("scooter", _STATE)

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any
    ) -> Iterator[pd.DataFrame]:
        """Buffer the reports and ask to be called back when the watermark passes each."""
        times = sorted({int(t.value // 1_000_000) for frame in rows for t in frame["timestamp"]})
        self.buffer.appendList([(t,) for t in times])
        for time_ms in times:
            self.handle.registerTimer(time_ms)
        return iter([])

    def handleExpiredTimer(
        self, key: Any, timerValues: Any, expiredTimerInfo: Any
    ) -> Iterator[pd.DataFrame]:
        """Take the reports up to the watermark in order, then check the silence up to it."""
        # Everything at or below the watermark is final; a timer registered now for a moment
        # already passed would only fire in a later batch, which may never come.
        now = max(expiredTimerInfo.getExpiryTimeInMs(), timerValues.getCurrentWatermarkInMs())
        waiting = sorted(t for (t,) in self.buffer.get()) if self.buffer.exists() else []
        due, later = [t for t in waiting if t <= now], [t for t in waiting if t > now]
        self.buffer.clear()
        if later:
            self.buffer.put([(t,) for t in later])
        state = self.state.get()
        last_seen, offline = (state[0], state[1]) if state is not None else (None, False)
        events, last_seen, offline = replay(due, now, last_seen, offline, self.offline_after_ms)
        if last_seen is not None:
            self.state.update((last_seen, offline))
            if not offline and last_seen + self.offline_after_ms > now:
                self.handle.registerTimer(last_seen + self.offline_after_ms)
        return iter([_event(key[0], event, time_ms) for event, time_ms in events])

    def close(self) -> None:
        """Nothing to release."""


def replay(
    reports: list[int], now_ms: int, last_seen: int | None, offline: bool, offline_after_ms: int
) -> tuple[list[tuple[str, int]], int | None, bool]:
    """Walk a scooter's reports in time order up to `now_ms`: the offline/online events, and
    where the scooter stands afterwards (last report, offline or not)."""
    events: list[tuple[str, int]] = []
    for time_ms in reports:
        silent = last_seen is not None and time_ms - last_seen >= offline_after_ms
        if silent and not offline and last_seen is not None:
            events.append(("offline", last_seen))
            offline = True
        if offline:
            events.append(("online", time_ms))
        last_seen, offline = time_ms, False
    if last_seen is not None and not offline and now_ms - last_seen >= offline_after_ms:
        events.append(("offline", last_seen))
        offline = True
    return events, last_seen, offline


def offline_periods(
    times_by_scooter: dict[str, list[int]], offline_after_ms: int, watermark_ms: int
) -> set[tuple[str, str, int]]:
    """The ground truth: every silence of `offline_after_ms` among the reports the watermark
    has passed (later ones are not judged yet), and a silence up to the watermark itself."""
    events = set()
    for scooter, times in times_by_scooter.items():
        ordered = sorted(t for t in set(times) if t <= watermark_ms)
        for before, after in zip(ordered, ordered[1:], strict=False):
            if after - before >= offline_after_ms:
                events |= {(scooter, "offline", before), (scooter, "online", after)}
        if ordered and watermark_ms - ordered[-1] >= offline_after_ms:
            events.add((scooter, "offline", ordered[-1]))
    return events


def scooter_pipeline(
    spark: Any,
    log_path: str,
    checkpoint: str,
    processor: StatefulProcessor,
    *,
    instrumented: bool = True,
    options: Mapping[str, str] | None = None,
    delay: str = "30 minutes",
) -> Any:
    """Telemetry → (instrumented operator) → watermark → offline detection per scooter.

    `options` go to the source beside path and subscribe (read limits, say). Needs the RocksDB
    state store (`ROCKSDB_PROVIDER`), as transformWithState does.
    """
    from monitor.spark.instrument import instrument

    reader = (
        spark.readStream.format("partitioned_log")
        .option("path", log_path)
        .option("subscribe", "telemetry")
        .options(**(options or {}))
    )
    telemetry = reader.load()
    if instrumented:
        telemetry = instrument(telemetry, checkpoint=checkpoint, delay=delay)
    return (
        telemetry.withWatermark("timestamp", delay)
        .groupBy("key")
        .transformWithStateInPandas(processor, OFFLINE_EVENTS, "Append", "EventTime")
    )
