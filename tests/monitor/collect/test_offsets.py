import pytest

from monitor.collect.offsets import parse_partitions, source_kind


def _table(partitions):
    return [
        (p.partition, p.topic, p.start_offset, p.end_offset, p.latest_offset, p.offset_lag)
        for p in partitions
    ]


@pytest.mark.parametrize(
    "start, end, latest, expected",
    [
        (
            {"telemetry": {"0": 10, "1": 5}},
            {"telemetry": {"1": 7, "0": 12}},
            {"telemetry": {"0": 20, "1": 7}},
            [("telemetry/0", "telemetry", 10, 12, 20, 8), ("telemetry/1", "telemetry", 5, 7, 7, 0)],
        ),
        (
            None,
            {"t": {"10": 1, "2": 1}},
            None,
            [("t/2", "t", None, 1, None, None), ("t/10", "t", None, 1, None, None)],
        ),
        (
            {"0": 3, "1": 4},
            {"0": 5, "1": 4},
            {"0": 9, "1": 4},
            [("0", None, 3, 5, 9, 4), ("1", None, 4, 4, 4, 0)],
        ),
        ({"logOffset": 2}, {"logOffset": 3}, None, [("0", None, 2, 3, None, None)]),
        (10, 11, 11, [("0", None, 10, 11, 11, 0)]),
        ("10", "11", "15", [("0", None, 10, 11, 15, 4)]),
        (-1, 0, None, [("0", None, -1, 0, None, None)]),
        (None, None, None, []),
        (None, {"p-1": {"index": 3, "closed": True}}, None, []),
        (None, "not json at all", None, []),
        (None, {}, None, []),
        (None, True, None, []),
        (None, [1, 2], None, []),
        ({"t": {"0": 5}}, {"t": {"0": 7}}, {"t": {"0": 6}}, [("t/0", "t", 5, 7, 6, 0)]),
    ],
    ids=[
        "kafka",
        "kafka-first-batch",
        "flat",
        "file",
        "rate",
        "text-numbers",
        "socket",
        "no-offsets",
        "unknown-nested",
        "not-json",
        "empty",
        "bool",
        "list",
        "latest-behind",
    ],
)
def test_parse_partitions(start, end, latest, expected):
    assert _table(parse_partitions(start, end, latest)) == expected


@pytest.mark.parametrize(
    "description, kind",
    [
        ("KafkaV2[Subscribe[telemetry]]", "kafka"),
        ("FileStreamSource[file:/data/in]", "file"),
        ("RateStreamV2[rowsPerSecond=20, rampUpTimeSeconds=0, numPartitions=default", "rate"),
        ("TextSocketV2[host: localhost, port: 9999]", "socket"),
        (
            "org.apache.spark.sql.execution.datasources.v2.python."
            "PythonMicroBatchStreamWithTriggerAvailableNow@5d3c0b8e",
            "python",
        ),
        ("MemoryStream[value#1]", "other"),
    ],
    ids=["kafka", "file", "rate", "socket", "python-data-source", "memory"],
)
def test_source_kind(description, kind):
    assert source_kind(description) == kind
