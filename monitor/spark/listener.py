"""The Spark listener: turns each callback's event into ours and hands it on, never raising.

PySpark's own listener wrapper rebuilds every event field by field over Py4J before a
callback runs: measured here at 340-1200 ms per progress event on a busy 2-core driver.
Spark's JVM events carry their JSON, so our bridge fetches that in one round trip (1-6 ms)
and converts it in Python. The public callbacks stay for Spark Connect, which hands Python
events; both paths share the same conversion from the events' JSON form.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

from monitor.collect.spark_events import (
    IDLE,
    PROGRESS,
    STARTED,
    TERMINATED,
    named,
    streaming_event,
    timestamp_text,
)
from monitor.events import Event, QueryStarted, QueryTerminated

log = logging.getLogger(__name__)


class CallbackTimes:
    """How long the listener's callbacks took on Spark's thread (the most recent ones)."""

    def __init__(self, keep: int = 10_000) -> None:
        self.count = 0
        self.recent: deque[float] = deque(maxlen=keep)

    def add(self, seconds: float) -> None:
        """Record one callback's duration."""
        self.count += 1
        self.recent.append(seconds)


class WatermarkListener(StreamingQueryListener):
    """Collects start, progress, idle and termination events of every query of a session.

    Each event is read and checked, then submitted as our event; or, with `forward_json`, as
    Spark's own JSON in the event log's form (for the HTTP collector), a terminated event
    stamped with the time it arrived. With `trigger_of` (spark.triggers), a started event
    carries the query's trigger, where that can be read.
    """

    def __init__(
        self,
        submit: Callable[[Any], None],
        clock: Callable[[], float] = time.time,
        forward_json: bool = False,
        trigger_of: Callable[[str], dict[str, Any] | None] | None = None,
    ):
        self._submit, self._clock, self._forward_json = submit, clock, forward_json
        self._trigger_of = trigger_of
        self.times = CallbackTimes()
        self.rejected = 0
        self._running: set[str] = set()
        self._running_lock = threading.Lock()

    def handle(self, kind: str, doc: Callable[[], Any]) -> None:
        """Convert one of Spark's events of `kind` (spark_events.KINDS) from its JSON form and
        submit it; errors are logged. A terminated event happened now, by the listener's clock."""
        started = time.perf_counter()
        try:
            document, now_ms = doc(), int(self._clock() * 1000)
            if kind == STARTED and self._trigger_of is not None:
                document = {**document, "trigger": self._trigger_of(str(document.get("id")))}
            event = streaming_event(kind, document, now_ms)
            if self._forward_json:
                if isinstance(event, QueryTerminated):
                    document = {**document, "timestamp": timestamp_text(event.timestamp_ms)}
                self._submit(named(kind, document))
            else:
                self._submit(event)
            self._track(event)
        except Exception as error:
            # A monitoring failure must never become a query failure.
            self.rejected += 1
            log.error("wmon: ignored a %s it could not read: %s", kind, error)
        self.times.add(time.perf_counter() - started)

    def _track(self, event: Event) -> None:
        """Remember which runs started and have not terminated yet."""
        with self._running_lock:
            if isinstance(event, QueryStarted):
                self._running.add(event.run_id)
            elif isinstance(event, QueryTerminated):
                self._running.discard(event.run_id)

    def running_runs(self) -> set[str]:
        """The run ids this listener saw start and not yet terminate."""
        with self._running_lock:
            return set(self._running)

    def onQueryStarted(self, event: Any) -> None:
        """A query started a run."""
        self.handle(
            STARTED,
            lambda: {
                "id": str(event.id),
                "runId": str(event.runId),
                "name": event.name,
                "timestamp": event.timestamp,
            },
        )

    def onQueryProgress(self, event: Any) -> None:
        """A batch finished."""
        self.handle(PROGRESS, lambda: {"progress": json.loads(event.progress.json)})

    def onQueryIdle(self, event: Any) -> None:
        """A trigger found no new data."""
        self.handle(
            IDLE,
            lambda: {"id": str(event.id), "runId": str(event.runId), "timestamp": event.timestamp},
        )

    def onQueryTerminated(self, event: Any) -> None:
        """A run stopped or failed."""
        self.handle(
            TERMINATED,
            lambda: {
                "id": str(event.id),
                "runId": str(event.runId),
                "exception": event.exception,
                "errorClassOnException": event.errorClassOnException,
            },
        )

    @property
    def _jlistener(self) -> Any:
        """The JVM-side listener PySpark registers: our bridge instead of its wrapper."""
        if getattr(self, "_jlistenerobj", None) is None:
            from pyspark import SparkContext

            jvm = SparkContext._jvm
            assert jvm is not None, "no SparkContext is running"
            self._jlistenerobj = (
                jvm.org.apache.spark.sql.streaming.PythonStreamingQueryListenerWrapper(
                    JavaEventBridge(self)
                )
            )
        return self._jlistenerobj


class JavaEventBridge:
    """Receives Spark's JVM events through Py4J and reads each one's JSON in one call."""

    def __init__(self, listener: WatermarkListener) -> None:
        self._listener = listener

    def onQueryStarted(self, jevent: Any) -> None:
        """A query started a run."""
        self._listener.handle(STARTED, lambda: json.loads(jevent.json()))

    def onQueryProgress(self, jevent: Any) -> None:
        """A batch finished."""
        self._listener.handle(PROGRESS, lambda: json.loads(jevent.json()))

    def onQueryIdle(self, jevent: Any) -> None:
        """A trigger found no new data."""
        self._listener.handle(IDLE, lambda: json.loads(jevent.json()))

    def onQueryTerminated(self, jevent: Any) -> None:
        """A run stopped or failed."""
        self._listener.handle(TERMINATED, lambda: json.loads(jevent.json()))

    class Java:
        """The JVM interface Py4J implements with this object."""

        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]
