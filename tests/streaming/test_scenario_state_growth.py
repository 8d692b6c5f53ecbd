"""The state_growth scenario on real Spark: once event times stop advancing, the watermark stays
put while a dropDuplicates' state takes in every new record and lets none go."""

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

import monitor
from monitor.store.read.batches import batch_of
from monitor.store.read.state_growth import fleet_state
from monitor.store.schema.models import Batch, StateOperator
from streaming.log import PartitionedLog
from streaming.scenarios import play
from tests.support.spark_queries import start_query, unique_name
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.spark,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),
]
WAIT = 120
DELAY_MS = 10_000  # start_query's watermark delay


def test_the_watermark_stays_put_while_the_state_grows_with_every_record(
    spark, log_dir, checkpoint, database_url, engine
):
    # 40 s of traffic, 5 s of it a trigger (50 records a partition): 4 batches move on, then
    # 4 batches of new scooters, all at the event time the traffic froze at.
    scenario = play(
        "state_growth",
        PartitionedLog(log_dir),
        partitions=2,
        scooters=24,
        records=800,
        rate=20.0,
        trigger_seconds=5.0,
    )
    assert scenario.since_ms is not None
    stalled_at = scenario.since_ms - DELAY_MS

    handle = monitor.attach(spark, database_url)
    query = start_query(spark, scenario, log_dir, checkpoint, unique_name("state_growth"))
    try:
        wait_until(lambda: read_all(query, scenario), WAIT, "every record to be read")
    finally:
        query.stop()
        handle.detach()

    batches = stored_batches(engine, str(query.id))
    assert all(b.watermark_ms is None or b.watermark_ms <= stalled_at for b in batches)
    first = next(n for n, b in enumerate(batches) if b.watermark_ms == stalled_at)
    stalled, before = batches[first:], batches[:first]
    assert len(stalled) >= 3 and all(b.watermark_ms == stalled_at for b in stalled), batches
    # Records keep coming, none newer than the freeze: every one stays in state.
    assert all(b.event_time_max_ms == scenario.since_ms for b in stalled)
    for earlier, later in zip(stalled, stalled[1:], strict=False):
        assert later.rows_in_state == earlier.rows_in_state + later.input_rows, batches
        assert later.rows_removed == 0
    # While the watermark moved, the state let rows go.
    assert any(b.rows_removed for b in before), batches
    # The monitor finds it growing over the stalled batches, by their input a second.
    with so.Session(engine) as session:
        last = batch_of(session, str(query.id), stalled[-1].batch_id)
        assert last is not None
        stalled_ms = last.batch_time_ms - stalled_time_ms(session, str(query.id), stalled[0])
        [growth] = fleet_state(session, {str(query.id): last}, stalled_ms)[str(query.id)]
    assert growth.growing and growth.rows == stalled[-1].rows_in_state
    assert growth.rows_per_second is not None and growth.rows_per_second > 0


def stalled_time_ms(session, query_id, row):
    """The batch time of a stored batch's row."""
    batch = batch_of(session, query_id, row.batch_id)
    assert batch is not None
    return batch.batch_time_ms


def read_all(query, scenario):
    """Whether the query's batches have read every record of the scenario."""
    return sum(p["numInputRows"] for p in query.recentProgress) >= scenario.records


def stored_batches(engine, query_id):
    """Per stored batch: its watermark, event time max and input rows, and the rows in the
    dropDuplicates' state and removed from it."""
    with so.Session(engine) as session:
        rows = session.execute(
            sa.select(
                Batch.batch_id,
                Batch.watermark_ms,
                Batch.event_time_max_ms,
                Batch.num_input_rows.label("input_rows"),
                StateOperator.num_rows_total.label("rows_in_state"),
                StateOperator.num_rows_removed.label("rows_removed"),
            )
            .join(
                StateOperator,
                sa.and_(
                    StateOperator.query_id == Batch.query_id,
                    StateOperator.batch_id == Batch.batch_id,
                ),
            )
            .where(Batch.query_id == query_id)
            .order_by(Batch.batch_id)
        )
        return list(rows)
