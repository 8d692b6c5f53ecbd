"""The partitioned_log streaming source: options, offset planning, and real Spark queries."""

import itertools
import json
import random
import time
from datetime import datetime, timezone

import pytest
from pyspark.sql.datasource import CaseInsensitiveDict
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from streaming.generator import generate
from streaming.log import LogRecord, PartitionedLog
from streaming.partitioned_log import (
    LogRange,
    PartitionedLogStreamReader,
    SourceOptions,
    allocate,
    partition_limits,
    plan_batch,
)
from streaming.scenarios import stalled_partition
from tests.support.spark_queries import unique_name

WAIT_SECONDS = 120


def records(n: int, first: int = 0) -> list[LogRecord]:
    return [LogRecord(f"k{i}", f"v{i}", 1_700_000_000_000 + i) for i in range(first, first + n)]


def reader_for(log_dir, **options) -> PartitionedLogStreamReader:
    raw = CaseInsensitiveDict({"path": str(log_dir), "subscribe": "t", **options})
    return PartitionedLogStreamReader(SourceOptions.parse(raw))


# --- planning, without Spark -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("backlog", "limit", "expected"),
    [
        ({"a": 3, "b": 4}, 10, {"a": 3, "b": 4}),
        ({"a": 10, "b": 20, "c": 30}, 25, {"a": 4, "b": 8, "c": 13}),
        ({"a": 1, "b": 1000}, 10, {"a": 1, "b": 9}),
        ({"a": 5, "b": 5, "c": 5}, 1, {"a": 1, "b": 0, "c": 0}),
        ({"a": 0, "b": 7, "c": 0}, 3, {"a": 0, "b": 3, "c": 0}),
        ({"a": 0, "b": 0}, 3, {"a": 0, "b": 0}),
    ],
    ids=["all-fits", "proportional", "small-not-starved", "limit-one", "idle-partitions", "empty"],
)
def test_allocate_splits_the_limit_by_backlog(backlog, limit, expected):
    assert allocate(backlog, limit) == expected


def test_allocate_never_exceeds_the_limit_or_a_backlog_and_always_progresses():
    rng = random.Random(1)
    for _ in range(500):
        backlog = {p: rng.choice([0, 0, 1, 2, 5, 50, 999]) for p in range(rng.randint(1, 9))}
        limit = rng.randint(1, 200)
        shares = allocate(backlog, limit)
        assert sum(shares.values()) == min(limit, sum(backlog.values()))
        assert all(0 <= shares[p] <= backlog[p] for p in backlog)


@pytest.mark.parametrize(
    ("options", "option_named"),
    [
        ({"subscribe": "t"}, "path"),
        ({"path": "/x"}, "subscribe"),
        ({"path": "/x", "subscribe": " "}, "subscribe"),
        ({"path": "/x", "subscribe": "t,../etc"}, "subscribe"),
        ({"path": "/x", "subscribe": "t", "startingOffsets": "newest"}, "startingOffsets"),
        ({"path": "/x", "subscribe": "t", "maxOffsetsPerTrigger": "0"}, "maxOffsetsPerTrigger"),
        ({"path": "/x", "subscribe": "t", "maxOffsetsPerTrigger": "-5"}, "maxOffsetsPerTrigger"),
        ({"path": "/x", "subscribe": "t", "maxOffsetsPerTrigger": "2.5"}, "maxOffsetsPerTrigger"),
        ({"path": "/x", "subscribe": "t", "maxOffsetsPerTrigger": "lots"}, "maxOffsetsPerTrigger"),
    ],
    ids=[
        "no-path",
        "no-subscribe",
        "blank-subscribe",
        "bad-topic",
        "bad-starting-offsets",
        "zero-limit",
        "negative-limit",
        "fractional-limit",
        "text-limit",
    ],
)
def test_bad_options_raise_naming_the_option(options, option_named):
    with pytest.raises(ValueError, match=f"option '{option_named}'"):
        SourceOptions.parse(CaseInsensitiveDict(options))


def test_options_are_parsed_case_insensitively():
    raw = {
        "PATH": "/x",
        "subscribe": "a, b,a",
        "STARTINGOFFSETS": "Latest",
        "maxoffsetspertrigger": "9",
    }
    assert SourceOptions.parse(CaseInsensitiveDict(raw)) == SourceOptions(
        "/x", ("a", "b"), "latest", 9
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"0": 100, "1": 10, "2": 0}', {0: 100, 1: 10, 2: 0}),
        ("{}", {}),
        (' { "7" : 3 } ', {7: 3}),
        ('{"12": 12345678901234}', {12: 12345678901234}),
    ],
    ids=["three-partitions", "empty", "whitespace", "large"],
)
def test_partition_limits_parse(text, expected):
    assert partition_limits(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("lots", "not a JSON object"),
        ("", "not a JSON object"),
        ("[1, 2]", "not a JSON object"),
        ("5", "not a JSON object"),
        ("null", "not a JSON object"),
        ("{'0': 1}", "not a JSON object"),
        ('{"a": 1}', "key 'a' is not a partition number"),
        ('{"-1": 1}', "key '-1' is not a partition number"),
        ('{" 1": 1}', "key ' 1' is not a partition number"),
        (r'{"1\n": 1}', "is not a partition number"),
        ('{"0": -1}', "limit of partition 0 is not an int >= 0"),
        ('{"0": 1.5}', "limit of partition 0 is not an int >= 0"),
        ('{"0": 2.0}', "limit of partition 0 is not an int >= 0"),
        ('{"0": "10"}', "limit of partition 0 is not an int >= 0"),
        ('{"0": true}', "limit of partition 0 is not an int >= 0"),
        ('{"0": null}', "limit of partition 0 is not an int >= 0"),
        ('{"0": {"1": 2}}', "limit of partition 0 is not an int >= 0"),
        ('{"0": 1, "0": 2}', "partition 0 is named twice"),
        ('{"1": 1, "01": 2}', "partition 1 is named twice"),
    ],
    ids=[
        "text",
        "empty",
        "array",
        "number",
        "null",
        "python-dict",
        "letter-key",
        "negative-key",
        "spaced-key",
        "newline-key",
        "negative-limit",
        "fractional-limit",
        "float-limit",
        "string-limit",
        "bool-limit",
        "null-limit",
        "object-limit",
        "duplicate-key",
        "same-partition-twice",
    ],
)
def test_bad_partition_limits_raise_naming_the_option(text, reason):
    with pytest.raises(ValueError, match="option 'maxOffsetsPerPartition'") as error:
        SourceOptions.parse(
            CaseInsensitiveDict({"path": "/x", "subscribe": "t", "maxOffsetsPerPartition": text})
        )
    assert reason in str(error.value)


def test_partition_limits_are_parsed_with_the_other_options():
    raw = {"path": "/x", "subscribe": "t", "MAXOFFSETSPERPARTITION": '{"1": 0}'}
    options = SourceOptions.parse(CaseInsensitiveDict(raw))
    assert options.max_offsets_per_partition == {1: 0}
    assert SourceOptions.parse(CaseInsensitiveDict({"path": "/x", "subscribe": "t"})) == (
        SourceOptions("/x", ("t",), "earliest", None, {})
    )


def tps(**sizes: int) -> dict[tuple[str, int], int]:
    """``tps(a0=3, b1=4)`` -> ``{("a", 0): 3, ("b", 1): 4}``."""
    return {(name[0], int(name[1:])): size for name, size in sizes.items()}


@pytest.mark.parametrize(
    ("backlog", "caps", "limit", "expected"),
    [
        (tps(t0=100, t1=100, t2=100), {0: 10, 2: 0}, None, tps(t0=10, t1=100, t2=0)),
        (tps(t0=5, t1=7), {0: 100}, None, tps(t0=5, t1=7)),
        (tps(t0=100, t1=100), {}, None, tps(t0=100, t1=100)),
        (tps(t0=100, t1=100, t2=100), {0: 10, 2: 0}, 22, tps(t0=2, t1=20, t2=0)),
        (tps(t0=100, t1=100), {0: 50, 1: 50}, 10, tps(t0=5, t1=5)),
        (tps(t0=100, t1=100), {0: 3, 1: 4}, 10, tps(t0=3, t1=4)),
        (tps(t0=9, t1=9), {0: 0, 1: 0}, 10, tps(t0=0, t1=0)),
        (tps(a0=50, b0=50, b1=50), {0: 5}, None, tps(a0=5, b0=5, b1=50)),
        (tps(t0=0, t1=8), {1: 3}, 1, tps(t0=0, t1=1)),
    ],
    ids=[
        "caps-only",
        "cap-above-backlog",
        "no-caps",
        "caps-then-limit",
        "limit-below-caps",
        "caps-below-limit",
        "all-held-back",
        "cap-in-every-topic",
        "limit-one",
    ],
)
def test_plan_batch_applies_partition_caps_then_the_limit(backlog, caps, limit, expected):
    assert plan_batch(backlog, limit, caps) == expected


def test_plan_batch_respects_every_bound_and_always_progresses():
    rng = random.Random(2)
    for _ in range(500):
        partitions = rng.randint(1, 9)
        backlog = {("t", p): rng.choice([0, 0, 1, 2, 5, 50, 999]) for p in range(partitions)}
        caps = {p: rng.choice([0, 1, 3, 40, 5000]) for p in range(partitions) if rng.random() < 0.6}
        limit = rng.choice([None, rng.randint(1, 200)])
        shares = plan_batch(backlog, limit, caps)

        assert set(shares) == set(backlog)
        for (topic, p), share in shares.items():
            assert 0 <= share <= min(backlog[(topic, p)], caps.get(p, share))
        allowed = sum(min(size, caps.get(p, size)) for (_, p), size in backlog.items())
        assert sum(shares.values()) == (allowed if limit is None else min(limit, allowed))


def test_reader_plans_kafka_shaped_offsets(log_dir):
    log = PartitionedLog(log_dir)
    log.append("t", 0, records(6))
    log.append("t", 1, records(2))
    reader = reader_for(log_dir, maxOffsetsPerTrigger="4")

    start = reader.initialOffset()
    assert start == {"t": {"0": 0, "1": 0}}
    assert reader_for(log_dir, startingOffsets="latest").initialOffset() == {"t": {"0": 6, "1": 2}}
    assert reader.getDefaultReadLimit() == ReadMaxRows(4)
    end = reader.latestOffset(start, ReadMaxRows(4))
    assert end == {"t": {"0": 3, "1": 1}}
    assert reader.latestOffset(start, ReadAllAvailable()) == {"t": {"0": 6, "1": 2}}
    assert reader.reportLatestOffset() == {"t": {"0": 6, "1": 2}}

    log.append("t", 2, records(1))  # a partition that appears later is read from 0
    later = reader.latestOffset(end, ReadAllAvailable())
    assert later == {"t": {"0": 6, "1": 2, "2": 1}}
    assert reader.partitions(end, later) == [
        LogRange(str(log_dir), "t", 0, 3, 6),
        LogRange(str(log_dir), "t", 1, 1, 2),
        LogRange(str(log_dir), "t", 2, 0, 1),
    ]
    assert reader.partitions(later, later) == []
    assert reader.latestOffset(later, ReadMaxRows(4)) == later


def test_reader_reads_rows_with_utc_timestamps(log_dir):
    PartitionedLog(log_dir).append("t", 3, records(3))
    reader = reader_for(log_dir)

    rows = list(reader.read(LogRange(str(log_dir), "t", 3, 1, 3)))

    moment = datetime(2023, 11, 14, 22, 13, 20, 1000, tzinfo=timezone.utc)
    assert rows[0] == ("t", 3, 1, "k1", "v1", moment)
    assert [row[2] for row in rows] == [1, 2]


def test_available_now_stops_at_what_was_there_when_it_started(log_dir):
    log = PartitionedLog(log_dir)
    log.append("t", 0, records(5))
    reader = reader_for(log_dir)
    reader.prepareForTriggerAvailableNow()
    log.append("t", 0, records(5, first=5))
    log.append("t", 1, records(5))

    assert reader.latestOffset({"t": {"0": 0}}, ReadAllAvailable()) == {"t": {"0": 5, "1": 0}}
    assert reader.reportLatestOffset() == {"t": {"0": 10, "1": 5}}


def test_partition_caps_apply_under_every_read_limit(log_dir):
    log = PartitionedLog(log_dir)
    for partition in range(3):
        log.append("t", partition, records(30))
    reader = reader_for(log_dir, maxOffsetsPerPartition='{"0": 20, "2": 0}')
    start = reader.initialOffset()

    assert reader.getDefaultReadLimit() == ReadAllAvailable()
    assert reader.latestOffset(start, ReadAllAvailable()) == {"t": {"0": 20, "1": 30, "2": 0}}
    assert reader.latestOffset(start, ReadMaxRows(10)) == {"t": {"0": 4, "1": 6, "2": 0}}
    assert reader.reportLatestOffset() == {"t": {"0": 30, "1": 30, "2": 30}}
    done = {"t": {"0": 30, "1": 30, "2": 0}}
    assert reader.latestOffset(done, ReadAllAvailable()) == done  # nothing new: a batch ends


def test_available_now_ends_with_held_back_partitions_unread(log_dir):
    log = PartitionedLog(log_dir)
    for partition in range(3):
        log.append("t", partition, records(25))
    reader = reader_for(
        log_dir, maxOffsetsPerPartition='{"0": 10, "1": 0}', maxOffsetsPerTrigger="12"
    )
    reader.prepareForTriggerAvailableNow()
    log.append("t", 0, records(5, first=25))  # after the target: not part of this run

    # What Spark does: plan batches until one has nothing new, then end the run.
    ends, start = [], reader.initialOffset()
    while (end := reader.latestOffset(start, reader.getDefaultReadLimit())) != start:
        ends.append(end)
        start = end
        assert len(ends) < 10, "availableNow would not end"

    assert [(end["t"]["0"], end["t"]["1"], end["t"]["2"]) for end in ends] == [
        (3, 0, 9),  # 12 split over the capped backlogs 10 and 25
        (8, 0, 16),
        (14, 0, 22),
        (23, 0, 25),
        (25, 0, 25),
    ]
    assert reader.reportLatestOffset() == {"t": {"0": 30, "1": 25, "2": 25}}


# --- real Spark --------------------------------------------------------------------------------


def read_stream(spark, log_dir, **options):
    reader = spark.readStream.format("partitioned_log").option("path", str(log_dir))
    for key, value in {"subscribe": "telemetry", **options}.items():
        reader = reader.option(key, value)
    return reader.load()


def start_memory_query(df, checkpoint, name, **trigger):
    return (
        df.writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", checkpoint)
        .trigger(**trigger)
        .start()
    )


def run_available_now(df, checkpoint, name):
    query = start_memory_query(df, checkpoint, name, availableNow=True)
    try:
        assert query.awaitTermination(WAIT_SECONDS), "availableNow query did not finish in time"
        assert query.exception() is None
        return query.recentProgress
    finally:
        query.stop()


def sink_rows(spark, name):
    sql = f"SELECT topic, partition, offset, key, value, unix_millis(timestamp) AS ms FROM {name}"
    return {
        (r.topic, r.partition, r.offset): (r.key, r.value, r.ms) for r in spark.sql(sql).collect()
    }


def log_rows(log: PartitionedLog, topics):
    return {
        (topic, partition, offset): (record.key, record.value, record.timestamp_ms)
        for topic in topics
        for partition, end in log.end_offsets(topic).items()
        for offset, record in log.read(topic, partition, 0, end)
    }


@pytest.mark.spark
def test_every_record_is_read_exactly_once(spark, log_dir, checkpoint):
    log = PartitionedLog(log_dir, segment_records=64)
    generate(log, partitions=3, records=300, scooters=10, seed=1)
    generate(log, topic="alerts", partitions=1, records=5, seed=2)
    name = unique_name("exactly_once")
    df = read_stream(spark, log_dir, subscribe="telemetry,alerts")
    assert df.dtypes == [
        ("topic", "string"),
        ("partition", "int"),
        ("offset", "bigint"),
        ("key", "string"),
        ("value", "string"),
        ("timestamp", "timestamp"),
    ]

    run_available_now(df, checkpoint, name)

    assert spark.table(name).count() == 305  # no duplicates hidden by the dict below
    assert sink_rows(spark, name) == log_rows(log, ["telemetry", "alerts"])
    spark.catalog.dropTempView(name)


@pytest.mark.spark
def test_max_offsets_per_trigger_limits_batches_and_progress_shows_the_backlog(
    spark, log_dir, checkpoint
):
    log = PartitionedLog(log_dir)
    generate(log, partitions=4, records=100, scooters=10, seed=3)
    name = unique_name("rate_limited")

    progress = run_available_now(
        read_stream(spark, log_dir, maxOffsetsPerTrigger=30), checkpoint, name
    )

    batches = [p for p in progress if p.numInputRows > 0]
    assert [p.numInputRows for p in batches] == [30, 30, 30, 10]
    sources = [p.sources[0] for p in batches]
    assert all(isinstance(s.endOffset, str) for s in sources)  # JSON text in SourceProgress
    ends = [json.loads(s.endOffset) for s in sources]
    latest = [json.loads(s.latestOffset) for s in sources]
    assert sources[0].startOffset == "null"
    for before, source in itertools.pairwise(sources):
        assert json.loads(source.startOffset) == json.loads(before.endOffset)
    assert all(set(end) == {"telemetry"} for end in ends)
    assert [sum(end["telemetry"].values()) for end in ends] == [30, 60, 90, 100]
    expected_latest = {str(p): n for p, n in log.end_offsets("telemetry").items()}
    assert all(report == {"telemetry": expected_latest} for report in latest)
    totals = [
        (sum(r["telemetry"].values()), sum(e["telemetry"].values()))
        for r, e in zip(latest, ends, strict=True)
    ]
    assert [last - end for last, end in totals] == [70, 40, 10, 0]  # latest > end while behind
    assert json.loads(batches[0].json)["sources"][0]["endOffset"] == ends[0]  # an object there
    assert spark.table(name).count() == 100
    spark.catalog.dropTempView(name)


def wait_until(condition, what: str, timeout: float = WAIT_SECONDS):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.mark.spark
def test_starting_offsets_latest_skips_existing_records(spark, log_dir, checkpoint):
    log = PartitionedLog(log_dir)
    log.append("telemetry", 0, records(20))
    log.append("telemetry", 1, records(10))
    name = unique_name("latest")
    df = read_stream(spark, log_dir, startingOffsets="latest")
    query = start_memory_query(df, checkpoint, name, processingTime="200 milliseconds")
    try:
        # Batch 0 fixes the starting offsets; only then are new records "after latest".
        wait_until(lambda: query.recentProgress, "the first batch")
        assert query.recentProgress[0].numInputRows == 0
        log.append("telemetry", 1, records(3, first=100))
        log.append("telemetry", 2, records(2, first=200))
        wait_until(lambda: spark.table(name).count() >= 5, "the new records")
        assert query.exception() is None
    finally:
        query.stop()

    rows = sink_rows(spark, name)
    assert sorted(rows) == [("telemetry", 1, offset) for offset in (10, 11, 12)] + [
        ("telemetry", 2, 0),
        ("telemetry", 2, 1),
    ]
    assert rows[("telemetry", 1, 10)] == ("k100", "v100", 1_700_000_000_100)
    spark.catalog.dropTempView(name)


@pytest.mark.spark
def test_a_stalled_partition_keeps_its_backlog_while_the_others_advance(spark, log_dir, checkpoint):
    log = PartitionedLog(log_dir)
    scenario = stalled_partition(
        log, partitions=3, scooters=12, records=150, rate=30.0, trigger_seconds=2.0
    )
    assert scenario.options == {"maxOffsetsPerPartition": '{"0": 20, "1": 0, "2": 20}'}
    name = unique_name("stalled")
    df = spark.readStream.format("partitioned_log").options(**scenario.source_options(log_dir))

    progress = run_available_now(df.load(), checkpoint, name)  # ends: partition 1 is not read

    batches = [p for p in progress if p.numInputRows > 0]
    ends = [json.loads(p.sources[0].endOffset)["telemetry"] for p in batches]
    latest = [json.loads(p.sources[0].latestOffset)["telemetry"] for p in batches]
    assert ends == [
        {"0": 20, "1": 0, "2": 20},
        {"0": 40, "1": 0, "2": 40},
        {"0": 50, "1": 0, "2": 50},
    ]
    assert latest == [{"0": 50, "1": 50, "2": 50}] * 3  # the backlog stays visible
    assert [p.numInputRows for p in batches] == [40, 40, 20]
    rows = sink_rows(spark, name)
    assert rows == {key: row for key, row in log_rows(log, ["telemetry"]).items() if key[1] != 1}
    spark.catalog.dropTempView(name)
