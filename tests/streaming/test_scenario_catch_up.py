"""The catch_up scenario on real Spark: the backlog stored for the catching-up partition is what
the scenario wrote less what each batch had read, and the catch-up time the monitor foresees
halfway through the drain is the one the query then took."""

import json

import pytest
import sqlalchemy.orm as so

import monitor
from monitor.health.backlog import Verdict
from monitor.store.read.backlog import backlogs
from monitor.store.read.batches import batch_of
from streaming.log import PartitionedLog
from streaming.scenarios import play
from tests.support.stores import stored_partitions
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.spark,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),
]
WAIT = 120
CATCHING_UP = 1


def start_reading(spark, scenario, log_dir, checkpoint, every):
    """The scenario's records read and written nowhere, a batch `every` so often."""
    source = spark.readStream.format("partitioned_log").options(**scenario.source_options(log_dir))
    writer = source.load().writeStream.format("noop").option("checkpointLocation", checkpoint)
    trigger = {"availableNow": True} if every is None else {"processingTime": every}
    return writer.trigger(**trigger).start()


def warm_up(spark, tmp_path):
    """Read a small log once. The first batch that reads in a session starts the source's
    Python workers: 7 s here, against 0.2 s later. In the window the monitor finds the read
    rate over, that would halve the rate and double the catch-up it foresees."""
    scenario = play("steady", PartitionedLog(tmp_path / "warm"), partitions=2, records=20)
    checkpoint = str(tmp_path / "warm-checkpoint")
    start_reading(spark, scenario, tmp_path / "warm", checkpoint, None).awaitTermination(WAIT)


def started(query):
    """Whether the query has triggered once: a batch, or nothing to read."""
    return query.lastProgress is not None or query.status["message"] == "Waiting for data to arrive"


def read_up_to(query):
    """How far the query's latest batch read the catching-up partition."""
    progress = query.lastProgress
    if progress is None:
        return 0
    ends = json.loads(progress["sources"][0]["endOffset"]).get("telemetry", {})
    return ends.get(str(CATCHING_UP), 0)


def test_a_backlog_read_at_a_known_rate_is_stored_exactly_and_its_catch_up_foreseen(
    spark, tmp_path, log_dir, checkpoint, database_url, engine
):
    # Two partitions of 80 records, read 10 a trigger; partition 1 has 40 more: 12 batches.
    staged = tmp_path / "staged"
    scenario = play(
        "catch_up",
        PartitionedLog(staged),
        partitions=2,
        scooters=24,
        records=160,
        rate=20.0,
        catching_up_partition=CATCHING_UP,
        backlog_records=40,
    )
    drain = scenario.drain
    assert drain is not None and (drain.records, drain.limit, drain.batches) == (120, 10, 12)
    assert drain.records == scenario.partitions[CATCHING_UP].records

    warm_up(spark, tmp_path)
    handle = monitor.attach(spark, database_url)
    query = start_reading(spark, scenario, log_dir, checkpoint, "1 second")
    try:
        # The backlog arrives at once while the query runs, so that the first batch reading it
        # starts on the trigger's beat as every later one: a query's first trigger comes at
        # once (here it runs a batch of nothing, the topic not being there yet).
        wait_until(lambda: started(query), WAIT, "the query's first trigger")
        (staged / scenario.topic).rename(log_dir / scenario.topic)
        wait_until(lambda: read_up_to(query) == drain.records, WAIT, "the backlog to be read")
    finally:
        query.stop()
        handle.detach()

    stored = {
        row.batch_id: row
        for row in stored_partitions(engine, str(query.id))
        if row.partition == f"telemetry/{CATCHING_UP}"
    }
    # (a) Every batch: the records written less those read up to its end offset, and its end
    # offset where the read limit puts it.
    first = min(stored)
    assert sorted(stored) == list(range(first, first + drain.batches))
    for batch_id, row in stored.items():
        backlog = row.latest_offset - row.end_offset
        assert backlog == scenario.partitions[CATCHING_UP].records - row.end_offset
        assert backlog == drain.backlog_after(batch_id - first + 1), batch_id

    # (b) Halfway, the catch-up foreseen is the time the query then took to read the rest.
    caught_up = first + drain.batches - 1  # the first batch with no backlog
    middle = first + drain.batches // 2 - 1
    took_ms = stored[caught_up].batch_time_ms - stored[middle].batch_time_ms
    halfway, last = (backlog_at(engine, query.id, b) for b in (middle, caught_up))
    assert halfway.records == drain.backlog_after(middle - first + 1) == 60
    assert halfway.catch_up_ms == pytest.approx(took_ms, rel=0.1), (halfway, took_ms)
    assert took_ms == pytest.approx(1000 * halfway.records / drain.rate, rel=0.1)
    # (c) It was catching up, and is then caught up.
    assert halfway.verdict is Verdict.CATCHING_UP
    assert (last.records, last.catch_up_ms, last.verdict) == (0, 0, Verdict.OK)


def backlog_at(engine, query_id, batch_id):
    """The catching-up partition's backlog as the monitor judges it at a stored batch, as of
    that batch's time, its query running."""
    with so.Session(engine) as session:
        batch = batch_of(session, str(query_id), batch_id)
        assert batch is not None
        found = backlogs(session, batch, batch.batch_time_ms, running=True)
    return found.by_partition()[f"telemetry/{CATCHING_UP}"]
