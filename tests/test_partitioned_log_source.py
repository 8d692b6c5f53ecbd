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
)
from tests.helpers import unique_name

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
