"""The JVM listener (`jvm/`, wmon.spark.WatermarkListener) in the shared SparkSession, posting
to real HTTP receivers: Spark's event-log form, headers, outages, overflow, rejection and
settings. One small streaming query feeds every listener at once, each with its own receiver
in its own state, to keep Spark's time short; the collector's answers (what is retried, what
is rejected) are tested with idle events, with no query at all."""

import json
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from monitor.collect.spark_events import RUNNING, spark_event
from monitor.events import BatchRunning
from tests.support.collector_stub import Answer, Receiver
from tests.support.waiting import wait_until

pytestmark = pytest.mark.spark

EVENT = "org.apache.spark.sql.streaming.StreamingQueryListener$"
ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
FILES = 4
# Retries soon after a receiver comes back, so the tests do not wait out a long backoff.
FAST = {"spark.wmon.maxBackoffMs": "300"}
# No batch-in-flight events among those the tests count: the watch has tests of its own.
QUIET = {"spark.wmon.runningIntervalMs": "3600000"}
# 2026-11-23T10:00:00Z: event time of the first record.
BASE_S = 1_795_428_000


def new_listener(spark: Any, url: str | None, settings: dict[str, str]) -> Any:
    """A WatermarkListener built through py4j, as Spark builds one: from a SparkConf."""
    conf = spark._jvm.org.apache.spark.SparkConf(False)
    if url is not None:
        conf.set("spark.wmon.url", url)
    for key, value in settings.items():
        conf.set(key, value)
    return spark._jvm.wmon.spark.WatermarkListener(conf)


def stats(listener: Any) -> dict[str, int]:
    return dict(listener.stats())


def identity(event: dict[str, Any]) -> tuple[Any, ...]:
    """What tells two listeners' copies of an event apart (not the terminated time)."""
    batch = event["progress"]["batchId"] if "progress" in event else None
    run_id = event["progress"]["runId"] if "progress" in event else event["runId"]
    return event["Event"], run_id, batch


def start_query(spark: Any, folder: Path) -> Any:
    """Deduplication over JSON files read one per batch: a watermark that moves each batch."""
    data = folder / "data"
    data.mkdir()
    now = time.time()
    for k in range(FILES):
        rows = [
            {"key": 10 * k + i, "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))}
            for i, t in enumerate(range(BASE_S + 60 * k, BASE_S + 60 * k + 5))
        ]
        path = data / f"part-{k}.json"
        path.write_text("\n".join(json.dumps(row) for row in rows))
        os.utime(path, (now - 100 + k, now - 100 + k))  # the file source reads the oldest first
    frame = (
        spark.readStream.schema("key INT, ts TIMESTAMP")
        .option("maxFilesPerTrigger", 1)
        .json(str(data))
        .withWatermark("ts", "10 seconds")
        .dropDuplicates(["key", "ts"])
    )
    return (
        frame.writeStream.format("noop")
        .trigger(availableNow=True)
        .option("checkpointLocation", str(folder / "checkpoint"))
        .start()
    )


@dataclass
class Run:
    """One query's run as recentProgress has it, and what each listener made of it."""

    query_id: str
    run_id: str
    progress: list[dict[str, Any]]
    receivers: dict[str, Receiver]
    listeners: dict[str, Any]
    app_id: str

    @property
    def events(self) -> int:
        """started + progress + terminated."""
        return len(self.progress) + 2


# Each listener's receiver state while the query runs, and its settings.
DOWN = ("outage", "overflow", "defaults")
SETTINGS = {
    "plain": {"spark.wmon.token": "s3cret"},
    "outage": FAST,
    "unavailable": FAST,
    "overflow": {**FAST, "spark.wmon.queueSize": "3", "spark.wmon.batchSize": "1"},
    "rejecting": FAST,
    "defaults": {
        **FAST,
        "spark.wmon.queueSize": "-5",
        "spark.wmon.batchSize": "lots",
        "spark.wmon.closeTimeoutMs": "1e4",
    },
}


@pytest.fixture(scope="module")
def run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    receivers = {name: Receiver().start() for name in SETTINGS}
    for name in DOWN:
        receivers[name].stop()
    receivers["unavailable"].status = 503
    receivers["rejecting"].status = 400
    app_id = spark.sparkContext.applicationId
    settings = {name: {**QUIET, **each} for name, each in SETTINGS.items()}
    settings["plain"]["spark.app.id"] = app_id
    listeners = {
        name: new_listener(spark, receivers[name].url, each) for name, each in settings.items()
    }
    listeners["disabled"] = new_listener(spark, None, {})
    streams = spark._jsparkSession.streams()
    for listener in listeners.values():
        streams.addListener(listener)
    try:
        query = start_query(spark, tmp_path_factory.mktemp("jvm-listener"))
        assert query.awaitTermination(180), "the query did not finish in 180 s"
        progress = [json.loads(p.json) for p in query.recentProgress]
        result = Run(query.id, query.runId, progress, receivers, listeners, app_id)
        for name in SETTINGS:
            wait_until(
                lambda name=name: stats(listeners[name])["queued"] == result.events,
                30,
                f"listener {name} to queue all {result.events} events",
            )
        for name in ("outage", "unavailable", "overflow", "defaults"):
            wait_until(
                lambda name=name: stats(listeners[name])["retries"] > 0, 10, f"{name} to retry"
            )
        for name in DOWN:
            receivers[name].start()
        receivers["unavailable"].status = 200
        for name in SETTINGS:
            wait_until(
                lambda name=name: stats(listeners[name])["pending"] == 0,
                30,
                f"listener {name} to empty its queue",
            )
        yield result
    finally:
        for listener in listeners.values():
            streams.removeListener(listener)
            listener.close()
        for receiver in receivers.values():
            receiver.stop()


def test_every_event_arrives_in_event_log_form(run: Run) -> None:
    events = run.receivers["plain"].delivered()
    assert [e["Event"] for e in events] == [
        EVENT + "QueryStartedEvent",
        *[EVENT + "QueryProgressEvent"] * len(run.progress),
        EVENT + "QueryTerminatedEvent",
    ]
    started, *progress, terminated = events
    assert (started["id"], started["runId"]) == (run.query_id, run.run_id)
    assert ISO_UTC.fullmatch(started["timestamp"])
    # The whole progress, exactly as recentProgress has it: batch ids, watermarks, sources.
    assert [e["progress"] for e in progress] == run.progress
    assert [p["batchId"] for p in run.progress] == list(range(len(run.progress)))
    assert len(run.progress) >= FILES
    assert (terminated["id"], terminated["runId"]) == (run.query_id, run.run_id)
    assert terminated["exception"] is None
    assert ISO_UTC.fullmatch(terminated["timestamp"])
    assert terminated["timestamp"] >= run.progress[-1]["timestamp"]


def test_watermarks_move_as_the_query_reads(run: Run) -> None:
    watermarks = [
        e["progress"]["eventTime"]["watermark"]
        for e in run.receivers["plain"].delivered()
        if "progress" in e
    ]
    # Each file is a minute later; the watermark trails the latest event time by 10 s.
    assert watermarks[:FILES] == [
        "1970-01-01T00:00:00.000Z",
        "2026-11-23T09:59:54.000Z",
        "2026-11-23T10:00:54.000Z",
        "2026-11-23T10:01:54.000Z",
    ]


def test_requests_carry_the_token_sender_and_dropped_count(run: Run) -> None:
    requests = run.receivers["plain"].all_requests()
    assert requests
    for request in requests:
        assert request.path == "/api/ingest"
        assert request.headers["Content-Type"] == "application/json"
        assert request.headers["Authorization"] == "Bearer s3cret"
        assert request.headers["Wmon-Sender"] == run.app_id
        assert request.headers["Wmon-Dropped"] == "0"
    # Without a token or an app id: no Authorization, and one stable name for the listener.
    others = run.receivers["outage"].all_requests()
    assert all("Authorization" not in r.headers for r in others)
    senders = {r.headers["Wmon-Sender"] for r in others}
    assert senders == {run.listeners["outage"].senderId()}
    assert run.listeners["outage"].senderId() != run.app_id


@pytest.mark.parametrize("name", ["outage", "unavailable"])
def test_nothing_queued_is_lost_while_the_collector_is_down(run: Run, name: str) -> None:
    expected = run.receivers["plain"].delivered()
    delivered = run.receivers[name].delivered()
    # Every event, in order, none twice; the progress exactly as the healthy listener's.
    assert [identity(e) for e in delivered] == [identity(e) for e in expected]
    assert [e.get("progress") for e in delivered] == [e.get("progress") for e in expected]
    counts = stats(run.listeners[name])
    assert counts["delivered"] == run.events
    assert counts["dropped"] == counts["rejected"] == 0
    assert counts["retries"] > 0
    if name == "unavailable":
        answered = [r.status for r in run.receivers[name].all_requests()]
        assert answered.count(503) == counts["retries"]
        assert answered[-1] == 200


def test_a_full_queue_drops_the_oldest_and_reports_them(run: Run) -> None:
    expected = [identity(e) for e in run.receivers["plain"].delivered()]
    delivered = run.receivers["overflow"].delivered()
    assert [identity(e) for e in delivered] == expected[-3:]
    counts = stats(run.listeners["overflow"])
    assert counts["dropped"] == run.events - 3
    assert counts["delivered"] == 3
    accepted = [r for r in run.receivers["overflow"].all_requests() if r.status == 200]
    assert [len(r.events) for r in accepted] == [1, 1, 1]
    assert {r.headers["Wmon-Dropped"] for r in accepted} == {str(run.events - 3)}


def test_a_rejected_request_is_counted_and_not_retried(run: Run) -> None:
    requests = run.receivers["rejecting"].all_requests()
    seen = [identity(e) for r in requests for e in r.events]
    assert seen == [identity(e) for e in run.receivers["plain"].delivered()]
    assert {r.status for r in requests} == {400}
    counts = stats(run.listeners["rejecting"])
    assert (counts["rejected"], counts["delivered"], counts["retries"]) == (run.events, 0, 0)
    assert "bad event" in run.listeners["rejecting"].lastRejection()


def test_bad_settings_warn_and_fall_back_to_the_defaults(run: Run) -> None:
    warnings = list(run.listeners["defaults"].warnings())
    assert len(warnings) == 3
    for setting in ("spark.wmon.queueSize=-5", "batchSize=lots", "closeTimeoutMs=1e4"):
        assert sum(setting in warning for warning in warnings) == 1
    assert all("using the default" in warning for warning in warnings)
    # The default queue (10,000) held every event; the default batch (200) sent them at once.
    accepted = [r for r in run.receivers["defaults"].all_requests() if r.status == 200]
    assert [len(r.events) for r in accepted] == [run.events]
    assert stats(run.listeners["defaults"])["dropped"] == 0


def test_without_a_url_the_listener_warns_once_and_does_nothing(run: Run) -> None:
    listener = run.listeners["disabled"]
    assert list(listener.warnings()) == ["spark.wmon.url is not set: the wmon listener is disabled"]
    assert not listener.enabled()
    counts = stats(listener)
    assert counts["callbacks"] == run.events
    assert counts["queued"] == counts["delivered"] == counts["failures"] == 0


def test_callback_times_are_kept_for_every_event(run: Run) -> None:
    listener = run.listeners["plain"]
    times = list(listener.callbackNanos())
    assert len(times) == stats(listener)["callbacks"] == run.events
    assert all(nanos > 0 for nanos in times)


@pytest.mark.parametrize(
    "settings, warning",
    [
        ({"spark.wmon.url": "ftp://collector"}, "spark.wmon.url=ftp://collector is not usable"),
        ({"spark.wmon.url": "http://"}, "spark.wmon.url=http:// is not usable"),
        ({"spark.wmon.maxBackoffMs": "0"}, "spark.wmon.maxBackoffMs=0 must be a whole number"),
        ({"spark.wmon.queueSize": "99999999999"}, "spark.wmon.queueSize=99999999999 must be"),
        ({"spark.wmon.token": "two words"}, "spark.wmon.token may only hold visible ASCII"),
        (
            {"spark.wmon.runningIntervalMs": "50"},
            "spark.wmon.runningIntervalMs=50 must be a whole number from 100 to 3600000",
        ),
    ],
    ids=["scheme", "no-host", "backoff", "queue-too-big", "token", "running-too-often"],
)
def test_each_bad_setting_is_one_warning(
    spark: Any, settings: dict[str, str], warning: str
) -> None:
    listener = new_listener(spark, "http://127.0.0.1:9", {**settings})
    try:
        warnings = list(listener.warnings())
        assert len(warnings) == 1 and warnings[0].startswith(warning)
        assert listener.enabled() == ("spark.wmon.url" not in settings)
    finally:
        listener.close()


def idle_event(spark: Any) -> Any:
    """Spark's own QueryIdleEvent, built through py4j."""
    jvm = spark._jvm
    cls = getattr(jvm.org.apache.spark.sql.streaming, "StreamingQueryListener$QueryIdleEvent")
    uuid = jvm.java.util.UUID
    return cls(uuid.randomUUID(), uuid.randomUUID(), "2026-11-23T10:00:00.123Z")


def test_a_callback_never_throws(spark: Any) -> None:
    receiver = Receiver().start()
    listener = new_listener(spark, receiver.url, FAST)
    try:
        listener.onQueryProgress(None)  # Spark never sends this; nothing may escape anyway
        listener.onQueryIdle(idle_event(spark))
        wait_until(lambda: receiver.delivered(), 10, "the idle event")
        counts = stats(listener)
        assert (counts["failures"], counts["callbacks"], counts["queued"]) == (1, 2, 1)
        [idle] = receiver.delivered()
        assert idle["Event"] == EVENT + "QueryIdleEvent"
        assert idle["timestamp"] == "2026-11-23T10:00:00.123Z"
        assert set(idle) == {"Event", "id", "runId", "timestamp"}
    finally:
        listener.close()
        receiver.stop()


def test_close_gives_up_after_its_timeout_and_counts_what_is_left(spark: Any) -> None:
    receiver = Receiver().start()
    receiver.stop()
    listener = new_listener(spark, receiver.url, {"spark.wmon.closeTimeoutMs": "500"})
    for _ in range(3):
        listener.onQueryIdle(idle_event(spark))
    started = time.monotonic()
    listener.close()
    assert time.monotonic() - started < 5
    counts = stats(listener)
    assert (counts["dropped"], counts["delivered"], counts["pending"]) == (3, 0, 0)
    listener.onQueryIdle(idle_event(spark))  # after close: counted, not queued
    assert stats(listener)["dropped"] == 4


def test_a_long_queue_goes_out_in_requests_under_one_mebibyte(spark: Any) -> None:
    receiver = Receiver().start()
    receiver.stop()
    listener = new_listener(
        spark,
        receiver.url,
        {**FAST, "spark.wmon.batchSize": "100000", "spark.wmon.queueSize": "9000"},
    )
    try:
        event = idle_event(spark)
        for _ in range(8_000):  # about 1.3 MB of events in event-log form
            listener.onQueryIdle(event)
        receiver.start()
        wait_until(lambda: stats(listener)["delivered"] == 8_000, 30, "8,000 events delivered")
        sizes = [r.size for r in receiver.all_requests() if r.status == 200]
        assert len(sizes) >= 2 and max(sizes) <= 1 << 20
        assert len(receiver.delivered()) == 8_000
    finally:
        listener.close()
        receiver.stop()


# The collector's answers: what is sent again and what is rejected. Each test posts idle events
# (no query) to a receiver that answers as the test decides.

Answering = Callable[[list[dict[str, Any]]], Answer]


@pytest.fixture
def answering(spark: Any) -> Iterator[Callable[..., tuple[Receiver, Any]]]:
    """Make a receiver that answers as a function decides, and a listener posting to it."""
    made: list[tuple[Receiver, Any]] = []

    def make(answer: Answering, settings: dict[str, str] = FAST) -> tuple[Receiver, Any]:
        receiver = Receiver(answer).start()
        made.append((receiver, new_listener(spark, receiver.url, settings)))
        return made[-1]

    yield make
    for receiver, listener in made:
        listener.close()
        receiver.stop()


def post_idle(spark: Any, listener: Any, count: int, noted: list[str] | None = None) -> list[str]:
    """Queue `count` new idle events on `listener`; their ids, in order. Their ids are added
    to `noted` first: the listener may send an event before this returns."""
    events = [idle_event(spark) for _ in range(count)]
    ids = [event.id().toString() for event in events]
    if noted is not None:
        noted.extend(ids)
    for event in events:
        listener.onQueryIdle(event)
    return ids


def answered_for(listener: Any, count: int) -> dict[str, int]:
    """The listener's stats once `count` events are delivered or rejected (10 s at most)."""

    def settled() -> dict[str, int] | None:
        counts = stats(listener)
        done = counts["delivered"] + counts["rejected"] == count and counts["pending"] == 0
        return counts if done else None

    return wait_until(settled, 10, f"{count} events delivered or rejected")


def sent(receiver: Receiver) -> list[str]:
    """The ids of every event posted, as often as it was posted, in order."""
    return [e["id"] for r in receiver.all_requests() for e in r.events]


def stored(events: list[dict[str, Any]], bad: list[int]) -> Answer:
    """The collector's 200: the events at `bad` were rejected (set aside), the rest stored."""
    errors = [{"event": i, "error": "the watermark is not a time"} for i in bad]
    body = {"stored": len(events) - len(bad), "ignored": 0, "rejected": len(bad)}
    return Answer(200, body | {"errors": errors})


@pytest.mark.parametrize("status", [500, 404], ids=["server-error", "not-found"])
def test_a_refused_event_is_rejected_once_and_the_rest_arrive(
    spark: Any, answering: Callable[..., tuple[Receiver, Any]], status: int
) -> None:
    bad: list[str] = []

    def answer(events: list[dict[str, Any]]) -> Answer:
        if any(e["id"] in bad for e in events):
            return Answer(status, {"error": "cannot store a batch id of -1"})
        return stored(events, [])

    receiver, listener = answering(answer, {**FAST, "spark.wmon.batchSize": "1"})
    post_idle(spark, listener, 1, noted=bad)
    later = post_idle(spark, listener, 4)
    counts = answered_for(listener, 5)
    assert [e["id"] for e in receiver.delivered()] == later
    assert sent(receiver) == bad + later  # the refused one once, not again
    assert (counts["rejected"], counts["delivered"], counts["retries"]) == (1, 4, 0)
    assert listener.lastRejection() == f"answered {status} (cannot store a batch id of -1)"


def test_events_the_collector_sets_aside_are_rejected_and_not_sent_again(
    spark: Any, answering: Callable[..., tuple[Receiver, Any]]
) -> None:
    bad: list[str] = []

    def answer(events: list[dict[str, Any]]) -> Answer:
        return stored(events, [i for i, e in enumerate(events) if e["id"] in bad])

    receiver, listener = answering(answer)
    first = post_idle(spark, listener, 1)
    post_idle(spark, listener, 1, noted=bad)
    rest = post_idle(spark, listener, 2)
    counts = answered_for(listener, 4)
    assert sent(receiver) == first + bad + rest
    assert (counts["rejected"], counts["delivered"], counts["retries"]) == (1, 3, 0)
    assert listener.lastRejection().endswith(": the watermark is not a time")


def test_a_request_refused_as_invalid_rejects_all_its_events(
    spark: Any, answering: Callable[..., tuple[Receiver, Any]]
) -> None:
    def answer(events: list[dict[str, Any]]) -> Answer:
        errors = [{"event": i, "error": "not a streaming query event"} for i in range(len(events))]
        body = {"stored": 0, "ignored": 0, "rejected": len(events), "errors": errors}
        return Answer(422, body)

    receiver, listener = answering(answer)
    ids = post_idle(spark, listener, 3)
    counts = answered_for(listener, 3)
    assert sent(receiver) == ids
    assert (counts["rejected"], counts["delivered"], counts["retries"]) == (3, 0, 0)
    assert listener.lastRejection() == "answered 422 (event 0: not a streaming query event)"


def test_an_outage_is_retried_as_long_as_retry_after_asks_up_to_the_longest_backoff(
    spark: Any, answering: Callable[..., tuple[Receiver, Any]]
) -> None:
    unavailable = {"error": "the store cannot be used"}
    refused = {"error": "the token is not valid"}
    script = [
        Answer(503, unavailable, {"Retry-After": "1"}),
        Answer(401, refused),  # a token being rotated: retried, not rejected
        Answer(403, refused),
        Answer(503, unavailable, {"Retry-After": "3600"}),  # capped by maxBackoffMs
    ]
    times: list[float] = []

    def answer(events: list[dict[str, Any]]) -> Answer:
        times.append(time.monotonic())
        return script.pop(0) if script else stored(events, [])

    receiver, listener = answering(answer, {"spark.wmon.maxBackoffMs": "1500"})
    ids = post_idle(spark, listener, 3)
    counts = answered_for(listener, 3)
    assert [e["id"] for e in receiver.delivered()] == ids
    statuses = [r.status for r in receiver.all_requests()]
    assert statuses[:5] == [503, 401, 403, 503, 200] and set(statuses[5:]) <= {200}
    assert (counts["delivered"], counts["rejected"], counts["retries"]) == (3, 0, 4)
    waits = [later - earlier for earlier, later in pairwise(times)]
    assert waits[0] >= 0.95  # Retry-After: 1, though the backoff was 100 ms
    assert waits[1] < 0.9 and waits[2] < 0.9  # no Retry-After: the backoff, 200 and 400 ms
    assert 1.45 <= waits[3] < 3  # Retry-After: 3600, capped at 1.5 s


def test_a_request_too_large_goes_again_smaller_until_one_event_is_rejected(
    spark: Any, answering: Callable[..., tuple[Receiver, Any]]
) -> None:
    big: list[str] = []

    def answer(events: list[dict[str, Any]]) -> Answer:
        if any(e["id"] in big for e in events):
            return Answer(413, {"error": "the request body is too large"})
        return stored(events, [])

    receiver, listener = answering(answer)
    receiver.stop()  # so that the four events go out in one request
    first = post_idle(spark, listener, 1)
    post_idle(spark, listener, 1, noted=big)
    rest = post_idle(spark, listener, 2)
    receiver.start()
    counts = answered_for(listener, 4)
    requests = receiver.all_requests()
    # Mostly the four go out at once; on a loaded machine the sender may have taken the first
    # alone just before they were all queued, and it goes through as the receiver starts.
    with_big = [r for r in requests if any(e["id"] in big for e in r.events)]
    assert len(with_big[0].events) > 1 and with_big[0].status == 413
    assert [e["id"] for e in receiver.delivered()] == first + rest
    assert (len(with_big[-1].events), with_big[-1].status) == (1, 413)
    assert (counts["rejected"], counts["delivered"]) == (1, 3)
    assert listener.lastRejection().startswith("event too large: answered 413")


# Batches in flight: told every spark.wmon.runningIntervalMs while a query's trigger is active.

SLEEP_S = 2.0


def start_slow_query(spark: Any, folder: Path, slept: list[tuple[int, float, float]]) -> Any:
    """Two batches of one text file each, each held SLEEP_S in foreachBatch; each batch's id
    and when it slept (epoch seconds) are added to `slept`."""
    data = folder / "data"
    data.mkdir()
    now = time.time()
    for k in range(2):
        path = data / f"part-{k}.txt"
        path.write_text(f"line {k}\n")
        os.utime(path, (now - 100 + k, now - 100 + k))  # the file source reads the oldest first

    def sleep(frame: Any, batch_id: int) -> None:
        started = time.time()
        time.sleep(SLEEP_S)
        slept.append((batch_id, started, time.time()))

    return (
        spark.readStream.option("maxFilesPerTrigger", 1)
        .text(str(data))
        .writeStream.foreachBatch(sleep)
        .trigger(availableNow=True)
        .option("checkpointLocation", str(folder / "checkpoint"))
        .start()
    )


def through_the_end(receiver: Receiver) -> list[dict[str, Any]] | None:
    """Every event delivered, once the last is the run's terminated event; else None."""
    events = receiver.delivered()
    return events if events and events[-1]["Event"] == EVENT + "QueryTerminatedEvent" else None


def test_batches_in_flight_are_told_while_they_run_and_not_after(
    spark: Any, tmp_path: Path
) -> None:
    receiver = Receiver().start()
    listener = new_listener(spark, receiver.url, {"spark.wmon.runningIntervalMs": "200"})
    streams = spark._jsparkSession.streams()
    streams.addListener(listener)
    slept: list[tuple[int, float, float]] = []
    try:
        query = start_slow_query(spark, tmp_path, slept)
        assert query.awaitTermination(60), "the query did not finish in 60 s"
        events = wait_until(lambda: through_the_end(receiver), 10, "the terminated event")
        time.sleep(1)  # five more looks: none may tell of the ended run
        assert receiver.delivered() == events
    finally:
        streams.removeListener(listener)
        listener.close()
        receiver.stop()
    assert [batch for batch, _, _ in slept] == [0, 1]
    ended_ms = spark_event(events[-1], None).timestamp_ms
    running = {at: spark_event(e, None) for at, e in enumerate(events) if e["Event"] == RUNNING}
    for told in running.values():  # each one as the collector reads it
        assert isinstance(told, BatchRunning)
        assert (told.query_id, told.run_id) == (query.id, query.runId)
        assert told.since_ms <= told.timestamp_ms <= ended_ms
    for batch, started, ended in slept:
        # Told while foreachBatch slept: before the run's first progress, the batch is null.
        during = {
            at: told
            for at, told in running.items()
            if started * 1000 + 50 < told.timestamp_ms < ended * 1000 - 50
        }
        assert len(during) >= 3, f"batch {batch} was told {len(during)} times in {SLEEP_S} s"
        assert {told.batch_id for told in during.values()} == {None if batch == 0 else batch}
        assert len({told.since_ms for told in during.values()}) == 1
        for at in during:
            [next_progress, *_] = [e for e in events[at:] if "progress" in e]
            assert next_progress["progress"]["batchId"] == batch


def watches(spark: Any) -> int:
    """How many batch-in-flight watches run in the JVM: its threads named wmon-running."""
    threads = spark._jvm.java.lang.Thread.getAllStackTraces().keySet()
    return sum(thread.getName() == "wmon-running" for thread in threads)


def test_only_an_enabled_listener_watches_and_closing_it_stops_the_watch(spark: Any) -> None:
    before = watches(spark)
    disabled = new_listener(spark, None, {})
    enabled = new_listener(spark, "http://127.0.0.1:9", {})
    try:
        assert watches(spark) == before + 1
    finally:
        enabled.close()
        disabled.close()
    wait_until(lambda: watches(spark) == before, 5, "the watch's thread to end")
