"""Each scenario on real Spark: stored late records equal an independent count and Spark's own."""

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

import monitor
from monitor.store.models import PartitionEventTime
from streaming.log import PartitionedLog
from streaming.scenarios import FAST, LATE, SLOW, play
from tests.helpers import expected_late, unique_name

pytestmark = [pytest.mark.spark, pytest.mark.e2e]
SCENARIOS = ["steady", "skewed_backfill", "idle_partition", "stalled_partition", "late_burst"]


# Spark's side is the same whatever the store: every scenario on SQLite, one on PostgreSQL too.
@pytest.mark.parametrize(
    "name, database_url",
    [(name, "sqlite") for name in SCENARIOS] + [("late_burst", "postgresql")],
    indirect=["database_url"],
)
def test_stored_late_records_are_exact_in_every_scenario(
    spark, log_dir, checkpoint, database_url, engine, name
):
    log = PartitionedLog(log_dir)
    scenario = play(name, log, partitions=3, records=900, rate=30.0)
    handle = monitor.attach(spark, database_url)
    reader = spark.readStream.format("partitioned_log")
    for key, value in scenario.source_options(log_dir).items():
        reader = reader.option(key, value)
    measured = monitor.instrument(reader.load(), checkpoint=checkpoint, delay="10 seconds")
    query = (
        measured.withWatermark("timestamp", "10 seconds")
        .dropDuplicates(["key", "timestamp"])
        .writeStream.queryName(unique_name(name))
        .format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(180), "the query did not finish"
    finally:
        handle.detach()
    with so.Session(engine) as session:
        rows = session.scalars(
            sa.select(PartitionEventTime).where(PartitionEventTime.query_id == str(query.id))
        ).all()
    late = {(r.batch_id, r.partition): r.late_records for r in rows if r.late_records}
    assert late == expected_late(log, checkpoint)
    spark_dropped = sum(
        op["numRowsDroppedByWatermark"] for p in query.recentProgress for op in p["stateOperators"]
    )
    assert sum(late.values()) == spark_dropped
    late_partitions = {int(partition.split("/")[1]) for _, partition in late}
    if name == "skewed_backfill":
        assert late_partitions and late_partitions <= set(scenario.with_role(SLOW))
        assert not late_partitions & set(scenario.with_role(FAST))
    elif name == "late_burst":
        assert late_partitions == set(scenario.with_role(LATE))
    else:
        assert late == {}, f"{name} should lose no records"
