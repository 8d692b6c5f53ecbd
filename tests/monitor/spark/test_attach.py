"""Real Spark queries, monitored end to end: the store holds exactly what Spark reported."""

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F

import monitor
from monitor.collect.progress import parse_time_ms
from monitor.store.schema.engine import parse_url
from monitor.store.schema.models import Batch, Query, Run
from streaming.generator import DEFAULT_START_MS, generate
from streaming.log import PartitionedLog
from tests.support.network import TcpProxy
from tests.support.progress import stored_watermark
from tests.support.spark_queries import unique_name
from tests.support.stores import stored_partitions
from tests.support.waiting import wait_until

pytestmark = pytest.mark.spark
WAIT = 180


@pytest.fixture
def monitored(spark, database_url):
    """The monitor attached to the shared session, writing to the test's store."""
    handle = monitor.attach(spark, database_url)
    yield handle
    handle.detach(timeout=60)


def telemetry(spark, log_dir, max_offsets=None):
    reader = spark.readStream.format("partitioned_log").option("path", str(log_dir))
    if max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", max_offsets)
    return reader.option("subscribe", "telemetry").load()


def windowed(df):
    return (
        df.withWatermark("timestamp", "5 seconds")
        .groupBy(F.window("timestamp", "5 seconds"), "partition")
        .count()
    )


def start(df, checkpoint, **trigger):
    return (
        df.writeStream.queryName(unique_name("windows"))
        .format("noop")
        .outputMode("append")
        .option("checkpointLocation", checkpoint)
        .trigger(**trigger)
        .start()
    )


def stored_batches(engine, query_id):
    with so.Session(engine) as session:
        return session.scalars(
            sa.select(Batch).where(Batch.query_id == str(query_id)).order_by(Batch.batch_id)
        ).all()


def partitions_by_batch(engine, query_id):
    rows = stored_partitions(engine, str(query_id))
    return {(row.batch_id, row.partition): row for row in rows}


def stored_query(engine, query_id):
    with so.Session(engine) as session:
        return session.get(Query, str(query_id))


def records_read(progress):
    """How many records a query had read by the end of a batch (PySpark gives offsets as text)."""
    end = json.loads(progress["sources"][0]["endOffset"] or "null")
    return sum(end["telemetry"].values()) if end else 0


def written_per_partition(summary):
    return {f"telemetry/{p}": part.records for p, part in summary.partitions.items()}


def test_every_batch_is_stored_as_spark_reported_it(spark, monitored, engine, log_dir, checkpoint):
    summary = generate(PartitionedLog(log_dir), partitions=4, records=2_000, rate=100.0, seed=3)
    query = start(windowed(telemetry(spark, log_dir, 300)), checkpoint, availableNow=True)
    assert query.awaitTermination(WAIT), "the query did not finish"
    assert monitored.flush(30)
    progress = query.recentProgress

    batches = stored_batches(engine, query.id)
    assert [b.batch_id for b in batches] == [p["batchId"] for p in progress]
    assert [b.batch_id for b in batches] == list(range(len(progress)))
    for row, reported in zip(batches, progress, strict=True):
        assert row.watermark_ms == stored_watermark(reported)
        assert row.num_input_rows == reported["numInputRows"]
        assert row.run_id == str(query.runId)
        if "max" in reported["eventTime"]:
            assert row.event_time_max_ms == parse_time_ms(reported["eventTime"]["max"])
            assert row.event_time_min_ms == parse_time_ms(reported["eventTime"]["min"])
    assert batches[-1].watermark_ms > DEFAULT_START_MS, "the watermark never advanced"

    written = written_per_partition(summary)
    partitions = partitions_by_batch(engine, query.id)
    last = batches[-1].batch_id
    assert {name: partitions[(last, name)].end_offset for name in written} == written
    for (_, name), row in partitions.items():
        assert row.latest_offset == written[name]
        assert row.offset_lag == written[name] - row.end_offset
    assert sum(partitions[(0, name)].offset_lag for name in written) == 2_000 - 300
    assert all(partitions[(last, name)].offset_lag == 0 for name in written)
    wait_until(
        lambda: stored_query(engine, query.id).status == "terminated",
        30,
        "the query's termination to be stored",
    )


def test_rate_source_watermarks_and_offsets_are_stored(spark, monitored, engine, checkpoint):
    rate = spark.readStream.format("rate").option("rowsPerSecond", 50).load()
    counts = (
        rate.withWatermark("timestamp", "1 second")
        .groupBy(F.window("timestamp", "1 second"))
        .count()
    )
    query = start(counts, checkpoint, processingTime="300 milliseconds")
    try:
        wait_until(
            lambda: len([p for p in query.recentProgress if p["numInputRows"]]) >= 3,
            WAIT,
            "three rate batches with rows",
        )
    finally:
        query.stop()
    assert monitored.flush(30)
    progress = {p["batchId"]: p for p in query.recentProgress}
    batches = {b.batch_id: b for b in stored_batches(engine, query.id)}
    assert set(batches) == set(progress)
    for batch_id, reported in progress.items():
        assert batches[batch_id].watermark_ms == stored_watermark(reported)
    partitions = partitions_by_batch(engine, query.id)
    for batch_id, reported in progress.items():
        end_offset = json.loads(reported["sources"][0]["endOffset"])
        assert partitions[(batch_id, "0")].end_offset == end_offset


@contextlib.contextmanager
def interruptible_store(database_url) -> Iterator[tuple[str, object, object]]:
    """The URL to attach to, and functions that cut the store off and bring it back."""
    url = parse_url(database_url)
    if url.get_backend_name() == "sqlite":
        lock = sqlite3.connect(url.database, timeout=0, isolation_level=None)
        yield (
            database_url,
            lambda: lock.execute("BEGIN EXCLUSIVE"),
            lambda: lock.execute("ROLLBACK"),
        )
        lock.close()
        return
    proxy = TcpProxy(url.host or "127.0.0.1", url.port or 5432)
    yield url.set(port=proxy.port).render_as_string(hide_password=False), proxy.cut, proxy.restore
    proxy.cut()


def test_no_batch_is_lost_while_the_store_is_unreachable(
    spark, database_url, engine, log_dir, checkpoint
):
    generate(PartitionedLog(log_dir), partitions=4, records=3_000, rate=100.0, seed=5)
    with interruptible_store(database_url) as (url, cut, restore):
        handle = monitor.attach(spark, url)
        query = start(
            windowed(telemetry(spark, log_dir, 200)), checkpoint, processingTime="200 milliseconds"
        )
        try:
            wait_until(lambda: handle.stats().written >= 2, WAIT, "the first batch to be stored")
            cut()
            seen = len(query.recentProgress)
            wait_until(
                lambda: (
                    len(query.recentProgress) >= seen + 3 and not handle.stats().store_available
                ),
                WAIT,
                "three batches while the store is cut off",
            )
            assert handle.stats().pending > 0
            restore()
            wait_until(
                lambda: records_read(query.recentProgress[-1]) == 3_000,
                WAIT,
                "the query to read every record",
            )
        finally:
            query.stop()
        assert handle.flush(60), f"not everything was written: {handle.stats()}"
        stats = handle.stats()
        handle.detach()
    assert stats.retries > 0 and stats.dropped == 0 and stats.rejected == 0
    progress_ids = [p["batchId"] for p in query.recentProgress]
    stored_ids = [b.batch_id for b in stored_batches(engine, query.id)]
    assert stored_ids == list(range(len(stored_ids)))
    assert set(progress_ids) <= set(stored_ids)


def test_a_restart_from_the_checkpoint_replays_without_duplicates(
    spark, monitored, engine, log_dir, checkpoint
):
    log = PartitionedLog(log_dir)
    generate(log, partitions=3, records=1_200, rate=100.0, seed=7)
    first = start(windowed(telemetry(spark, log_dir, 400)), checkpoint, availableNow=True)
    assert first.awaitTermination(WAIT)
    last = first.recentProgress[-1]["batchId"]
    # Forget that the last batch was committed (and its checksum file): Spark must run it again.
    for name in (str(last), f".{last}.crc"):
        os.remove(os.path.join(checkpoint, "commits", name))
    generate(log, partitions=3, records=600, rate=100.0, seed=8, start_ms=DEFAULT_START_MS + 20_000)

    second = start(windowed(telemetry(spark, log_dir, 400)), checkpoint, availableNow=True)
    assert second.awaitTermination(WAIT)
    assert monitored.flush(30)
    assert second.id == first.id and second.runId != first.runId
    assert second.recentProgress[0]["batchId"] == last, "Spark did not replay the batch"

    seen = sorted({p["batchId"] for p in first.recentProgress + second.recentProgress})
    batches = stored_batches(engine, first.id)
    assert [b.batch_id for b in batches] == seen == list(range(len(seen)))
    assert batches[last].run_id == str(second.runId)
    partitions = partitions_by_batch(engine, first.id)
    assert len(partitions) == 3 * len(seen)
    with so.Session(engine) as session:
        runs = session.scalars(sa.select(Run.run_id).where(Run.query_id == str(first.id))).all()
    assert sorted(runs) == sorted([str(first.runId), str(second.runId)])


def test_a_failed_query_is_stored_with_its_exception(spark, monitored, engine, log_dir, checkpoint):
    generate(PartitionedLog(log_dir), partitions=2, records=100, rate=100.0, seed=9)

    def fail(batch, batch_id):
        raise RuntimeError("scooter table unavailable")

    query = (
        telemetry(spark, log_dir)
        .writeStream.queryName(unique_name("failing"))
        .option("checkpointLocation", checkpoint)
        .foreachBatch(fail)
        .start()
    )
    with pytest.raises(StreamingQueryException):
        query.awaitTermination(WAIT)

    def failure_stored():
        monitored.flush(5)
        stored = stored_query(engine, query.id)
        return stored if stored is not None and stored.status == "failed" else None

    failed = wait_until(failure_stored, 60, "the failure to be stored")
    assert "scooter table unavailable" in failed.exception
