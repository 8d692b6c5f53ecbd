"""The instrumented operator's cost, in the JVM and in Python, against the same pipeline plain.

Two pipelines: a JVM-only one (parquet files → watermark → dropDuplicates → noop), where any
operator's cost shows, and the scooter pipeline, where a Python stateful processor dominates.
Each runs plain, with the JVM operator and with the Python one, alternately in one
SparkSession (which loads wmon-spark.jar), `rounds` times each; the best run of each counts.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from streaming.demo import spark_session
from wmon.submit import built_jar

VARIANTS = ("plain", "jvm", "python")
FILES = 8
PARTITIONS = 64
START_S = 1_700_000_000
# One record in LATE_EVERY is an hour behind its neighbours: once the watermark passed it, it
# is late, and the operators take their late-record path for it too.
LATE_EVERY = 1_000
SETTLE_S = 5


def operator_figures(args: Any) -> None:
    """Print the throughput of each pipeline plain and instrumented both ways, with ratios."""
    if args.operator_rows > 0:
        print(
            f"instrumented operator on a JVM-only pipeline (parquet, {FILES} files, "
            f"{PARTITIONS} partitions → watermark → dropDuplicates → noop), "
            f"{args.operator_rows:,} rows, best of {args.operator_rounds} runs each:",
            flush=True,
        )
        throughputs = jvm_only_throughputs(args.operator_rows, args.operator_rounds)
        _report(args.operator_rows, throughputs)
    if args.overhead_records > 0:
        print(
            f"instrumented operator on the scooter pipeline, {args.overhead_records:,} records, "
            f"best of {args.operator_rounds} runs each:",
            flush=True,
        )
        throughputs = scooter_throughputs(args.overhead_records, args.operator_rounds)
        _report(args.overhead_records, throughputs)


def _report(rows: int, throughput: dict[str, float]) -> None:
    plain = throughput["plain"]
    print(f"  plain {plain:,.0f} rows/s")
    for variant in ("jvm", "python"):
        print(
            f"  {variant} operator {throughput[variant]:,.0f} rows/s: "
            f"ratio {throughput[variant] / plain:.2f} of plain"
        )


def session(app_name: str) -> Any:
    """A local SparkSession with wmon-spark.jar, so that the JVM operator can be chosen."""
    config = {
        # Several queries' deduplication state of millions of rows stay loaded in one session
        # until the state store's maintenance unloads them: give it room, and unload soon.
        "spark.driver.memory": "4g",
        "spark.sql.streaming.stateStore.maintenanceInterval": "2s",
        "spark.jars": str(built_jar()),
    }
    return spark_session(app_name, 4, config)


@contextmanager
def operator_setting(variant: str) -> Iterator[None]:
    """WMON_OPERATOR set to the variant while a pipeline is built."""
    before = os.environ.get("WMON_OPERATOR")
    os.environ["WMON_OPERATOR"] = variant
    try:
        yield
    finally:
        if before is None:
            del os.environ["WMON_OPERATOR"]
        else:
            os.environ["WMON_OPERATOR"] = before


def best_throughputs(
    spark: Any, rows: int, run: Callable[[str, str], Any], work: Path, rounds: int
) -> dict[str, float]:
    """Rows/s of each variant: `run(variant, checkpoint)` starts a query, best of `rounds`.

    Between runs the finished query's state is let go of and the heap collected, so that a
    run does not pay for the garbage of the one before it.
    """
    best = dict.fromkeys(VARIANTS, float("inf"))
    for round_number in range(rounds):
        for variant in VARIANTS:
            checkpoint = str(work / f"checkpoint-{variant}-{round_number}")
            query = run(variant, checkpoint)
            started = time.perf_counter()
            query.awaitTermination()
            best[variant] = min(best[variant], time.perf_counter() - started)
            spark.streams.resetTerminated()
            time.sleep(SETTLE_S)
            spark.sparkContext._jvm.System.gc()
    return {variant: rows / seconds for variant, seconds in best.items()}


def write_rows(spark: Any, path: Path, rows: int) -> None:
    """`rows` rows in FILES parquet files: key, event time 1 ms apart, partition 0–63."""
    from pyspark.sql import functions as F

    ids = F.col("id")
    behind = F.when(ids % LATE_EVERY == LATE_EVERY - 1, F.lit(3_600_000)).otherwise(F.lit(0))
    (
        spark.range(0, rows, 1, FILES)
        .select(
            F.concat(F.lit("k"), (ids % 100_000).cast("string")).alias("key"),
            F.timestamp_millis(F.lit(START_S * 1000) + ids - behind).alias("timestamp"),
            (ids % PARTITIONS).cast("int").alias("partition"),
        )
        .write.parquet(str(path))
    )


def jvm_only_throughputs(rows: int, rounds: int) -> dict[str, float]:
    """The JVM-only pipeline: parquet → (operator) → watermark → dropDuplicates → noop."""
    from monitor.spark.instrument import instrument

    work = Path(tempfile.mkdtemp(prefix="wmon-operator-"))
    spark = session("wmon-operator")
    write_rows(spark, work / "rows", rows)
    schema = spark.read.parquet(str(work / "rows")).schema

    def run(variant: str, checkpoint: str) -> Any:
        source = (
            spark.readStream.schema(schema)
            .option("maxFilesPerTrigger", 2)
            .parquet(str(work / "rows"))
        )
        if variant != "plain":
            with operator_setting(variant):
                source = instrument(source, checkpoint=checkpoint, delay="10 seconds")
        return (
            source.withWatermark("timestamp", "10 seconds")
            .dropDuplicates(["key", "timestamp"])
            .writeStream.format("noop")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )

    try:
        return best_throughputs(spark, rows, run, work, rounds)
    finally:
        spark.stop()


def scooter_throughputs(records: int, rounds: int) -> dict[str, float]:
    """The scooter pipeline (buffered offline detection) over `records` records."""
    from streaming.generator import generate
    from streaming.log import PartitionedLog
    from streaming.scooters import ROCKSDB_PROVIDER, BufferedOfflineDetector, scooter_pipeline

    work = Path(tempfile.mkdtemp(prefix="wmon-overhead-"))
    generate(PartitionedLog(work / "log"), partitions=4, records=records, rate=1000.0)
    spark = session("wmon-overhead")
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)

    def run(variant: str, checkpoint: str) -> Any:
        with operator_setting("python" if variant == "plain" else variant):
            pipeline = scooter_pipeline(
                spark,
                str(work / "log"),
                checkpoint,
                BufferedOfflineDetector(),
                instrumented=variant != "plain",
            )
        return (
            pipeline.writeStream.format("noop")
            .outputMode("append")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )

    try:
        return best_throughputs(spark, records, run, work, rounds)
    finally:
        spark.stop()
