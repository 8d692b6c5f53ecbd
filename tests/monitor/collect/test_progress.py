import pytest

from monitor.collect.progress import (
    ProgressError,
    parse_progress,
    parse_progress_json,
    parse_time_ms,
)
from tests.support.progress import fixture, progress_doc


@pytest.mark.parametrize(
    "text, ms",
    [
        ("1970-01-01T00:00:00.000Z", 0),
        ("2026-11-22T02:57:29.318Z", 1795316249318),
        ("2026-11-22T02:57:29.318+00:00", 1795316249318),
        ("2026-11-22T03:57:29.318+01:00", 1795316249318),
    ],
    ids=["epoch", "utc-z", "utc-offset", "other-zone"],
)
def test_parse_time_ms(text, ms):
    assert parse_time_ms(text) == ms


def test_windowed_aggregation_progress_from_spark():
    doc = fixture("progress_rate_window.json")["progress"]
    batch = parse_progress(doc)
    assert (batch.query_id, batch.run_id, batch.name) == (doc["id"], doc["runId"], "rate_window")
    assert batch.batch_id == 2
    assert batch.watermark_ms == parse_time_ms("2026-11-22T02:57:29.318Z")
    assert batch.event_time_min_ms == parse_time_ms("2026-11-22T02:57:31.368Z")
    assert batch.event_time_max_ms == parse_time_ms("2026-11-22T02:57:33.318Z")
    assert batch.num_input_rows == 40 and batch.input_rows_per_second == 23.6
    assert batch.trigger_duration_ms == 726 and batch.durations_ms["walCommit"] == 47
    [operator] = batch.operators
    assert operator.operator_name == "stateStoreSave"
    assert (operator.num_rows_total, operator.num_rows_dropped_by_watermark) == (3, 0)
    assert operator.memory_used_bytes == 2272 and operator.num_registered_timers is None
    [source] = batch.sources
    assert (source.kind, source.num_input_rows) == ("rate", 40)
    assert [
        (p.partition, p.start_offset, p.end_offset, p.offset_lag) for p in source.partitions
    ] == [("0", 6, 8, 0)]


def test_first_batch_has_no_watermark_yet_and_no_event_times():
    """Spark reports 1970 until the first watermark is set: no watermark, from here on."""
    batch = parse_progress(fixture("progress_first_batch.json")["progress"])
    assert fixture("progress_first_batch.json")["progress"]["eventTime"]["watermark"].startswith(
        "1970-01-01T00:00:00"
    )
    assert batch.batch_id == 0 and batch.watermark_ms is None
    assert batch.event_time_min_ms is None and batch.event_time_max_ms is None


def test_kafka_progress_partitions_and_lag():
    batch = parse_progress(progress_doc())
    [source] = batch.sources
    assert source.kind == "kafka"
    assert [
        (p.partition, p.end_offset, p.latest_offset, p.offset_lag) for p in source.partitions
    ] == [
        ("telemetry/0", 1020, 1024, 4),
        ("telemetry/1", 960, 960, 0),
        ("telemetry/2", 900, 1500, 600),
    ]


def test_transform_with_state_timer_counts():
    doc = progress_doc(
        stateOperators=[
            {
                "operatorName": "transformWithStateExec",
                "numRowsTotal": 4,
                "customMetrics": {
                    "numRegisteredTimers": 3,
                    "numDeletedTimers": 1,
                    "numExpiredTimers": 2,
                },
            }
        ]
    )
    [operator] = parse_progress(doc).operators
    assert (
        operator.num_registered_timers,
        operator.num_deleted_timers,
        operator.num_expired_timers,
    ) == (3, 1, 2)


def test_non_finite_rates_are_unknown():
    batch = parse_progress(
        progress_doc(inputRowsPerSecond=float("nan"), processedRowsPerSecond="NaN")
    )
    assert batch.input_rows_per_second is None and batch.processed_rows_per_second is None


@pytest.mark.parametrize(
    "change, message",
    [
        ({"id": None}, "'id' must be str"),
        ({"batchId": "7"}, "'batchId' must be int"),
        ({"batchId": True}, "'batchId' must be int"),
        ({"timestamp": "yesterday"}, "'timestamp' is not a timestamp"),
        ({"eventTime": {"watermark": 12}}, "'watermark' is not a timestamp"),
        ({"eventTime": []}, "'eventTime' must be an object"),
        ({"sources": {"0": {}}}, "'sources' must be a list of objects"),
        ({"stateOperators": [1]}, "'stateOperators' must be a list of objects"),
    ],
    ids=[
        "no-id",
        "batch-id-text",
        "batch-id-bool",
        "bad-timestamp",
        "bad-watermark",
        "event-time-list",
        "sources-dict",
        "operators-numbers",
    ],
)
def test_malformed_progress_is_rejected_with_a_clear_message(change, message):
    with pytest.raises(ProgressError, match=message):
        parse_progress(progress_doc(**change))


@pytest.mark.parametrize("missing", ["id", "runId", "batchId", "timestamp"])
def test_missing_required_field(missing):
    doc = progress_doc()
    del doc[missing]
    with pytest.raises(ProgressError, match=f"no '{missing}'"):
        parse_progress(doc)


@pytest.mark.parametrize("text", ["", "{", "[1, 2]", "null"], ids=["empty", "cut", "list", "null"])
def test_progress_text_that_is_not_an_object(text):
    with pytest.raises(ProgressError):
        parse_progress_json(text)


def test_a_source_of_unknown_shape_has_its_figures_and_no_partitions():
    doc = progress_doc(
        sources=[
            {
                "description": "MyCustomSource",
                "startOffset": {"a": [1]},
                "endOffset": {"a": [2]},
                "numInputRows": 3,
            }
        ]
    )
    [source] = parse_progress(doc).sources
    assert (source.kind, source.num_input_rows, source.partitions) == ("other", 3, ())


@pytest.mark.parametrize(
    "value",
    [2**63, -(2**63) - 1, 2**70, 9.3e18, 1e300, float("inf"), "40", None, [40]],
    ids=["2^63", "below -2^63", "2^70", "float past 2^63", "1e300", "inf", "text", "null", "list"],
)
def test_a_figure_no_64_bit_column_holds_is_unknown(value):
    doc = progress_doc(
        numInputRows=value,
        durationMs={"triggerExecution": value, "walCommit": 5},
        stateOperators=[
            {"numRowsTotal": value, "customMetrics": {"numRegisteredTimers": value, "x": 3}}
        ],
    )
    batch = parse_progress(doc)
    assert (batch.num_input_rows, batch.trigger_duration_ms) == (None, None)
    assert batch.durations_ms == {"walCommit": 5}
    [operator] = batch.operators
    assert (operator.num_rows_total, operator.num_registered_timers) == (None, None)
    assert operator.custom_metrics == {"x": 3}


def test_the_largest_figures_are_kept():
    batch = parse_progress(progress_doc(numInputRows=2**63 - 1, batchId=2**63 - 1))
    assert batch.num_input_rows == batch.batch_id == 2**63 - 1


def test_an_operator_name_that_is_not_text_is_unknown():
    [operator] = parse_progress(progress_doc(stateOperators=[{"operatorName": 5}])).operators
    assert operator.operator_name is None


@pytest.mark.parametrize(
    "change, message",
    [
        ({"batchId": -1}, "'batchId' must be at least 0, not -1"),
        ({"batchId": 2**63}, "'batchId' must be .*, not 9223372036854775808"),
        ({"timestamp": 12}, "'timestamp' must be str, not 12$"),
        (
            {"eventTime": {"watermark": "x" * 100}},
            "'watermark' is not a timestamp: 'x{39}\\.\\.\\.$",
        ),
        ({"eventTime": {"min": ["2026"]}}, "'min' is not a timestamp: \\['2026'\\]$"),
    ],
    ids=["negative batch id", "batch id past 64 bits", "numeric timestamp", "long", "list"],
)
def test_more_malformed_progress(change, message):
    with pytest.raises(ProgressError, match=message):
        parse_progress(progress_doc(**change))


@pytest.mark.parametrize(
    "value",
    [12, None, ["2026-11-22T02:57:29.318Z"], "2026-13-01T00:00:00Z"],
    ids=["number", "null", "list", "13th month"],
)
def test_parse_time_ms_of_something_else_is_a_progress_error(value):
    with pytest.raises(ProgressError, match="not a timestamp"):
        parse_time_ms(value)


def test_progress_nested_deeper_than_json_decodes_is_a_progress_error():
    with pytest.raises(ProgressError, match="not valid JSON"):
        parse_progress_json("[" * 100_000 + "]" * 100_000)
