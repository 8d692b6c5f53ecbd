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

from monitor.collect.progress import ProgressError, parse_progress, parse_time_ms
from monitor.events import Event, QueryIdle, QueryStarted, QueryTerminated

log = logging.getLogger(__name__)


def _field(doc: dict[str, Any], key: str) -> Any:
    if key not in doc:
        raise ProgressError(f"event has no {key!r}")
    return doc[key]


def _id(doc: dict[str, Any], key: str) -> str:
    value = _field(doc, key)
    if not isinstance(value, str) or not value:
        raise ProgressError(f"event field {key!r} must be a non-empty string, not {value!r}")
    return value


def started_event(doc: dict[str, Any]) -> QueryStarted:
    """A QueryStarted from the JSON form of Spark's QueryStartedEvent."""
    return QueryStarted(
        query_id=_id(doc, "id"),
        run_id=_id(doc, "runId"),
        name=doc.get("name"),
        timestamp_ms=parse_time_ms(_field(doc, "timestamp")),
    )


def idle_event(doc: dict[str, Any]) -> QueryIdle:
    """A QueryIdle from the JSON form of Spark's QueryIdleEvent."""
    return QueryIdle(
        query_id=_id(doc, "id"),
        run_id=_id(doc, "runId"),
        timestamp_ms=parse_time_ms(_field(doc, "timestamp")),
    )


def terminated_event(doc: dict[str, Any], now_ms: int) -> QueryTerminated:
    """A QueryTerminated from the JSON form of Spark's QueryTerminatedEvent (it has no time)."""
    return QueryTerminated(
        query_id=_id(doc, "id"),
        run_id=_id(doc, "runId"),
        timestamp_ms=now_ms,
        exception=doc.get("exception"),
        error_class=doc.get("errorClassOnException"),
    )


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
    """Collects start, progress, idle and termination events of every query of a session."""

    def __init__(self, submit: Callable[[Event], None], clock: Callable[[], float] = time.time):
        self._submit, self._clock = submit, clock
        self.times = CallbackTimes()
        self.rejected = 0
        self._running: set[str] = set()
        self._running_lock = threading.Lock()

    def handle(self, kind: str, doc: Callable[[], Any]) -> None:
        """Convert one event of `kind` from its JSON form and submit it; errors are logged."""
        started = time.perf_counter()
        try:
            event = self._convert(kind, doc())
            self._submit(event)
            self._track(event)
        except Exception as error:
            # A monitoring failure must never become a query failure.
            self.rejected += 1
            log.error("wmon: ignored a %s event it could not read: %s", kind, error)
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

    def _convert(self, kind: str, doc: Any) -> Event:
        if not isinstance(doc, dict):
            raise ProgressError(f"{kind} event must be a JSON object")
        if kind == "progress":
            return parse_progress(_field(doc, "progress"))
        if kind == "started":
            return started_event(doc)
        if kind == "idle":
            return idle_event(doc)
        return terminated_event(doc, int(self._clock() * 1000))

    def onQueryStarted(self, event: Any) -> None:
        """A query started a run."""
        self.handle(
            "started",
            lambda: {
                "id": str(event.id),
                "runId": str(event.runId),
                "name": event.name,
                "timestamp": event.timestamp,
            },
        )

    def onQueryProgress(self, event: Any) -> None:
        """A batch finished."""
        self.handle("progress", lambda: {"progress": json.loads(event.progress.json)})

    def onQueryIdle(self, event: Any) -> None:
        """A trigger found no new data."""
        self.handle(
            "idle",
            lambda: {"id": str(event.id), "runId": str(event.runId), "timestamp": event.timestamp},
        )

    def onQueryTerminated(self, event: Any) -> None:
        """A run stopped or failed."""
        self.handle(
            "terminated",
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
        self._listener.handle("started", lambda: json.loads(jevent.json()))

    def onQueryProgress(self, jevent: Any) -> None:
        """A batch finished."""
        self._listener.handle("progress", lambda: json.loads(jevent.json()))

    def onQueryIdle(self, jevent: Any) -> None:
        """A trigger found no new data."""
        self._listener.handle("idle", lambda: json.loads(jevent.json()))

    def onQueryTerminated(self, jevent: Any) -> None:
        """A run stopped or failed."""
        self._listener.handle("terminated", lambda: json.loads(jevent.json()))

    class Java:
        """The JVM interface Py4J implements with this object."""

        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]
