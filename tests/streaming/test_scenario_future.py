"""The future_timestamp scenario on real Spark: the record from the future drives the watermark,
the monitor counts it, and the records read after it are late."""

import json
import time

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

import monitor
from monitor.store.schema.models import Batch
from streaming.log import PartitionedLog
from streaming.scenarios import play
from tests.support.spark_queries import start_query, unique_name
from tests.support.stores import stored_event_times
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.spark,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),
]
WAIT = 120


def read_everything(query, scenario) -> bool:
    """Whether the query's last batch read every partition to its end."""
    ends = {str(p): summary.records for p, summary in scenario.partitions.items()}
    return any(
        json.loads(progress["sources"][0]["endOffset"])["telemetry"] == ends
        for progress in query.recentProgress
    )


def test_the_future_record_drives_the_watermark_and_the_records_after_it_are_late(
    spark, log_dir, checkpoint, database_url, engine
):
    # Event times end now: the record two hours ahead of them is ahead of the batch's time too.
    scenario = play(
        "future_timestamp",
        PartitionedLog(log_dir),
        partitions=3,
        records=300,
        rate=60.0,
        start_ms=time.time_ns() // 1_000_000 - 5_000,
    )
    future = scenario.future_record
    assert future is not None
    handle = monitor.attach(spark, database_url)
    query = start_query(spark, scenario, log_dir, checkpoint, unique_name("future"))
    try:
        wait_until(lambda: read_everything(query, scenario), WAIT, "the query to read it all")
    finally:
        query.stop()
        handle.detach()

    figures = stored_event_times(engine, str(query.id))
    with so.Session(engine) as session:
        batches = session.scalars(
            sa.select(Batch).where(Batch.query_id == str(query.id)).order_by(Batch.batch_id)
        ).all()
    name, record = f"telemetry/{future.partition}", [future.key, future.event_ms, future.offset]
    [read_in] = [row for row in figures if row.future_records]
    assert (read_in.partition, read_in.future_records) == (name, 1)
    assert read_in.future_samples == [record]
    drivers = {
        b.batch_id: (b.watermark_driver_partition, b.watermark_driver_record) for b in batches
    }
    assert drivers[read_in.batch_id] != (name, record)
    after = [b for b in drivers if b > read_in.batch_id]
    assert after and all(drivers[b] == (name, record) for b in after), drivers
    # Its watermark is in force from the next batch on: the batch after that drops everything.
    late = {row.batch_id for row in figures if row.late_records}
    dropped_all = {
        row.batch_id for row in figures if row.records and row.batch_id > read_in.batch_id + 1
    }
    assert late and late == dropped_all
    assert all(row.late_records == row.records for row in figures if row.batch_id in late)
