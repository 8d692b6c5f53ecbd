"""The listener without a JVM: PySpark's own event classes and fake Py4J events, same results."""

import json
import logging
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from pyspark.sql.streaming.listener import (
    QueryIdleEvent,
    QueryProgressEvent,
    QueryStartedEvent,
    QueryTerminatedEvent,
)

from monitor.collect.writer import StoreWriter
from monitor.events import BatchProgress, QueryIdle, QueryStarted, QueryTerminated
from monitor.spark.attach import MonitorHandle
from monitor.spark.listener import CallbackTimes, JavaEventBridge, WatermarkListener
from monitor.store.schema.engine import create_engine
from tests.support.paths import FIXTURES
from tests.support.progress import fixture, progress_doc

NOW_S = 1_795_316_300.5  # exact in binary, so the terminated time is exactly ..._500 ms
NOW_MS = 1_795_316_300_500
RATE_QUERY, RATE_RUN = (
    "ce6c40cf-c37e-43d2-a1ac-13e2bb1bd45c",
    "a36be4a9-45b9-44dd-80d1-5495afe230d1",
)
FAIL_QUERY, FAIL_RUN = (
    "17a3af54-c41a-48da-a352-a9d927cc51f9",
    "30a78b76-50df-4c16-b444-379511a74666",
)
DEDUP_QUERY, DEDUP_RUN = (
    "f0d022b0-67fe-479d-b85e-9547537344c4",
    "75b1ebf2-c3cf-40b7-b47b-31c21e00d0db",
)


class FakeJavaEvent:
    """Stands in for a Py4J proxy of Spark's JVM event: only json() is ever called."""

    def __init__(self, text: str | None = None, error: Exception | None = None) -> None:
        self.text, self.error = text, error

    def json(self) -> str:
        if self.error is not None:
            raise self.error
        assert self.text is not None
        return self.text


def collecting_listener() -> tuple[WatermarkListener, list[Any]]:
    submitted: list[Any] = []
    return WatermarkListener(submitted.append, clock=lambda: NOW_S), submitted


# file, callback, PySpark event class, the event we expect (progress: the fields we check)
LIFECYCLE_CASES = [
    (
        "started.json",
        "onQueryStarted",
        QueryStartedEvent,
        QueryStarted(RATE_QUERY, RATE_RUN, "rate_window", 1_795_316_245_214),
    ),
    (
        "idle.json",
        "onQueryIdle",
        QueryIdleEvent,
        QueryIdle(FAIL_QUERY, FAIL_RUN, 1_795_316_262_000),
    ),
    (
        "terminated.json",
        "onQueryTerminated",
        QueryTerminatedEvent,
        QueryTerminated(RATE_QUERY, RATE_RUN, NOW_MS, None, None),
    ),
    (
        "terminated_failed.json",
        "onQueryTerminated",
        QueryTerminatedEvent,
        QueryTerminated(
            FAIL_QUERY,
            FAIL_RUN,
            NOW_MS,
            fixture("terminated_failed.json")["exception"],
            "FOREACH_BATCH_USER_FUNCTION_ERROR",
        ),
    ),
]
LIFECYCLE_IDS = ["started", "idle", "terminated", "terminated with an exception"]

# file, (query id, run id, name, batch id, batch time, watermark, input rows)
PROGRESS_CASES = [
    (
        "progress_first_batch.json",
        (RATE_QUERY, RATE_RUN, "rate_window", 0, 1_795_316_245_595, None, 0),
    ),
    (
        "progress_kafka.json",
        (RATE_QUERY, RATE_RUN, "telemetry_windows", 2, 1_795_316_253_502, 1_795_316_249_318, 40),
    ),
    (
        "progress_rate_dedup.json",
        (DEDUP_QUERY, DEDUP_RUN, "rate_dedup", 5, 1_795_316_260_000, 1_795_316_257_047, 20),
    ),
    (
        "progress_rate_window.json",
        (RATE_QUERY, RATE_RUN, "rate_window", 2, 1_795_316_253_502, 1_795_316_249_318, 40),
    ),
]


def test_every_progress_fixture_has_a_case() -> None:
    assert sorted(p.name for p in FIXTURES.glob("progress_*.json")) == [
        name for name, _ in PROGRESS_CASES
    ]


def through_pyspark_event(callback: str, event_class: Any, name: str) -> list[Any]:
    listener, submitted = collecting_listener()
    getattr(listener, callback)(event_class.fromJson(fixture(name)))
    assert (listener.rejected, listener.times.count) == (0, 1)
    return submitted


def through_java_bridge(callback: str, name: str) -> list[Any]:
    listener, submitted = collecting_listener()
    getattr(JavaEventBridge(listener), callback)(FakeJavaEvent((FIXTURES / name).read_text()))
    assert (listener.rejected, listener.times.count) == (0, 1)
    return submitted


@pytest.mark.parametrize(
    ("name", "callback", "event_class", "expected"), LIFECYCLE_CASES, ids=LIFECYCLE_IDS
)
def test_lifecycle_events_are_the_same_through_both_paths(
    name: str, callback: str, event_class: Any, expected: Any
) -> None:
    assert through_pyspark_event(callback, event_class, name) == [expected]
    assert through_java_bridge(callback, name) == [expected]


def test_the_failed_run_keeps_spark_exception_text() -> None:
    [event] = through_java_bridge("onQueryTerminated", "terminated_failed.json")
    assert event.exception.startswith("py4j.Py4JException: An exception was raised")
    assert "RuntimeError: boom: scooter table unavailable\n" in event.exception
    assert len(event.exception) == len(fixture("terminated_failed.json")["exception"])


@pytest.mark.parametrize(("name", "fields"), PROGRESS_CASES, ids=[n for n, _ in PROGRESS_CASES])
def test_progress_events_are_the_same_through_both_paths(name: str, fields: tuple) -> None:
    from_pyspark = through_pyspark_event("onQueryProgress", QueryProgressEvent, name)
    from_bridge = through_java_bridge("onQueryProgress", name)
    assert from_pyspark == from_bridge
    [event] = from_bridge
    assert type(event) is BatchProgress
    assert (
        event.query_id,
        event.run_id,
        event.name,
        event.batch_id,
        event.batch_time_ms,
        event.watermark_ms,
        event.num_input_rows,
    ) == fields


def without(doc: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != key}


STARTED = fixture("started.json")
BAD_JAVA_EVENTS = [
    ("onQueryProgress", "QueryProgressEvent", FakeJavaEvent("{")),
    ("onQueryProgress", "QueryProgressEvent", FakeJavaEvent(json.dumps({"event": "progress"}))),
    (
        "onQueryProgress",
        "QueryProgressEvent",
        FakeJavaEvent(json.dumps({"progress": without(progress_doc(), "batchId")})),
    ),
    (
        "onQueryProgress",
        "QueryProgressEvent",
        FakeJavaEvent(json.dumps({"progress": progress_doc(batchId="7")})),
    ),
    (
        "onQueryProgress",
        "QueryProgressEvent",
        FakeJavaEvent(error=RuntimeError("Py4J gateway is gone")),
    ),
    ("onQueryStarted", "QueryStartedEvent", FakeJavaEvent("[]")),
    (
        "onQueryStarted",
        "QueryStartedEvent",
        FakeJavaEvent(json.dumps(without(STARTED, "timestamp"))),
    ),
    (
        "onQueryStarted",
        "QueryStartedEvent",
        FakeJavaEvent(json.dumps({**STARTED, "timestamp": "yesterday"})),
    ),
    ("onQueryStarted", "QueryStartedEvent", FakeJavaEvent(json.dumps({**STARTED, "id": None}))),
    (
        "onQueryIdle",
        "QueryIdleEvent",
        FakeJavaEvent(json.dumps(without(fixture("idle.json"), "runId"))),
    ),
    ("onQueryTerminated", "QueryTerminatedEvent", FakeJavaEvent(json.dumps({"runId": FAIL_RUN}))),
    ("onQueryTerminated", "QueryTerminatedEvent", FakeJavaEvent("null")),
]
BAD_JAVA_IDS = [
    "truncated json",
    "no progress",
    "progress without batchId",
    "batchId is text",
    "json() raises",
    "started is a list",
    "started without timestamp",
    "started with a bad timestamp",
    "started with a null id",
    "idle without runId",
    "terminated without id",
    "terminated is null",
]


def assert_rejected_and_logged(
    listener: WatermarkListener, submitted: list[Any], caplog: Any, kind: str
) -> None:
    assert submitted == []
    assert (listener.rejected, listener.times.count) == (1, 1)
    [record] = [r for r in caplog.records if r.name == "monitor.spark.listener"]
    assert record.levelno == logging.ERROR
    assert record.getMessage().startswith(f"wmon: ignored a {kind} it could not read: ")


@pytest.mark.parametrize(("callback", "kind", "jevent"), BAD_JAVA_EVENTS, ids=BAD_JAVA_IDS)
def test_a_malformed_java_event_is_rejected_and_logged(
    callback: str, kind: str, jevent: FakeJavaEvent, caplog: pytest.LogCaptureFixture
) -> None:
    listener, submitted = collecting_listener()
    getattr(JavaEventBridge(listener), callback)(jevent)  # must not raise
    assert_rejected_and_logged(listener, submitted, caplog, kind)


def bad_started_time() -> QueryStartedEvent:
    return QueryStartedEvent(uuid.UUID(RATE_QUERY), uuid.UUID(RATE_RUN), "q", "not a time", set())


BAD_PYTHON_EVENTS = [
    ("onQueryProgress", "QueryProgressEvent", SimpleNamespace(progress=SimpleNamespace(json="{"))),
    ("onQueryProgress", "QueryProgressEvent", SimpleNamespace(progress=SimpleNamespace(json="{}"))),
    ("onQueryProgress", "QueryProgressEvent", object()),
    ("onQueryStarted", "QueryStartedEvent", bad_started_time()),
    ("onQueryStarted", "QueryStartedEvent", SimpleNamespace(id=RATE_QUERY)),
    (
        "onQueryIdle",
        "QueryIdleEvent",
        SimpleNamespace(id=RATE_QUERY, runId=RATE_RUN, timestamp=None),
    ),
    ("onQueryTerminated", "QueryTerminatedEvent", object()),
]
BAD_PYTHON_IDS = [
    "progress json truncated",
    "progress json empty object",
    "no progress attribute",
    "started with a bad timestamp",
    "started without runId",
    "idle without a timestamp",
    "terminated without fields",
]


@pytest.mark.parametrize(("callback", "kind", "event"), BAD_PYTHON_EVENTS, ids=BAD_PYTHON_IDS)
def test_a_malformed_python_event_is_rejected_and_logged(
    callback: str, kind: str, event: Any, caplog: pytest.LogCaptureFixture
) -> None:
    listener, submitted = collecting_listener()
    getattr(listener, callback)(event)  # must not raise
    assert_rejected_and_logged(listener, submitted, caplog, kind)


def failing_submit(event: Any) -> None:
    raise RuntimeError("writer is gone")


@pytest.mark.parametrize("path", ["pyspark event", "java bridge"])
def test_a_failing_submit_never_escapes_the_callback(
    path: str, caplog: pytest.LogCaptureFixture
) -> None:
    listener = WatermarkListener(failing_submit, clock=lambda: NOW_S)
    if path == "pyspark event":
        listener.onQueryProgress(QueryProgressEvent.fromJson(fixture("progress_kafka.json")))
    else:
        text = (FIXTURES / "progress_kafka.json").read_text()
        JavaEventBridge(listener).onQueryProgress(FakeJavaEvent(text))
    assert (listener.rejected, listener.times.count) == (1, 1)
    [record] = [r for r in caplog.records if r.name == "monitor.spark.listener"]
    assert record.getMessage() == (
        "wmon: ignored a QueryProgressEvent it could not read: writer is gone"
    )


def test_every_callback_is_timed_accepted_or_not() -> None:
    listener, submitted = collecting_listener()
    bridge = JavaEventBridge(listener)
    listener.onQueryStarted(QueryStartedEvent.fromJson(fixture("started.json")))
    assert listener.times.count == 1
    listener.onQueryProgress(QueryProgressEvent.fromJson(fixture("progress_kafka.json")))
    bridge.onQueryIdle(FakeJavaEvent((FIXTURES / "idle.json").read_text()))
    bridge.onQueryProgress(FakeJavaEvent("{"))
    listener.onQueryTerminated(QueryTerminatedEvent.fromJson(fixture("terminated.json")))
    assert (listener.times.count, len(listener.times.recent)) == (5, 5)
    assert all(0 <= seconds < 1 for seconds in listener.times.recent)
    assert (len(submitted), listener.rejected) == (4, 1)


def test_callback_times_keep_only_the_most_recent() -> None:
    times = CallbackTimes(keep=3)
    for seconds in (0.1, 0.2, 0.3, 0.4, 0.5):
        times.add(seconds)
    assert (times.count, list(times.recent)) == (5, [0.3, 0.4, 0.5])


def test_the_handle_reports_events_the_listener_could_not_read(database_url: str) -> None:
    engine = create_engine(database_url)
    writer = StoreWriter(engine, capacity=10)
    listener = WatermarkListener(writer.submit)
    handle = MonitorHandle(None, listener, writer, engine, "sqlite:///test")
    JavaEventBridge(listener).onQueryProgress(FakeJavaEvent("{"))
    JavaEventBridge(listener).onQueryStarted(FakeJavaEvent(json.dumps(fixture("started.json"))))
    # Its end too: flush waits for the end of a run Spark does not run (here: none runs).
    JavaEventBridge(listener).onQueryTerminated(
        FakeJavaEvent(json.dumps(fixture("terminated.json")))
    )
    assert handle.flush(30)
    stats = handle.stats()
    assert (stats.written, stats.rejected) == (2, 1)
    writer.close(5)
    engine.dispose()
