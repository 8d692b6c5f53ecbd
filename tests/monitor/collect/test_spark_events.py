"""Spark's events in the event log's form: named by class, times of their own, and the progress
written the way Jackson writes it (offsets as text, rows with their schema, rates in full, no
batch totals) read as the same batch as `progress.json` gives."""

import copy
import json

import pytest

from monitor.collect.progress import ProgressError, parse_progress
from monitor.collect.spark_events import (
    PROGRESS,
    RUNNING,
    STARTED,
    TERMINATED,
    event_time_ms,
    named,
    spark_event,
    timestamp_text,
)
from monitor.events import QueryStarted, QueryTerminated
from tests.support.progress import fixture, progress_doc

MEASURED = {"records": 3, "min_ms": 1_000, "max_ms": 2_000, "late": 0, "samples": []}
TASK = json.dumps(
    {"batch": 2, "delay_ms": 10_000, "late_watermark_ms": None, "partitions": {"t/0": MEASURED}}
)


def as_in_event_log(progress: dict) -> dict:
    """What Spark's event log writes for the progress `progress.json` gave (Spark 4.3)."""
    logged = copy.deepcopy(progress)
    for key in ("numInputRows", "inputRowsPerSecond", "processedRowsPerSecond"):
        logged.pop(key, None)
    for source in logged["sources"]:
        for key in ("startOffset", "endOffset", "latestOffset"):
            if source.get(key) is not None:
                source[key] = json.dumps(source[key], indent=1)
    for name, row in logged.get("observedMetrics", {}).items():
        fields = [{"name": key, "type": "string", "nullable": False} for key in row]
        logged["observedMetrics"][name] = {
            "values": list(row.values()),
            "schema": {"type": "struct", "fields": fields},
        }
    return logged


def test_the_event_logs_form_of_a_progress_is_the_same_batch():
    progress = progress_doc(observedMetrics={"wmon": {"tasks": [TASK]}})
    # Spark's batch figures are its sources' sums (the fixture's are made up).
    progress.update(numInputRows=60, inputRowsPerSecond=30.0, processedRowsPerSecond=55.0)
    logged = as_in_event_log(progress)
    logged["sources"][0]["inputRowsPerSecond"] = 29.96  # the log writes doubles in full
    logged["sources"][0]["processedRowsPerSecond"] = 55.04999
    batch = parse_progress(logged)
    assert batch == parse_progress(progress)
    assert [times.partition for times in batch.event_times] == ["t/0"]
    assert (batch.num_input_rows, batch.input_rows_per_second) == (60, 30.0)


@pytest.mark.parametrize(
    ("rate", "shown"),
    [(3.1181789834736517, 3.1), (0.05, 0.1), (2.25, 2.3), (1e300, 1e300), ("NaN", None)],
)
def test_rates_are_kept_to_one_decimal_as_progress_json_shows_them(rate, shown):
    progress = progress_doc()
    progress["sources"][0]["processedRowsPerSecond"] = rate
    assert parse_progress(progress).sources[0].processed_rows_per_second == shown


def test_a_batch_total_is_unknown_when_a_source_does_not_know_it():
    logged = as_in_event_log(progress_doc())
    logged["sources"].append({**logged["sources"][0], "inputRowsPerSecond": "NaN"})
    assert parse_progress(logged).input_rows_per_second is None


def test_streaming_events_by_name_and_others_ignored():
    started = spark_event(named(STARTED, fixture("started.json")), None)
    assert isinstance(started, QueryStarted) and started.name == "rate_window"
    progress = spark_event(named(PROGRESS, fixture("progress_kafka.json")), None)
    assert (
        progress is not None
        and progress.batch_id == fixture("progress_kafka.json")["progress"]["batchId"]
    )
    assert spark_event({"Event": "SparkListenerJobEnd", "Completion Time": 5}, None) is None
    future = {"Event": "org.apache.spark.sql.streaming.StreamingQueryListener$QueryNewEvent"}
    assert spark_event(future, None) is None


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"progress": {}}, "not a Spark event: it has no 'Event' name"),
        ([], "a Spark event is a JSON object, not list"),
        ({"Event": 3}, "not a Spark event: it has no 'Event' name"),
        (named(STARTED, {"id": "q", "runId": "r", "name": "n"}), "event has no 'timestamp'"),
        (
            named(STARTED, {"id": "q", "runId": "r", "name": 7, "timestamp": "2026-11-23T10:00Z"}),
            "event field 'name' must be a string, not 7",
        ),
        (
            named(STARTED, {**fixture("started.json"), "trigger": {"kind": "Every 5 s"}}),
            "event field 'trigger' must name its kind, not {'kind': 'Every 5 s'}",
        ),
        (
            named(STARTED, {**fixture("started.json"), "trigger": {"kind": "X", "intervalMs": -1}}),
            "trigger 'intervalMs' must be milliseconds or null, not -1",
        ),
    ],
)
def test_unreadable_events_say_why(document, message):
    with pytest.raises(ProgressError, match="^" + message.replace("(", r"\(")):
        spark_event(document, None)


def test_a_started_event_carries_the_trigger_a_way_in_read():
    told = {"kind": "ProcessingTime", "intervalMs": 5_000}
    started = spark_event(named(STARTED, {**fixture("started.json"), "trigger": told}), None)
    assert isinstance(started, QueryStarted)
    assert (started.trigger, started.trigger_interval_ms) == ("ProcessingTime", 5_000)
    once = {**fixture("started.json"), "trigger": {"kind": "AvailableNow", "intervalMs": None}}
    assert spark_event(named(STARTED, once), None).trigger == "AvailableNow"
    logged = spark_event(named(STARTED, fixture("started.json")), None)
    assert (logged.trigger, logged.trigger_interval_ms) == (None, None)


def test_a_terminated_event_is_at_its_timestamp_else_at_the_fallback():
    doc = named(TERMINATED, fixture("terminated.json"))
    at_fallback = spark_event(doc, 1_000)
    assert isinstance(at_fallback, QueryTerminated) and at_fallback.timestamp_ms == 1_000
    stamped = spark_event({**doc, "timestamp": timestamp_text(1_795_316_300_007)}, 1_000)
    assert isinstance(stamped, QueryTerminated) and stamped.timestamp_ms == 1_795_316_300_007
    with pytest.raises(ProgressError, match="no earlier event gave a time"):
        spark_event(doc, None)


def test_timestamps_are_written_as_spark_writes_them():
    assert timestamp_text(1_795_316_300_007) == "2026-11-22T02:58:20.007Z"
    assert timestamp_text(0) == "1970-01-01T00:00:00.000Z"


@pytest.mark.parametrize(
    ("document", "at_ms"),
    [
        ({"Event": "SparkListenerApplicationStart", "Timestamp": 1_000}, 1_000),
        ({"Event": "SparkListenerJobEnd", "Completion Time": 2_000}, 2_000),
        ({"Event": "SparkListenerTaskEnd", "Task Info": {"Finish Time": 3_000}}, 3_000),
        ({"Event": "SparkListenerStageCompleted", "Stage Info": {}}, None),
        ({"Event": "SparkListenerJobEnd", "Completion Time": "soon"}, None),
        ({"Event": "SparkListenerEnvironmentUpdate"}, None),
        (named(STARTED, fixture("started.json")), 1_795_316_245_214),
        (named(TERMINATED, fixture("terminated.json")), None),
        # A progress event happens when its trigger ends.
        (
            named(
                PROGRESS,
                {
                    "progress": {
                        "timestamp": "2026-11-22T02:57:25.000Z",
                        "durationMs": {"triggerExecution": 250},
                    }
                },
            ),
            1_795_316_245_250,
        ),
        (named(PROGRESS, {"progress": {"timestamp": "never"}}), None),
    ],
)
def test_the_time_each_kind_of_event_says_it_happened(document, at_ms):
    assert event_time_ms(document) == at_ms


@pytest.mark.parametrize("batch_id", [-1, True, "7", 1.5])
def test_a_batch_in_flight_with_a_bad_batch_id_is_refused(batch_id):
    doc = {
        "Event": RUNNING,
        "id": "q",
        "runId": "r",
        "batchId": batch_id,
        "timestamp": "2026-11-27T10:00:00.000Z",
        "since": "2026-11-27T09:59:00.000Z",
    }
    with pytest.raises(ProgressError, match="batchId"):
        spark_event(doc, None)
