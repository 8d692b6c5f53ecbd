"""A real query whose sink slows down falls behind its trigger, and the monitor names the stage
that grew: the trigger read from the running query, the durations from Spark's progress."""

import time

import pytest
import sqlalchemy.orm as so

import monitor
from monitor.health.facts import Thresholds
from monitor.store.read.batches import latest_batch
from monitor.store.read.read_facts import read_facts
from monitor.store.schema.models import Query, Run
from tests.support.spark_queries import unique_name
from tests.support.waiting import wait_until

pytestmark = pytest.mark.spark
TRIGGER_MS = 400
# The sink takes no time for the first batches, then twice the trigger's interval: of eleven
# batches, the later half and the median are slow however long the first batch's start took.
SLOW_FROM_BATCH, SLOW_S, BATCHES = 4, 0.8, 11


def slowing_sink(_df, batch_id):
    if batch_id >= SLOW_FROM_BATCH:
        time.sleep(SLOW_S)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_query_whose_sink_slows_falls_behind_its_trigger(spark, database_url, checkpoint):
    handle = monitor.attach(spark, database_url)
    query = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 5)
        .load()
        .writeStream.queryName(unique_name("paced"))
        .foreachBatch(slowing_sink)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime=f"{TRIGGER_MS} milliseconds")
        .start()
    )
    try:
        wait_until(lambda: len(query.recentProgress) >= BATCHES, 120, f"{BATCHES} batches")
    finally:
        query.stop()
        handle.detach(timeout=60)
    with so.Session(handle.engine) as session:
        run = session.get_one(Run, str(query.runId))
        assert (run.trigger, run.trigger_interval_ms) == ("ProcessingTime", TRIGGER_MS)
        stored = session.get_one(Query, str(query.id))
        batch = latest_batch(session, stored.id)
        facts = read_facts(session, stored, batch, batch.batch_time_ms, Thresholds())
    pace = facts.pace
    assert pace is not None and pace.behind, pace
    assert pace.duration_ms is not None and pace.duration_ms >= SLOW_S * 1000
    assert pace.stage == "addBatch" and pace.stage_grew, pace
    assert pace.stage_to_ms is not None and pace.stage_to_ms >= SLOW_S * 1000
