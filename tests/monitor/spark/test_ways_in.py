"""The ways in store the same thing: one real query monitored in process straight into a store,
in process through the HTTP collector, by the JVM listener through the collector, and read back
from Spark's event log, compared row by row, health included."""

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy.orm as so

import monitor
from monitor.health.backlog import Verdict
from monitor.health.predicates import Timeouts
from monitor.ingest.ingester import Ingester
from monitor.store.read.backlog import backlogs
from monitor.store.read.batches import latest_batch
from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import upgrade
from streaming.log import PartitionedLog
from streaming.scenarios import play
from tests.support.real_collector import INGEST_TOKEN, serving_collector
from tests.support.spark_queries import start_partition_counts
from tests.support.stores import row_differences, stored_rows
from tests.support.waiting import wait_until

pytestmark = pytest.mark.spark
WAIT = 180
IDLE_S, STALL_S = 60, 1
# Spark does not say when a run ended, nor when it was heard of: each way in stamps those by
# its own clock, and those that deliver as it happens keep how late their events arrived.
WHEN_ENDED = ("terminated_at_ms", "updated_at_ms", "clock_behind_ms")
# Nor how a run is triggered: the listeners read it from the running query, a log cannot.
TRIGGER = ("trigger", "trigger_interval_ms")


def run_stalled_scenario(spark, log_dir, checkpoint):
    """A measured query over three partitions, one held back until it is stalled."""
    scenario = play(
        "stalled_partition",
        PartitionedLog(log_dir),
        partitions=3,
        records=600,
        rate=60.0,
        stalled_partition=1,
    )
    query = start_partition_counts(spark, scenario, log_dir, checkpoint)
    try:
        wait_until(lambda: len(query.recentProgress) >= 8, WAIT, "eight batches")
    finally:
        query.stop()
    return query


def migrated(path) -> Any:
    engine = create_engine(f"sqlite:///{path}")
    upgrade(engine)
    return engine


@contextlib.contextmanager
def jvm_listener(spark: Any, url: str) -> Iterator[Any]:
    """The JVM listener (jvm/) in the shared session, as Spark builds one from its settings,
    posting to the collector at `url`; closed (its queue delivered) and removed afterwards."""
    conf = spark._jvm.org.apache.spark.SparkConf(False)
    conf.set("spark.wmon.url", url).set("spark.wmon.token", INGEST_TOKEN)
    listener = spark._jvm.wmon.spark.WatermarkListener(conf)
    spark._jsparkSession.streams().addListener(listener)
    try:
        yield listener
    finally:
        spark._jsparkSession.streams().removeListener(listener)
        listener.close()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_every_way_in_stores_the_same_rows(
    spark, spark_event_log, log_dir, checkpoint, database_url, tmp_path
):
    timeouts = Timeouts(IDLE_S * 1000, STALL_S * 1000)
    collected, from_jvm = migrated(tmp_path / "collected.db"), migrated(tmp_path / "jvm.db")
    monitor_store = monitor.attach(spark, database_url, idle_timeout=IDLE_S, stall_timeout=STALL_S)
    with (
        serving_collector(str(collected.url), timeouts) as url,
        serving_collector(str(from_jvm.url), timeouts) as jvm_url,
        jvm_listener(spark, jvm_url) as listener,
    ):
        through_http = monitor.attach(spark, url, token=INGEST_TOKEN)
        try:
            query = run_stalled_scenario(spark, log_dir, checkpoint)
        finally:
            assert through_http.detach(timeout=60)
            assert monitor_store.detach(timeout=60)
        wait_until(
            lambda: (
                dict(listener.stats())["pending"] == 0
                and stored_rows(from_jvm, str(query.id))["queries"][0]["status"] == "terminated"
            ),
            60,
            "the JVM listener's delivery of the query's end",
        )
        jvm_stats = dict(listener.stats())
    assert through_http.stats().dropped == through_http.stats().rejected == 0
    assert jvm_stats["dropped"] == jvm_stats["rejected"] == jvm_stats["failures"] == 0

    direct = stored_rows(monitor_store.engine, str(query.id), leave_out=WHEN_ENDED)
    assert len(direct["batches"]) == len(query.recentProgress)
    assert any(row["stalled"] for row in direct["batch_offsets"]), "the scenario stalled nothing"
    assert any(row["records"] for row in direct["batch_event_times"])
    assert direct["queries"][0]["status"] == "terminated"
    assert [(run["trigger"], run["trigger_interval_ms"]) for run in direct["runs"]] == [
        ("ProcessingTime", 300)
    ]
    for way in (collected, from_jvm):
        assert row_differences(stored_rows(way, str(query.id), leave_out=WHEN_ENDED), direct) == []

    from_log = migrated(tmp_path / "from_log.db")
    ingester = Ingester(from_log, [str(spark_event_log)], timeouts)

    def terminated_in_log():
        ingester.step()
        return stored_rows(from_log, str(query.id))["queries"][0]["status"] == "terminated"

    wait_until(terminated_in_log, 60, "the query's end in Spark's event log")
    assert ingester.totals.problems == 0
    logged, direct_untriggered = (
        stored_rows(engine, str(query.id), leave_out=WHEN_ENDED + TRIGGER)
        for engine in (from_log, monitor_store.engine)
    )
    assert row_differences(logged, direct_untriggered) == []
    assert stored_rows(from_log, str(query.id))["runs"][0]["trigger"] is None
    ended = stored_rows(from_log, str(query.id))["queries"][0]["terminated_at_ms"]
    last_batch = max(row["batch_time_ms"] for row in direct["batches"])
    assert last_batch <= ended < last_batch + 10_000, "ended by the log's clock, not ours"
    # And so the backlog read from them: the held-back partition's, stalled, the same
    # whichever way its batches came in.
    behind = [backlog_of(way, str(query.id)) for way in (collected, from_jvm, from_log)]
    assert behind == [backlog_of(monitor_store.engine, str(query.id))] * 3
    assert behind[0].query.verdict is Verdict.STOPPED


def backlog_of(engine, query_id):
    """The query's backlog at its newest batch, as of that batch's time and stopped."""
    with so.Session(engine) as session:
        batch = latest_batch(session, query_id)
        return backlogs(session, batch, batch.batch_time_ms, running=False)
