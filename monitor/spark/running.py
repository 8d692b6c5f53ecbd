"""Batches in flight, told by the driver: a query whose batch runs long is working, not silent.

Spark tells of a batch when it ends. A batch that runs for minutes (a slow sink, a backfill)
would leave a query that says nothing all that time; this watch, a background thread of the
driver, reads each active query's status every few seconds and, while its trigger is active,
sends a `wmon.BatchRunning` event (:mod:`monitor.collect.spark_events`): the batch, and since
when the watch has seen it run (to within its interval).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from monitor.collect.spark_events import RUNNING, timestamp_text

log = logging.getLogger(__name__)

INTERVAL_S = 5.0


class RunningWatch:
    """Every `interval` seconds, a `wmon.BatchRunning` event per active query whose trigger is
    active, in its JSON form, to `submit`."""

    def __init__(
        self,
        spark: Any,
        submit: Callable[[dict[str, Any]], None],
        interval: float = INTERVAL_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._spark, self._submit, self._interval, self._clock = spark, submit, interval, clock
        # When the watch first saw each run's batch in flight: {(run id, batch id): ms}.
        self._seen: dict[tuple[str, int | None], int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wmon-running", daemon=True)
        self._thread.start()

    def look(self) -> list[dict[str, Any]]:
        """The events of the queries running a batch now; those in flight are remembered."""
        now_ms = int(self._clock() * 1000)
        found, seen = [], {}
        for query in self._spark.streams.active:
            if not query.status.get("isTriggerActive"):
                continue
            last = query.lastProgress
            batch_id = None if last is None else int(last["batchId"]) + 1
            key = (str(query.runId), batch_id)
            seen[key] = self._seen.get(key, now_ms)
            found.append(
                {
                    "Event": RUNNING,
                    "id": str(query.id),
                    "runId": str(query.runId),
                    "batchId": batch_id,
                    "timestamp": timestamp_text(now_ms),
                    "since": timestamp_text(seen[key]),
                }
            )
        self._seen = seen
        return found

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                for event in self.look():
                    self._submit(event)
            except Exception as error:  # a monitoring failure must never reach the job
                log.warning("wmon: could not read the queries' status: %s", error)

    def stop(self) -> None:
        """Stop watching."""
        self._stop.set()
        self._thread.join(timeout=self._interval + 5)
