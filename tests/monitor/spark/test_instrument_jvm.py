"""The JVM operator on real Spark: the Python operator's figures exactly, and Spark's own drops.

Every query here runs twice over the same log, in the same batches (availableNow, fixed read
limits): once measured in the JVM, once in Python. What the listener would store, parsed from
the progress events' observed metrics, must be the same — records, min/max event time, late
records and late samples, per batch and partition.
"""

import json
from types import SimpleNamespace

import pytest
from pyspark.sql import functions as F

from monitor.collect.progress import parse_progress
from monitor.config import load_settings
from monitor.spark.instrument import chosen_operator, instrument
from monitor.spark.operator_jvm import JVM_CLASS
from tests.support.spark_queries import (
    read_by_spark,
    skewed_log,
    unique_name,
    without_no_data_batches,
)

pytestmark = pytest.mark.spark
WAIT = 120
# Partition 0 drags the watermark ahead (1 s per record), 1 and 2 fall behind it (0.5 s and
# 0.2 s): many of their records are late, more than the samples kept per batch.
SPACING_MS = {0: 1_000, 1: 500, 2: 200}
RECORDS = 120


@pytest.fixture
def skewed(log_dir):
    return skewed_log(log_dir, SPACING_MS, RECORDS)


def sub_millisecond(df):
    """Event times 0, 400 or 800 µs past their millisecond: Spark drops `ts_us <= W_ms * 1000`,
    so a record 400 µs past the watermark's millisecond is kept, one exactly on it dropped."""
    shift = (F.col("offset") % 3) * 400
    return df.withColumn("timestamp", F.timestamp_micros(F.unix_micros("timestamp") + shift))


# The shapes whose partitions are read by several tasks, whose buffers merge on the driver.
ACROSS_TASKS = {"shared-partitions", "tied-across-tasks"}
# The shapes of source the operator meets: (how the source is changed, instrument's options).
SHAPES = {
    "topic-partition": (sub_millisecond, {}),
    "integer-partition": (lambda df: sub_millisecond(df).drop("topic"), {}),
    "text-partition": (
        lambda df: df.withColumn("partition", F.concat(F.lit("p-"), "partition")).drop("topic"),
        {},
    ),
    "input-split": (lambda df: df, {"partition": None}),
    # Each partition's rows spread over three tasks: their buffers merge on the driver.
    "shared-partitions": (lambda df: sub_millisecond(df).repartition(3), {}),
    "no-key-or-offset": (lambda df: df.drop("key", "offset"), {}),
    # Keys of more UTF-8 bytes than a partition's first key buffer holds, and keys that are
    # numbers (read through their cast to text, not straight from the row).
    "long-keys": (
        lambda df: df.withColumn("key", F.concat(F.lit("größerer-schlüssel-"), "key")),
        {},
    ),
    "numeric-keys": (lambda df: df.withColumn("key", F.col("offset") * 7), {}),
    # Event times to the second: records tie on the max, decided by offset, across tasks too,
    # or by key where there are no offsets.
    "tied-across-tasks": (
        lambda df: df.withColumn("timestamp", F.date_trunc("second", "timestamp")).repartition(3),
        {},
    ),
    "tied-without-offsets": (
        lambda df: df.withColumn("timestamp", F.date_trunc("second", "timestamp")).drop("offset"),
        {},
    ),
    # Event times as epoch milliseconds in a long column; the partition a short.
    "millisecond-times": (
        lambda df: (
            df.withColumn("ms", F.unix_millis("timestamp"))
            .withColumn("partition", F.col("partition").cast("short"))
            .drop("topic")
        ),
        {"event_time": "ms"},
    ),
}


def run(spark, log_dir, checkpoint, monkeypatch, operator, shape, options, window=None):
    """Run the instrumented query with WMON_OPERATOR=operator: the query, and its figures per
    (batch, partition) as the listener parses them."""
    monkeypatch.setenv("WMON_OPERATOR", operator)
    source = (
        spark.readStream.format("partitioned_log")
        .option("path", str(log_dir))
        .option("subscribe", "telemetry")
        .option("maxOffsetsPerTrigger", 120)
        .load()
    )
    measured = instrument(
        shape(source), checkpoint=checkpoint, delay="5 seconds", window=window, **options
    )
    watermarked = measured.withWatermark("timestamp", "5 seconds")
    if window:
        result = watermarked.groupBy(F.window("timestamp", window), "partition").count()
    else:
        result = watermarked.dropDuplicates(["timestamp", "partition"])
    with without_no_data_batches(spark):
        query = (
            result.writeStream.queryName(unique_name(f"{operator}-"))
            .format("noop")
            .outputMode("update" if window else "append")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
    assert query.awaitTermination(WAIT), "the query did not finish"
    figures = {}
    for progress in query.recentProgress:
        batch = parse_progress(json.loads(progress.json))
        for times in batch.event_times:
            figures[(batch.batch_id, times.partition)] = times
    return query, figures


def measured_by_several_tasks(query):
    """Whether some batch measured a partition in more than one task, as the Python
    operator's observed metric (one entry a task) shows."""
    for progress in query.recentProgress:
        tasks = json.loads(progress.json)["observedMetrics"]["wmon"]["tasks"]
        names = [name for task in tasks for name in json.loads(task)["partitions"]]
        if len(names) > len(set(names)):
            return True
    return False


def both(spark, log_dir, tmp_path, monkeypatch, shape, options, window=None):
    """The figures measured in the JVM and in Python, over the same batches."""
    return [
        run(spark, log_dir, str(tmp_path / operator), monkeypatch, operator, shape, options, window)
        for operator in ("jvm", "python")
    ]


@pytest.mark.parametrize("name", list(SHAPES))
def test_jvm_and_python_operators_measure_the_same(
    spark, skewed, log_dir, tmp_path, monkeypatch, name
):
    shape, options = SHAPES[name]
    (jvm_query, jvm), (python_query, python) = both(
        spark, log_dir, tmp_path, monkeypatch, shape, options
    )
    assert jvm == python
    assert read_by_spark(jvm_query) == read_by_spark(python_query)
    late = [times for times in jvm.values() if times.late_records]
    assert late and sum(t.records for t in jvm.values()) == RECORDS * len(SPACING_MS)
    assert measured_by_several_tasks(python_query) == (name in ACROSS_TASKS)
    if name == "no-key-or-offset":
        assert all(s[0] is None and s[2] is None for t in late for s in t.late_samples)
    else:
        assert any(t.late_records > len(t.late_samples) == 5 for t in late)


def test_jvm_and_python_operators_agree_behind_a_window_aggregation(
    spark, skewed, log_dir, tmp_path, monkeypatch
):
    (_, jvm), (_, python) = both(
        spark, log_dir, tmp_path, monkeypatch, lambda df: df, {}, window="5 seconds"
    )
    assert jvm == python
    assert any(times.late_records for times in jvm.values())


@pytest.mark.parametrize("named", [False, True], ids=["numbered", "named"])
def test_jvm_and_python_operators_agree_over_many_partitions(
    spark, skewed, log_dir, tmp_path, monkeypatch, named
):
    """120 partitions, by number or by name, each task seeing dozens: the JVM buffer's slots
    grow past their first room and their look-up table is rebuilt several times."""
    spread = F.col("partition") * 100 + F.col("offset") % 40
    partition = F.concat(F.lit("p-"), spread.cast("string")) if named else spread.cast("int")

    def shape(df):
        return df.withColumn("partition", partition).drop("topic")

    (_, jvm), (_, python) = both(spark, log_dir, tmp_path, monkeypatch, shape, {})
    assert jvm == python
    assert len({name for _, name in jvm}) == 40 * len(SPACING_MS)


def test_jvm_late_records_are_those_spark_dropped(spark, skewed, log_dir, checkpoint, monkeypatch):
    """Behind dropDuplicates on (timestamp, partition), unique per record, Spark drops a record
    only as late: what a batch read from a partition less what it kept is what it dropped."""
    query, figures = run(spark, log_dir, checkpoint, monkeypatch, "jvm", sub_millisecond, {})
    dropped = sum(
        op["numRowsDroppedByWatermark"] for p in query.recentProgress for op in p["stateOperators"]
    )
    late = sum(times.late_records for times in figures.values())
    assert late == dropped > 0
    assert {key for key, times in figures.items() if times.late_records} <= set(
        read_by_spark(query)
    )


# Choosing the operator


def test_auto_chooses_the_jvm_operator_when_the_session_has_the_jar(spark):
    operator = chosen_operator(spark, "auto")
    assert operator is not None and operator._fqn == JVM_CLASS
    assert chosen_operator(spark, "jvm") is not None


@pytest.mark.parametrize("setting", ["auto", "python"])
def test_without_the_jar_or_when_told_the_python_operator_is_chosen(spark, setting):
    no_jar = SimpleNamespace(_jvm=None)  # as a Spark Connect session: no JVM to load it in
    assert chosen_operator(no_jar, setting) is None
    assert chosen_operator(spark, "python") is None


def test_jvm_without_the_jar_is_a_clear_error():
    with pytest.raises(RuntimeError, match=r"^wmon: WMON_OPERATOR=jvm, but this Spark session"):
        chosen_operator(SimpleNamespace(_jvm=None), "jvm")


@pytest.mark.parametrize(
    "operator, message",
    [
        ("jvm", "wmon: instrument() measures in the JVM (wmon-spark.jar)"),
        (
            "python",
            "wmon: instrument() measures in Python (an Arrow UDF): no wmon-spark.jar in use",
        ),
    ],
    ids=["jvm", "python"],
)
def test_instrument_logs_which_operator_measures(spark, monkeypatch, caplog, operator, message):
    monkeypatch.setenv("WMON_OPERATOR", operator)
    source = spark.readStream.format("rate").load().withColumn("partition", F.lit(0))
    with caplog.at_level("INFO", logger="monitor.spark.instrument"):
        measured = instrument(source, checkpoint="/nowhere")
    assert measured.columns == source.columns
    logged = [r.getMessage() for r in caplog.records if r.name == "monitor.spark.instrument"]
    assert logged == [message]


@pytest.mark.parametrize(
    "value, expected",
    [("", "auto"), ("auto", "auto"), ("JVM", "jvm"), (" python ", "python")],
    ids=["unset", "auto", "upper-case", "spaces"],
)
def test_operator_setting(value, expected):
    assert load_settings({"WMON_OPERATOR": value}).operator == expected


def test_an_unknown_operator_setting_is_refused():
    with pytest.raises(ValueError, match=r"^WMON_OPERATOR must be one of auto, jvm, python, not"):
        load_settings({"WMON_OPERATOR": "scala"})
