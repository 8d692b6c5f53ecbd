"""Offline-scooter detection, the pipeline of the Bird story (seeds/003): one event-time timer
per scooter, `offline_after_ms` after the newest report seen from it.

This is the *naive* processor Bird first wrote: every batch's newest record resets the timer.
Its output depends on how records were cut into batches; the buffered processor (next) fixes it.
"""

from __future__ import annotations

from collections.abc import Iterator
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
