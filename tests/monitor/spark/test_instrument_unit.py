"""The Python operator's measurement with pyarrow alone, and reading its figures back.

The same code on real Spark is tested in test_instrument.py; here every figure is computed by
hand from a few rows, so each one can be checked exactly.
"""

import json
import logging
import os
import re

import pyarrow as pa
import pytest

from monitor.collect.observed import ObservationError, partition_event_times
from monitor.collect.progress import parse_progress
from monitor.events import SAMPLES_PER_PARTITION, PartitionEventTimes
from monitor.regular_files import NotRegularFile
from monitor.spark.checkpoints import query_checkpoint
from monitor.spark.instrument import interval_ms
from monitor.spark.measuring import NO_WATERMARK_MS, Measuring
from monitor.spark.operator_python import (
    TaskStats,
    batch_time_ms,
    effective_times_ms,
    event_times_us,
    late_watermark_ms,
    measure,
    partition_keys,
)
from tests.support.progress import progress_doc

T0 = 1_700_000_000_000
MINUTE = 1_700_000_040_000  # a whole minute since the epoch


# interval_ms


@pytest.mark.parametrize(
    "text, expected",
    [
        ("10 minutes", 600_000),
        ("1 minute", 60_000),
        ("1 hour 30 seconds", 3_630_000),
        ("500 milliseconds", 500),
        ("2 DAYS", 172_800_000),
    ],
    ids=["minutes", "one-minute", "hour-and-seconds", "milliseconds", "upper-case-days"],
)
def test_interval_ms_of_spark_interval_strings(text, expected):
    assert interval_ms(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "ten minutes", "10", "10 parsecs", "5 minutes and more"],
    ids=["empty", "number-in-words", "no-unit", "unknown-unit", "trailing-words"],
)
def test_interval_ms_rejects_what_is_not_an_interval(text):
    with pytest.raises(ValueError) as raised:
        interval_ms(text)
    assert str(raised.value) == f"not an interval: {text!r} (expected e.g. '10 minutes')"


# late_watermark_ms


def write_offsets(checkpoint, batch_id, watermark_ms):
    """One offset-log entry as Spark writes it: version, batch metadata, one line per source."""
    folder = checkpoint / "offsets"
    folder.mkdir(parents=True, exist_ok=True)
    metadata = {
        "batchWatermarkMs": watermark_ms,
        "batchTimestampMs": T0 + 60_000 * batch_id,
        "conf": {"spark.sql.shuffle.partitions": "2"},
    }
    lines = [
        "v1",
        json.dumps(metadata),
        json.dumps({"telemetry": {"0": 100 * (batch_id + 1), "1": 90 * (batch_id + 1)}}),
        json.dumps({"audit": {"0": 7}}),
    ]
    (folder / str(batch_id)).write_text("\n".join(lines))


@pytest.mark.parametrize(
    "batch_id, expected",
    [(0, None), (1, 0), (2, T0 + 20_000), (3, None)],
    ids=["batch-0-has-none", "batch-1-uses-offsets-0", "batch-2-uses-offsets-1", "missing-file"],
)
def test_late_watermark_is_that_of_the_previous_batch(tmp_path, batch_id, expected):
    write_offsets(tmp_path, 0, 0)
    write_offsets(tmp_path, 1, T0 + 20_000)
    assert late_watermark_ms(str(tmp_path), batch_id) == expected


def test_late_watermark_of_a_checkpoint_not_written_yet_is_none(tmp_path):
    assert late_watermark_ms(str(tmp_path / "not-yet"), 1) is None


@pytest.mark.parametrize(
    "batch_id, expected",
    [(0, T0), (1, T0 + 60_000), (2, None)],
    ids=["batch-0", "batch-1", "not-written-yet"],
)
def test_batch_time_is_that_of_the_batch_itself(tmp_path, batch_id, expected):
    write_offsets(tmp_path, 0, 0)
    write_offsets(tmp_path, 1, T0 + 20_000)
    assert batch_time_ms(str(tmp_path), batch_id) == expected


@pytest.mark.timeout(10)  # a FIFO that nothing writes to blocks a plain open() for good
def test_a_fifo_in_the_checkpoint_is_named_not_waited_on(tmp_path):
    ours, other = tmp_path / "flows" / "ours", tmp_path / "flows" / "other"
    write_offsets(ours, 0, 0)
    (ours / "metadata").write_text(json.dumps({"id": "q-1"}) + "\n")
    other.mkdir()
    os.mkfifo(other / "metadata")
    assert query_checkpoint(str(tmp_path), "q-1") == str(ours), "the FIFO is not a checkpoint"
    os.mkfifo(ours / "offsets" / "1")
    with pytest.raises(NotRegularFile, match="offsets/1: is a FIFO, not a regular file$"):
        late_watermark_ms(str(ours), 2)


# partition_keys


KAFKA_ROWS = pa.record_batch(
    {
        "topic": pa.array(["telemetry", "telemetry"]),
        "partition": pa.array([3, 0], pa.int32()),
        "timestamp": pa.array([T0, T0], pa.timestamp("us", tz="UTC")),
    }
)
PARTITION_ONLY_ROWS = KAFKA_ROWS.drop_columns(["topic"])


@pytest.mark.parametrize(
    "batch, partition, topic, expected",
    [
        (KAFKA_ROWS, "partition", "topic", ["telemetry/3", "telemetry/0"]),
        (KAFKA_ROWS, "partition", None, ["3", "0"]),
        (PARTITION_ONLY_ROWS, "partition", "topic", ["3", "0"]),
        (KAFKA_ROWS, None, "topic", ["7", "7"]),
        (KAFKA_ROWS, "shard", "topic", ["7", "7"]),
    ],
    ids=[
        "topic-and-partition",
        "partition-only",
        "no-topic-column",
        "partition-none-is-task-partition",
        "missing-partition-column-is-task-partition",
    ],
)
def test_partition_keys(batch, partition, topic, expected):
    keys = partition_keys(batch, partition, topic, task_partition=7)
    assert keys.type == pa.string() and keys.to_pylist() == expected


# event_times_us


@pytest.mark.parametrize(
    "column, expected",
    [
        (
            pa.array([T0 * 1_000 + 123_000, None, 0], pa.timestamp("us", tz="UTC")),
            [T0 * 1_000 + 123_000, None, 0],
        ),
        (
            pa.array([T0 * 1_000 + 123_000, None], pa.timestamp("us", tz="Europe/Berlin")),
            [T0 * 1_000 + 123_000, None],
        ),
        (pa.array([T0 + 123, None, 1], pa.timestamp("ms")), [(T0 + 123) * 1_000, None, 1_000]),
        (pa.array([T0 + 123, None, 1], pa.int64()), [(T0 + 123) * 1_000, None, 1_000]),
        # Spark's timestamps are microseconds: kept to the microsecond.
        (
            pa.array([T0 * 1_000 + 123_456, T0 * 1_000 + 999, None], pa.timestamp("us", tz="UTC")),
            [T0 * 1_000 + 123_456, T0 * 1_000 + 999, None],
        ),
    ],
    ids=[
        "timestamp-us-utc",
        "timestamp-us-session-time-zone",
        "timestamp-ms",
        "int64-ms",
        "timestamp-us-sub-millisecond",
    ],
)
def test_event_times_us(column, expected):
    times = event_times_us(pa.record_batch({"ts": column}), "ts")
    assert times.type == pa.int64() and times.to_pylist() == expected


# effective_times_ms


@pytest.mark.parametrize(
    "times, window_ms, expected",
    [
        ([12_345, None, T0], None, [12_345, None, T0]),
        ([12_345, 10_000, 14_999, 15_000, None], 5_000, [15_000, 15_000, 15_000, 20_000, None]),
        ([MINUTE, MINUTE + 59_999, MINUTE - 1], 60_000, [MINUTE + 60_000] * 2 + [MINUTE]),
    ],
    ids=["no-window-unchanged", "window-end-boundaries", "minute-window"],
)
def test_effective_times_ms(times, window_ms, expected):
    assert effective_times_ms(pa.array(times, pa.int64()), window_ms).to_pylist() == expected


# TaskStats


def add(stats, rows, record_keys=True, offsets=True):
    """Fold rows (partition, event time, record key, offset) into `stats` as one Arrow batch."""
    keys, times, names, positions = (list(column) for column in zip(*rows, strict=True))
    stats.add(
        pa.array(keys, pa.string()),
        pa.array(times, pa.int64()),
        pa.array(names, pa.string()) if record_keys else None,
        pa.array(positions, pa.int64()) if offsets else None,
    )


def figures(records, min_ms, max_ms, late, samples=(), **more):
    """One partition's figures as a task's JSON holds them: those `more` names as given, the
    others of a partition with nothing future-dated and nothing measured against a watermark."""
    return {
        "records": records,
        "min_ms": min_ms,
        "max_ms": max_ms,
        "max_record": None,
        "late": late,
        "samples": [list(sample) for sample in samples],
        "future": 0,
        "future_lead_ms": None,
        "future_samples": [],
        "late_buckets": {},
        "slack_buckets": {},
    } | more


def skewed_task():
    """Two batches of one task: telemetry/0 ahead of the late watermark, telemetry/1 behind."""
    stats = TaskStats(late_watermark=T0 + 10_000, window_ms=None)
    add(
        stats,
        [
            ("telemetry/0", T0 + 12_000, "k0", 100),
            ("telemetry/1", T0 + 9_000, "k1", 200),
            ("telemetry/0", None, "k2", 101),
            ("telemetry/1", T0 + 10_000, "k3", 201),
            ("telemetry/1", T0 + 10_001, "k4", 202),
        ],
    )
    add(
        stats,
        [("telemetry/1", T0 + 1_000 * i, f"k{i + 4}", 202 + i) for i in range(1, 7)]
        + [("telemetry/0", T0 + 20_000, "k11", 102), ("telemetry/1", None, "k12", 209)],
    )
    return stats


def test_task_stats_per_partition_over_several_batches():
    assert SAMPLES_PER_PARTITION == 5, "the expected samples below are the first five"
    assert skewed_task().partitions == {
        # Slack 2,000 and 10,000 ms: buckets 11 (1,024-2,047) and 14 (8,192-16,383).
        "telemetry/0": figures(
            2,
            T0 + 12_000,
            T0 + 20_000,
            0,
            max_record=["k11", T0 + 20_000, 102],
            slack_buckets={"11": 1, "14": 1},
        ),
        "telemetry/1": figures(
            9,
            T0 + 1_000,
            T0 + 10_001,
            8,
            [
                ("k1", T0 + 9_000, 200),
                ("k3", T0 + 10_000, 201),
                ("k5", T0 + 1_000, 203),
                ("k6", T0 + 2_000, 204),
                ("k7", T0 + 3_000, 205),
            ],
            max_record=["k4", T0 + 10_001, 202],
            # Late by 0, 1,000, 4,000, 5,000 to 8,000 (four) and 9,000 ms; 1 ms of slack.
            late_buckets={"0": 1, "10": 1, "12": 1, "13": 4, "14": 1},
            slack_buckets={"1": 1},
        ),
    }


def test_task_stats_without_a_late_watermark_counts_nothing_late():
    stats = TaskStats(late_watermark=None, window_ms=None)
    add(stats, [("3", 5, "k0", 0), ("3", 7, "k1", 1), ("4", None, "k2", 0)])
    assert stats.partitions == {"3": figures(2, 5, 7, 0, max_record=["k1", 7, 1])}


def test_task_stats_against_sparks_placeholder_counts_late_records_but_no_distances():
    """A query's first batches are judged by Spark's "no watermark yet", 1970: a record at it
    is still late, but no distance from 1970 goes into the histograms."""
    stats = TaskStats(late_watermark=NO_WATERMARK_MS, window_ms=None)
    add(stats, [("3", 0, "k0", 0), ("3", T0, "k1", 1)])
    assert stats.partitions == {
        "3": figures(2, 0, T0, 1, [("k0", 0, 0)], max_record=["k1", T0, 1]),
    }


def test_task_stats_compares_window_ends_with_the_late_watermark():
    stats = TaskStats(late_watermark=T0 + 15_000, window_ms=5_000)
    add(
        stats,
        [
            ("p", T0 + 12_345, "in-window-ending-at-15000", 1),
            ("p", T0 + 15_000, "in-window-ending-at-20000", 2),
            ("p", T0 + 9_999, "in-window-ending-at-10000", 3),
            ("p", T0 + 10_000, "starts-window-ending-at-15000", 4),
        ],
    )
    assert stats.partitions == {
        "p": figures(
            4,
            T0 + 9_999,
            T0 + 15_000,
            3,
            [
                ("in-window-ending-at-15000", T0 + 12_345, 1),
                ("in-window-ending-at-10000", T0 + 9_999, 3),
                ("starts-window-ending-at-15000", T0 + 10_000, 4),
            ],
            max_record=["in-window-ending-at-20000", T0 + 15_000, 2],
            # Window ends 0, 0 and 5,000 ms at or behind the watermark; one 5,000 ms after.
            late_buckets={"0": 2, "13": 1},
            slack_buckets={"13": 1},
        )
    }


def test_task_stats_future_dated_records_are_those_ahead_of_the_batch_by_more_than_the_tolerance():
    stats = TaskStats(None, None, batch_time_ms=T0, future_tolerance_ms=300_000)
    add(
        stats,
        [
            ("p", T0 + 300_000, "at-the-tolerance", 1),
            ("p", T0 + 7_200_000, "two-hours-ahead", 2),
            ("p", T0 + 300_001, "just-past", 3),
            ("q", T0 - 5_000, "behind", 1),
        ],
    )
    assert stats.partitions["p"] == figures(
        3,
        T0 + 300_000,
        T0 + 7_200_000,
        0,
        max_record=["two-hours-ahead", T0 + 7_200_000, 2],
        future=2,
        future_lead_ms=7_200_000,
        future_samples=[["two-hours-ahead", T0 + 7_200_000, 2], ["just-past", T0 + 300_001, 3]],
    )
    assert stats.partitions["q"]["future"] == 0


def test_task_stats_without_a_batch_time_counts_nothing_future_dated():
    stats = TaskStats(None, None, batch_time_ms=None, future_tolerance_ms=0)
    add(stats, [("p", T0 + 7_200_000, "k", 1)])
    assert stats.partitions["p"]["future"] == 0


def test_task_stats_max_record_is_the_first_in_sample_order_among_ties():
    """The same event time in several records: the smallest offset, then key, tells it."""
    rows = [("p", T0, "b", 7), ("p", T0, "a", 7), ("p", T0 - 1, "z", 1), ("p", T0, "c", 9)]
    for ordered in (rows, rows[::-1]):
        stats = TaskStats(None, None)
        add(stats, ordered[:2])
        add(stats, ordered[2:])
        assert stats.partitions["p"]["max_record"] == ["a", T0, 7]


def test_task_stats_samples_without_key_or_offset_columns():
    stats = TaskStats(late_watermark=T0, window_ms=None)
    add(stats, [("p", T0, "k", 1), ("p", T0 + 1, "k", 2)], record_keys=False, offsets=False)
    assert stats.partitions == {
        "p": figures(
            2,
            T0,
            T0 + 1,
            1,
            [(None, T0, None)],
            max_record=[None, T0 + 1, None],
            late_buckets={"0": 1},
            slack_buckets={"1": 1},
        )
    }


def test_task_stats_samples_every_late_partition_of_a_large_batch():
    stats = TaskStats(late_watermark=T0, window_ms=None)
    rows = [("telemetry/0", T0 - i, f"a{i}", i) for i in range(250)]
    rows += [("telemetry/1", T0 - i, f"b{i}", i) for i in range(3)]
    add(stats, rows)
    samples = {name: entry["samples"] for name, entry in stats.partitions.items()}
    assert samples == {
        "telemetry/0": [[f"a{i}", T0 - i, i] for i in range(SAMPLES_PER_PARTITION)],
        "telemetry/1": [[f"b{i}", T0 - i, i] for i in range(3)],
    }
    assert stats.partitions["telemetry/1"]["late"] == 3


def test_task_stats_keeps_the_smallest_samples_whatever_the_order_rows_come_in():
    """By offset, then event time, then key; a missing offset first."""
    rows = [
        ("p", T0 - 1, "b", 3),
        ("p", T0 - 9, "z", 8),
        ("p", T0 - 2, "c", 3),
        ("p", T0 - 5, "y", 1),
        ("p", T0 - 2, "a", 3),
        ("p", T0 - 3, "x", None),
        ("p", T0 - 4, "w", 9),
    ]
    expected = [
        ["x", T0 - 3, None],
        ["y", T0 - 5, 1],
        ["a", T0 - 2, 3],
        ["c", T0 - 2, 3],
        ["b", T0 - 1, 3],
    ]
    for ordered in (rows, rows[::-1]):
        stats = TaskStats(late_watermark=T0, window_ms=None)
        add(stats, ordered[:3])
        add(stats, ordered[3:])
        assert stats.partitions["p"]["samples"] == expected


def test_partition_event_times_merges_the_diagnosis_figures_of_tasks():
    tasks = [
        task(
            {
                "p": figures(
                    2,
                    T0,
                    T0 + 9,
                    1,
                    max_record=["k9", T0 + 9, 9],
                    future=1,
                    future_lead_ms=400_000,
                    future_samples=[["f2", T0 + 400_000, 20]],
                    late_buckets={"0": 1},
                    slack_buckets={"3": 1},
                )
            }
        ),
        task(
            {
                "p": figures(
                    3,
                    T0,
                    T0 + 9,
                    0,
                    max_record=["k8", T0 + 9, 8],
                    future=2,
                    future_lead_ms=7_200_000,
                    future_samples=[["f1", T0 + 7_200_000, 10], ["f3", T0 + 300_001, 30]],
                    slack_buckets={"3": 2, "12": 1},
                )
            }
        ),
    ]
    [forward] = partition_event_times({"wmon": {"tasks": tasks}})
    [backward] = partition_event_times({"wmon": {"tasks": tasks[::-1]}})
    assert forward == backward
    assert forward.max_record == ("k8", T0 + 9, 8)
    assert (forward.future_records, forward.future_lead_ms) == (3, 7_200_000)
    assert forward.future_samples == (
        ("f1", T0 + 7_200_000, 10),
        ("f2", T0 + 400_000, 20),
        ("f3", T0 + 300_001, 30),
    )
    assert forward.late_buckets == {"0": 1}
    assert forward.slack_buckets == {"3": 3, "12": 1}
    assert list(forward.slack_buckets) == ["3", "12"]


def test_partition_event_times_of_an_operator_before_the_diagnosis_figures():
    older = {"records": 1, "min_ms": T0, "max_ms": T0, "late": 0, "samples": []}
    [times] = partition_event_times({"wmon": {"tasks": [task({"p": older})]}})
    assert times == PartitionEventTimes("p", 1, T0, T0, 0, T0 + 10_000, 10_000)


def test_partition_event_times_samples_do_not_depend_on_the_order_of_tasks():
    tasks = [
        task({"p": figures(2, T0, T0, 2, [("k1", T0, 5), ("k2", T0, 7)])}),
        task({"p": figures(2, T0, T0, 2, [("k0", T0, 6), (None, T0, None)])}),
        task({"p": figures(3, T0, T0, 3, [("k3", T0, 1), ("k4", T0, 2), ("k5", T0 - 1, 2)])}),
    ]
    [forward] = partition_event_times({"wmon": {"tasks": tasks}})
    [backward] = partition_event_times({"wmon": {"tasks": tasks[::-1]}})
    assert forward == backward
    assert forward.late_samples == (
        (None, T0, None),
        ("k3", T0, 1),
        ("k5", T0 - 1, 2),
        ("k4", T0, 2),
        ("k1", T0, 5),
    )


def test_task_stats_round_trip_through_the_observed_metrics():
    other = TaskStats(late_watermark=T0 + 10_000, window_ms=None)
    add(other, [("telemetry/2", T0 + 30_000, "k20", 300), ("telemetry/2", T0 + 4_000, "k21", 301)])
    first = skewed_task().to_json(4, 10_000)
    assert json.loads(first)["batch"] == 4
    observed = {"wmon": {"tasks": [first, other.to_json(4, 10_000), None]}}
    assert partition_event_times(observed) == (
        PartitionEventTimes(
            "telemetry/0",
            2,
            T0 + 12_000,
            T0 + 20_000,
            0,
            T0 + 10_000,
            10_000,
            max_record=("k11", T0 + 20_000, 102),
            slack_buckets={"11": 1, "14": 1},
        ),
        PartitionEventTimes(
            "telemetry/1",
            9,
            T0 + 1_000,
            T0 + 10_001,
            8,
            T0 + 10_000,
            10_000,
            (
                ("k1", T0 + 9_000, 200),
                ("k3", T0 + 10_000, 201),
                ("k5", T0 + 1_000, 203),
                ("k6", T0 + 2_000, 204),
                ("k7", T0 + 3_000, 205),
            ),
            max_record=("k4", T0 + 10_001, 202),
            late_buckets={"0": 1, "10": 1, "12": 1, "13": 4, "14": 1},
            slack_buckets={"1": 1},
        ),
        PartitionEventTimes(
            "telemetry/2",
            2,
            T0 + 4_000,
            T0 + 30_000,
            1,
            T0 + 10_000,
            10_000,
            (("k21", T0 + 4_000, 301),),
            max_record=("k20", T0 + 30_000, 300),
            late_buckets={"13": 1},
            slack_buckets={"15": 1},
        ),
    )


# measure


def test_measure_outside_a_spark_task_refuses_to_run(tmp_path):
    batches = iter([pa.record_batch({"timestamp": pa.array([T0], pa.int64())})])
    measuring = Measuring(
        checkpoint=str(tmp_path),
        event_time="timestamp",
        partition=None,
        topic=None,
        key=None,
        offset=None,
        delay_ms=10_000,
        window_ms=None,
        future_tolerance_ms=300_000,
    )
    measured = measure(batches, measuring)
    with pytest.raises(RuntimeError, match=r"^wmon: instrument\(\) works only inside a streaming"):
        next(measured)


# observed.partition_event_times


def task(partitions, delay_ms=10_000, late_watermark_ms=T0 + 10_000):
    """One task's figures as the stats column carries them."""
    return json.dumps(
        {
            "batch": 4,
            "delay_ms": delay_ms,
            "late_watermark_ms": late_watermark_ms,
            "partitions": partitions,
        }
    )


def test_partition_event_times_merges_tasks_that_share_a_partition():
    """Samples: the five smallest by (offset, event time, key) of all tasks, in that order."""
    first = task(
        {
            "telemetry/1": figures(
                3, T0 + 5_000, T0 + 9_000, 4, [(f"a{i}", T0 + i, i) for i in range(4)]
            ),
            "telemetry/2": figures(0, None, None, 0),
        }
    )
    second = task(
        {
            "telemetry/1": figures(
                2, T0 + 4_000, T0 + 8_000, 3, [(f"b{i}", T0 + i, i) for i in range(3)]
            ),
            "telemetry/2": figures(1, T0 + 7_000, T0 + 7_000, 0),
            "telemetry/0": figures(1, T0 + 30_000, T0 + 30_000, 0),
        }
    )
    assert partition_event_times({"wmon": {"tasks": [first, None, second]}}) == (
        PartitionEventTimes("telemetry/0", 1, T0 + 30_000, T0 + 30_000, 0, T0 + 10_000, 10_000),
        PartitionEventTimes(
            "telemetry/1",
            5,
            T0 + 4_000,
            T0 + 9_000,
            7,
            T0 + 10_000,
            10_000,
            (
                ("a0", T0, 0),
                ("b0", T0, 0),
                ("a1", T0 + 1, 1),
                ("b1", T0 + 1, 1),
                ("a2", T0 + 2, 2),
            ),
        ),
        PartitionEventTimes("telemetry/2", 1, T0 + 7_000, T0 + 7_000, 0, T0 + 10_000, 10_000),
    )


@pytest.mark.parametrize(
    "observed",
    [{}, {"rows": {"count": 3}}, {"wmon": {"tasks": []}}, {"wmon": {"tasks": [None, None]}}],
    ids=["no-observed-metrics", "other-observation", "no-tasks", "tasks-without-figures"],
)
def test_partition_event_times_without_figures_is_empty(observed):
    assert partition_event_times(observed) == ()


MALFORMED = [
    ({"wmon": {"tasks": "{}"}}, r"^observed metric 'wmon' has no list of tasks$"),
    ({"wmon": ["{}"]}, r"^observed metric 'wmon' has no list of tasks$"),
    ({"wmon": {"tasks": ["{not json"]}}, r"^a task's figures are not JSON: Expecting property"),
    (
        {"wmon": {"tasks": [json.dumps({"batch": 4, "delay_ms": 0, "late_watermark_ms": None})]}},
        r"^a task's figures lack 'partitions'$",
    ),
    ({"wmon": {"tasks": [task({}, delay_ms="ten")]}}, r"'ten'"),
    ({"wmon": {"tasks": [task({"p": figures("many", 1, 2, 0)})]}}, r"'many'"),
    (
        {"wmon": {"tasks": [task({"p": figures(1, 1, 2, 0, late_buckets={"x": 1})})]}},
        r"a bucket of late_buckets",
    ),
    (
        {"wmon": {"tasks": [task({"p": figures(1, 1, 2, 0, slack_buckets={"65": 1})})]}},
        r"a bucket of slack_buckets",
    ),
    (
        {"wmon": {"tasks": [task({"p": figures(1, 1, 2, 0, slack_buckets=[1])})]}},
        r"slack_buckets is not an object of bucket counts",
    ),
    (
        {"wmon": {"tasks": [task({"p": figures(1, 1, 2, 0, max_record=["k", 1])})]}},
        r"a record is not \[key, event ms, offset\]",
    ),
]
MALFORMED_IDS = [
    "tasks-not-a-list",
    "observation-not-an-object",
    "task-not-json",
    "task-without-partitions",
    "delay-not-a-number",
    "records-not-a-number",
    "bucket-not-a-number",
    "bucket-past-64",
    "buckets-not-an-object",
    "max-record-not-a-record",
]


@pytest.mark.parametrize("observed, message", MALFORMED, ids=MALFORMED_IDS)
def test_partition_event_times_rejects_malformed_figures(observed, message):
    with pytest.raises(ObservationError, match=message):
        partition_event_times(observed)


@pytest.mark.parametrize("observed, message", MALFORMED, ids=MALFORMED_IDS)
def test_a_batch_with_malformed_figures_is_kept_and_the_figures_logged(caplog, observed, message):
    doc = progress_doc(batchId=9, observedMetrics=observed)
    with caplog.at_level(logging.ERROR, logger="monitor.collect.progress"):
        progress = parse_progress(doc)
    assert (progress.batch_id, progress.num_input_rows, progress.event_times) == (9, 40, ())
    [record] = caplog.records
    assert record.levelno == logging.ERROR
    prefix = "wmon: ignored the instrumented operator's figures: "
    assert record.getMessage().startswith(prefix)
    assert re.search(message, record.getMessage().removeprefix(prefix))
