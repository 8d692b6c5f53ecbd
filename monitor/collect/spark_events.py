"""Spark's streaming events in their JSON form, whichever way they came in, turned into ours.

Spark's event log writes each listener event as one JSON object named by its class,
`{"Event": "org.apache.spark.sql.streaming.StreamingQueryListener$QueryProgressEvent", …}`;
the JVM listener posts the same objects to the collector, and the in-process listener builds
them from Spark's `event.json()`. One conversion serves all three ways in.

Spark has no event for a batch in flight; `monitor.attach` and the JVM listener send one of
their own in the same form, named `wmon.BatchRunning` ({"id", "runId", "batchId" (null: the
one after the last stored), "timestamp", "since"}).

Spark's started event does not say how the query is triggered. Where the way in can read it from
the running query, it adds `trigger`: {"kind": the trigger as Spark names it, without "Trigger"
(ProcessingTime, AvailableNow, OneTime, Continuous, …), "intervalMs": a periodic one's interval}.
The JVM listener in a Declarative Pipeline's server (`wmon pipelines`) adds `pipeline`, the
pipeline's name, and has named the query `<pipeline>/<flow>`.

Spark's terminated event carries no time. Whoever saw it happen may add a `timestamp` in the
form of the started event's; otherwise the caller's fallback time is used (the collector's
clock, or the event log's own clock: the latest time the log showed before it).
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime, timezone
from typing import Any

from monitor.collect.progress import ProgressError, parse_progress, parse_time_ms
from monitor.collect.texts import (
    MAX_DEPTH,
    deeper_than,
    short_name,
    storable_document,
    too_long,
)
from monitor.events import (
    MAX_ID,
    MAX_NAME,
    BatchProgress,
    BatchRunning,
    Event,
    QueryIdle,
    QueryStarted,
    QueryTerminated,
)
from monitor.numbers import shown

STREAMING_EVENT = "org.apache.spark.sql.streaming.StreamingQueryListener$"
STARTED, PROGRESS, IDLE, TERMINATED = (
    "QueryStartedEvent",
    "QueryProgressEvent",
    "QueryIdleEvent",
    "QueryTerminatedEvent",
)
KINDS = (STARTED, PROGRESS, IDLE, TERMINATED)
# Our own event, sent in the same form: a batch in flight (Spark tells of none).
RUNNING = "wmon.BatchRunning"


def _field(doc: dict[str, Any], key: str) -> Any:
    if key not in doc:
        raise ProgressError(f"event has no {key!r}")
    return doc[key]


def _id(doc: dict[str, Any], key: str) -> str:
    value = _field(doc, key)
    if not isinstance(value, str) or not value:
        raise ProgressError(f"event field {key!r} must be a non-empty string, not {shown(value)}")
    return value


def _time(doc: dict[str, Any]) -> int:
    return parse_time_ms(_field(doc, "timestamp"))


def _text(doc: dict[str, Any], key: str) -> str | None:
    value = doc.get(key)
    if value is not None and not isinstance(value, str):
        raise ProgressError(f"event field {key!r} must be a string, not {shown(value)}")
    return value


def started_event(doc: dict[str, Any]) -> QueryStarted:
    """A QueryStarted from the JSON form of Spark's QueryStartedEvent, with our `trigger` and
    `pipeline`."""
    kind, interval_ms = _trigger(doc.get("trigger"))
    return QueryStarted(
        query_id=_id(doc, "id"),
        run_id=_id(doc, "runId"),
        name=_text(doc, "name"),
        timestamp_ms=_time(doc),
        trigger=kind,
        trigger_interval_ms=interval_ms,
        pipeline=_text(doc, "pipeline"),
    )


_TRIGGER_KIND = re.compile(r"[A-Za-z]{1,32}")


def _trigger(value: Any) -> tuple[str | None, int | None]:
    """A started event's trigger: its kind and interval (None when not told)."""
    if value is None:
        return None, None
    kind = value.get("kind") if isinstance(value, dict) else None
    if not isinstance(kind, str) or not _TRIGGER_KIND.fullmatch(kind):
        raise ProgressError(f"event field 'trigger' must name its kind, not {shown(value)}")
    interval = value.get("intervalMs")
    if interval is not None and not (
        isinstance(interval, int) and not isinstance(interval, bool) and interval >= 0
    ):
        raise ProgressError(
            f"trigger 'intervalMs' must be milliseconds or null, not {shown(interval)}"
        )
    return kind, interval


def idle_event(doc: dict[str, Any]) -> QueryIdle:
    """A QueryIdle from the JSON form of Spark's QueryIdleEvent."""
    return QueryIdle(query_id=_id(doc, "id"), run_id=_id(doc, "runId"), timestamp_ms=_time(doc))


def running_event(doc: dict[str, Any]) -> BatchRunning:
    """A BatchRunning from its JSON form (RUNNING)."""
    batch_id = doc.get("batchId")
    if batch_id is not None and not (
        isinstance(batch_id, int) and not isinstance(batch_id, bool) and batch_id >= 0
    ):
        raise ProgressError(
            f"event field 'batchId' must be a batch id or null, not {shown(batch_id)}"
        )
    return BatchRunning(
        query_id=_id(doc, "id"),
        run_id=_id(doc, "runId"),
        timestamp_ms=_time(doc),
        batch_id=batch_id,
        since_ms=parse_time_ms(_field(doc, "since")),
    )


def terminated_event(doc: dict[str, Any], fallback_ms: int | None) -> QueryTerminated:
    """A QueryTerminated from the JSON form of Spark's QueryTerminatedEvent: at its `timestamp`
    if it has one, else at `fallback_ms`."""
    if "timestamp" in doc:
        at_ms = _time(doc)
    elif fallback_ms is None:
        raise ProgressError("terminated event has no 'timestamp' and no earlier event gave a time")
    else:
        at_ms = fallback_ms
    return QueryTerminated(
        query_id=_id(doc, "id"),
        run_id=_id(doc, "runId"),
        timestamp_ms=at_ms,
        exception=_text(doc, "exception"),
        error_class=_text(doc, "errorClassOnException"),
    )


def streaming_event(kind: str, doc: Any, fallback_ms: int | None) -> Event:
    """Our event from the JSON of one of Spark's streaming events of `kind` (one of KINDS),
    its text made storable and its keys checked against what the store keeps."""
    if not isinstance(doc, dict):
        raise ProgressError(f"{kind} must be a JSON object, not {type(doc).__name__}")
    return within_limits(_event(kind, storable_document(shallow(doc)), fallback_ms))


def shallow(doc: dict[str, Any]) -> dict[str, Any]:
    """The event's document; ProgressError if it nests deeper than is read."""
    if deeper_than(doc, MAX_DEPTH):
        raise ProgressError(f"the event nests arrays and objects more than {MAX_DEPTH} levels deep")
    return doc


def _event(kind: str, doc: dict[str, Any], fallback_ms: int | None) -> Event:
    if kind == PROGRESS:
        return parse_progress(_field(doc, "progress"))
    if kind == STARTED:
        return started_event(doc)
    if kind == IDLE:
        return idle_event(doc)
    if kind == TERMINATED:
        return terminated_event(doc, fallback_ms)
    raise ProgressError(f"not a streaming query event: {shown(kind)}")


def within_limits(event: Event) -> Event:
    """The event, its name cut short if long; ProgressError naming an id or partition longer
    than the store keeps."""
    for field in ("query_id", "run_id"):
        if too_long(getattr(event, field), MAX_ID):
            raise ProgressError(f"event field {field!r} is longer than {MAX_ID} characters")
    if isinstance(event, BatchProgress):
        keys = [p.partition for source in event.sources for p in source.partitions]
        keys += [p.topic for source in event.sources for p in source.partitions if p.topic]
        keys += [times.partition for times in event.event_times]
        if any(too_long(key, MAX_NAME) for key in keys):
            raise ProgressError(f"a partition or topic name is longer than {MAX_NAME} characters")
    if isinstance(event, (BatchProgress, QueryStarted)) and event.name != short_name(event.name):
        return dataclasses.replace(event, name=short_name(event.name))
    return event


def event_name(doc: Any) -> str:
    """The class name a Spark event log line or collector event gives under "Event"."""
    if not isinstance(doc, dict):
        raise ProgressError(f"a Spark event is a JSON object, not {type(doc).__name__}")
    name = doc.get("Event")
    if not isinstance(name, str) or not name:
        raise ProgressError("not a Spark event: it has no 'Event' name")
    return name


def spark_event(doc: Any, fallback_ms: int | None) -> Event | None:
    """Our event from one of Spark's named events; None for Spark events about other things
    (jobs, stages, tasks, and streaming events this version does not know)."""
    name = event_name(doc)
    if name == RUNNING:
        return within_limits(running_event(storable_document(shallow(doc))))
    kind = name.removeprefix(STREAMING_EVENT)
    if kind == name or kind not in KINDS:
        return None
    return streaming_event(kind, doc, fallback_ms)


def named(kind: str, doc: dict[str, Any]) -> dict[str, Any]:
    """The event-log form of a streaming event's JSON: the same fields, named by its class."""
    return {"Event": STREAMING_EVENT + kind, **doc}


def timestamp_text(at_ms: int) -> str:
    """Epoch milliseconds as Spark writes its events' timestamps: 2026-11-23T10:00:00.123Z."""
    moment = datetime.fromtimestamp(at_ms // 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at_ms % 1000:03d}Z"


# Where Spark's other events keep their time (epoch ms), for the event log's clock.
_TIMES = {
    "SparkListenerApplicationStart": ("Timestamp",),
    "SparkListenerApplicationEnd": ("Timestamp",),
    "SparkListenerJobStart": ("Submission Time",),
    "SparkListenerJobEnd": ("Completion Time",),
    "SparkListenerStageCompleted": ("Stage Info", "Completion Time"),
    "SparkListenerTaskEnd": ("Task Info", "Finish Time"),
    "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart": ("time",),
    "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd": ("time",),
}


def event_time_ms(doc: dict[str, Any]) -> int | None:
    """The time a Spark event says it happened, in epoch ms, if it says one; a progress event
    happens when its trigger ends."""
    name = doc.get("Event")
    if not isinstance(name, str):
        return None
    kind = name.removeprefix(STREAMING_EVENT)
    try:
        if kind == PROGRESS:
            return _progress_end_ms(doc.get("progress"))
        if kind in KINDS:
            return parse_time_ms(doc["timestamp"]) if "timestamp" in doc else None
    except ProgressError:
        return None
    value: Any = doc
    for key in _TIMES.get(name, ()):
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _progress_end_ms(progress: Any) -> int | None:
    if not isinstance(progress, dict) or "timestamp" not in progress:
        return None
    durations = progress.get("durationMs")
    took = durations.get("triggerExecution") if isinstance(durations, dict) else None
    took = took if isinstance(took, int) and not isinstance(took, bool) and took >= 0 else 0
    return parse_time_ms(progress["timestamp"]) + took
