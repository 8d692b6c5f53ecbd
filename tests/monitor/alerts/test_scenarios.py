"""Each rule on a real streaming query playing the matching scenario: when it fires and resolves,
and that a healthy run raises nothing."""

import logging
import shutil
import threading
import time
from contextlib import contextmanager

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

import monitor
from monitor.alerts.runner import AlertRunner
from monitor.store.schema.models import (
    LIVE_ALERT_STATES,
    AlertEvent,
    AlertRow,
    Batch,
    Query,
)
from streaming.demo import stop_between_batches
from streaming.log import PartitionedLog
from streaming.scenarios import FAST, IDLE, LATE, SLOW, STALLED, play
from tests.support.spark_queries import start_query, unique_name
from tests.support.stores import stored_event_times, stored_partitions
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.e2e]
# What happens here is Spark's and the evaluator's; the store path runs on both stores elsewhere.
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
WAIT = 120
TRAFFIC = dict(partitions=3, records=900, rate=30.0)
# TRAFFIC's event time: 30 s.
TRAFFIC_MS = int(1000 * TRAFFIC["records"] / TRAFFIC["rate"])
# 3 s of event time a trigger instead of 1 s: a third of the batches before what a test waits
# for (the idle partition's end, the burst, the end of the data). Not where a test counts
# batches to stop between.
LARGE_BATCHES = dict(trigger_seconds=3.0)


def live_alerts(engine, rule):
    """The firing alert of `rule` (one per query, and these tests run one), or None."""
    with so.Session(engine, expire_on_commit=False) as session:
        return session.scalars(
            sa.select(AlertRow).where(AlertRow.rule == rule, AlertRow.state == "firing")
        ).one_or_none()


def covered(engine, rule):
    """The partitions the firing alert of `rule` covers (none when it does not fire)."""
    firing = live_alerts(engine, rule)
    return set(firing.partitions) if firing else set()


def alert_rows(engine, rule):
    """Every alert of `rule`, whatever its state, oldest first."""
    with so.Session(engine, expire_on_commit=False) as session:
        return session.scalars(
            sa.select(AlertRow).where(AlertRow.rule == rule).order_by(AlertRow.id)
        ).all()


def resolved(engine, rule):
    """The resolved alerts of `rule`, oldest first."""
    return [row for row in alert_rows(engine, rule) if row.state == "resolved"]


def live_rules(engine):
    """The rules with a pending or firing alert."""
    with so.Session(engine) as session:
        return set(
            session.scalars(sa.select(AlertRow.rule).where(AlertRow.state.in_(LIVE_ALERT_STATES)))
        )


def state(engine, alert_id):
    with so.Session(engine) as session:
        return session.get_one(AlertRow, alert_id).state


def transitions(engine):
    with so.Session(engine) as session:
        rows = session.execute(
            sa.select(AlertRow.rule, AlertRow.partitions, AlertEvent.transition)
            .join(AlertEvent, AlertEvent.alert_id == AlertRow.id)
            .order_by(AlertEvent.id)
        )
        return [(rule, tuple(partitions), transition) for rule, partitions, transition in rows]


class CountingRunner(AlertRunner):
    """The evaluator, counting the passes that held the lease and stored what they found."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.passes = 0

    def run_once(self):
        events = super().run_once()
        if events is not None:
            self.passes += 1
        return events


@contextmanager
def evaluating(spark, engine, database_url, rules=None):
    """The monitor attached and the evaluator running every 0.25 s, for a with-block; the
    evaluator."""
    handle = monitor.attach(spark, database_url, idle_timeout=1, stall_timeout=2)
    runner = CountingRunner(engine, rules, interval_s=0.25)
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(stop,))
    thread.start()
    try:
        yield runner
    finally:
        handle.detach()
        stop.set()
        thread.join(30)


def play_now(name, log_dir, traffic=None):
    """Scenario `name` written to the log, its event times from now on; `traffic` overrides
    TRAFFIC's parameters (a `start_ms` of its own among them)."""
    params = {"start_ms": int(time.time() * 1000), **TRAFFIC, **(traffic or {})}
    return play(name, PartitionedLog(log_dir), **params)


@contextmanager
def monitored(
    spark,
    engine,
    database_url,
    log_dir,
    checkpoint,
    name,
    rules=None,
    each_batch=None,
    traffic=None,
):
    """A query over scenario `name` (event times from now on), the monitor and the evaluator;
    the scenario, the query and the evaluator."""
    scenario = play_now(name, log_dir, traffic)
    with evaluating(spark, engine, database_url, rules) as runner:
        query = start_query(spark, scenario, log_dir, checkpoint, unique_name(name), each_batch)
        try:
            yield scenario, query, runner
        finally:
            stop_between_batches(query)


def _fail_in_batch_3(batch, batch_id):
    # Every partition is read, as Spark requires of a stateful query's foreachBatch.
    batch.write.format("noop").mode("append").save()
    if batch_id == 3:
        raise RuntimeError("the scooter table is gone")


def _write_nowhere(batch, batch_id):
    batch.write.format("noop").mode("append").save()


def running(query, then):
    """`then()`, unless `query` has failed: then fail at once, with Spark's reason."""
    if not query.isActive and query.exception() is not None:
        raise AssertionError(f"the query failed: {query.exception()}")
    return then()


def batches_done(query, count):
    """Wait until `query` has reported batch `count - 1`."""
    wait_until(
        lambda: running(query, lambda: (query.lastProgress or {}).get("batchId", -1) >= count - 1),
        WAIT,
        f"{count} batches",
    )


def first_flagged(engine, flag):
    """The first stored partition marked `flag` ('stalled', 'idle')."""
    flagged = [row for row in stored_partitions(engine) if getattr(row, flag)]
    return min(flagged, key=lambda row: row.batch_time_ms, default=None)


def late_batch_times(engine):
    """The batch times of the batches that dropped late records."""
    return sorted(row.batch_time_ms for row in stored_event_times(engine) if row.late_records > 0)


def stored_batches(engine):
    with so.Session(engine) as session:
        return session.scalar(sa.select(sa.func.count()).select_from(Batch))


@SQLITE_ONLY
def test_a_healthy_run_raises_no_alert(spark, engine, database_url, log_dir, checkpoint, caplog):
    # 12 batches of 30 records: 5 more after those checked, so that no partition runs out of
    # data (and goes idle, a pending alert) before the check, and few enough that the backlog is
    # soon read and the stop between back-to-back batches does not wait up to 15 s for a gap.
    with monitored(
        spark, engine, database_url, log_dir, checkpoint, "steady", traffic=dict(records=360)
    ) as (
        _,
        query,
        runner,
    ):
        batches_done(query, 7)
        wait_until(lambda: stored_batches(engine) >= 7, 30, "7 batches in the store")
        # The second of two more whole passes began after those batches were stored.
        passes = runner.passes
        wait_until(lambda: runner.passes >= passes + 2, 30, "two passes over those batches")
        assert transitions(engine) == []
    failures = [
        record.getMessage()
        for record in caplog.records
        if record.name == "monitor.alerts.runner" and record.levelno >= logging.WARNING
    ]
    assert failures == [], "every pass of the evaluator succeeded"


@SQLITE_ONLY
def test_a_stalled_partition_fires_and_resolves_when_the_query_stops(
    spark, engine, database_url, log_dir, checkpoint, tmp_path
):
    rules = tmp_path / "rules.yml"
    # Below the held-back partition's 210 records: the lag stays over it once the others are read.
    rules.write_text(
        "rules:\n  offset_lag: {threshold: 150, for: 0s}\n"
        "  partition_stalled: {for: 0s, keep_firing_for: 0s}\n"
    )
    # 210 records a partition, 7 batches for the others: the last of them at least 3 s after the
    # first, past the stall timeout, and none long after the stall fires for the stop to wait on.
    with monitored(
        spark,
        engine,
        database_url,
        log_dir,
        checkpoint,
        "stalled_partition",
        rules,
        traffic=dict(LARGE_BATCHES, records=630),
    ) as (scenario, query, _):
        stalled = wait_until(lambda: live_alerts(engine, "partition_stalled"), WAIT, "a stall")
        assert set(stalled.partitions) == {f"telemetry/{p}" for p in scenario.with_role(STALLED)}
        # Marked once it has not advanced for the stall timeout (2 s); fired after that.
        first = first_flagged(engine, "stalled")
        assert first.batch_time_ms - first.last_advance_ms >= 2_000
        assert stalled.fired_at_ms >= first.batch_time_ms
        # The held-back partition's records never get read.
        lag = wait_until(lambda: live_alerts(engine, "offset_lag"), WAIT, "offset lag")
        [held_back] = scenario.with_role(STALLED)
        assert lag.value >= scenario.partitions[held_back].records
        assert lag.caused_by == "partition_stalled", "the stall is why records wait"
        # Stopped, the query's partitions are nobody's concern; its stopping is.
        stop_between_batches(query)
        wait_until(lambda: live_alerts(engine, "query_terminated"), 30, "the query to stop")
        wait_until(lambda: not live_alerts(engine, "partition_stalled"), 30, "the stall to end")
    stalls = [t for t in transitions(engine) if t[0] == "partition_stalled"]
    assert stalls == [("partition_stalled", ("telemetry/1",), "firing")] + [
        ("partition_stalled", ("telemetry/1",), "resolved")
    ]
    # Resolved by the pass that saw the query stopped, or a later one: a pass's time is taken
    # before it reads, so it may precede the stop's own timestamp by the pass's length.
    [stall] = alert_rows(engine, "partition_stalled")
    [stopped] = alert_rows(engine, "query_terminated")
    assert stall.resolved_at_ms >= stopped.active_since_ms


@SQLITE_ONLY
def test_an_idle_partition_fires(spark, engine, database_url, log_dir, checkpoint, tmp_path):
    rules = tmp_path / "rules.yml"
    rules.write_text("rules:\n  partition_idle: {for: 0s}\n")
    # 240 records a partition, 120 of them the idle one's: it runs out in batch 3 of 8, and the
    # others go on for 4 more, time for its alert to fire before they all run out (and are
    # idle too); fewer batches after that for the stop to wait on.
    with monitored(
        spark,
        engine,
        database_url,
        log_dir,
        checkpoint,
        "idle_partition",
        rules,
        traffic=dict(LARGE_BATCHES, records=720),
    ) as (scenario, query, _):
        idle = wait_until(lambda: live_alerts(engine, "partition_idle"), WAIT, "an idle partition")
        assert set(idle.partitions) == {f"telemetry/{p}" for p in scenario.with_role(IDLE)}
        assert not live_alerts(engine, "partition_stalled"), "a partition without work is idle"
        # Marked once nothing has arrived for the idle timeout (1 s); fired after that.
        first = first_flagged(engine, "idle")
        assert first.batch_time_ms - first.last_arrival_ms >= 1_000
        assert idle.fired_at_ms >= first.batch_time_ms
        stop_between_batches(query)
        wait_until(lambda: resolved(engine, "partition_idle"), 30, "a stopped query's idle end")


@SQLITE_ONLY
def test_a_skewed_backfill_fires_late_records_skew_age_and_a_stalled_watermark_until_it_stops(
    spark, engine, database_url, log_dir, checkpoint, tmp_path
):
    rules = tmp_path / "rules.yml"
    rules.write_text(
        "rules:\n"
        "  watermark_skew: {threshold: 5s, for: 0s, keep_firing_for: 0s}\n"
        "  watermark_age: {threshold: 5s, for: 0s, keep_firing_for: 0s}\n"
        "  watermark_stalled: {for: 0s, keep_firing_for: 0s}\n"
    )
    # A backfill of the last 30 s, 3 s of it a trigger. The fast partition is read at once and
    # W, its last event time less 10 s, is older than 5 s from the first batch on (with event
    # times from now on, W ran 20 s ahead of the clock and watermark_age waited 25 s). The slow
    # ones lose 30 records a batch until they reach W, over 100 each by their 4th, and are read
    # in 10 batches (30 at 1 s a trigger).
    backfill = dict(LARGE_BATCHES, start_ms=int(time.time() * 1000) - TRAFFIC_MS)
    with monitored(
        spark, engine, database_url, log_dir, checkpoint, "skewed_backfill", rules, traffic=backfill
    ) as (
        scenario,
        query,
        _,
    ):
        skew = wait_until(lambda: live_alerts(engine, "watermark_skew"), WAIT, "skew to fire")
        with so.Session(engine) as session:
            skewed_at = session.scalar(
                sa.select(sa.func.min(Batch.batch_time_ms)).where(Batch.watermark_skew_ms > 5_000)
            )
        assert skew.fired_at_ms >= skewed_at
        # W = max event time - 10 s, and event times end now: older than 5 s at once.
        wait_until(lambda: live_alerts(engine, "watermark_age"), WAIT, "the watermark's age")
        # Once the fast partition is read, W waits while the slow ones work off their backlog.
        wait_until(lambda: live_alerts(engine, "watermark_stalled"), WAIT, "W to stall")
        late = wait_until(lambda: live_alerts(engine, "late_records"), WAIT, "late records")
        slow = {f"telemetry/{p}" for p in scenario.with_role(SLOW)}
        assert late.partitions and set(late.partitions) <= slow
        assert not {f"telemetry/{p}" for p in scenario.with_role(FAST)} & set(late.partitions)
        assert late.value > 100, "over the default count, and over 1 % of what they read"
        # Stopped, its watermark is nobody's concern: all that resolves but its stopping and
        # the records it lost (they stay news for late_records' window).
        stop_between_batches(query)
        wait_until(
            lambda: live_rules(engine) <= {"query_terminated", "late_records"}, 30, "the rest"
        )
    assert {"watermark_skew", "watermark_age", "watermark_stalled"} <= {
        rule for rule, _, transition in transitions(engine) if transition == "resolved"
    }


@SQLITE_ONLY
def test_a_late_burst_fires_late_records_on_its_partition_only_until_its_window_passes(
    spark, engine, database_url, log_dir, checkpoint, tmp_path
):
    rules = tmp_path / "rules.yml"
    rules.write_text("rules:\n  late_records: {window: 3s, count: 0}\n")
    # 150 records a partition, read 50 a batch: the burst, 30 s behind, comes in the 4th batch
    # (the 9th with 900).
    with monitored(
        spark,
        engine,
        database_url,
        log_dir,
        checkpoint,
        "late_burst",
        rules,
        traffic=dict(LARGE_BATCHES, records=450),
    ) as (scenario, query, _):
        late = wait_until(lambda: live_alerts(engine, "late_records"), WAIT, "the burst")
        assert set(late.partitions) == {f"telemetry/{p}" for p in scenario.with_role(LATE)}
        wait_until(lambda: resolved(engine, "late_records"), WAIT, "the window to pass")
    dropped = late_batch_times(engine)
    with so.Session(engine) as session:
        incidents = session.scalars(
            sa.select(AlertRow).where(AlertRow.rule == "late_records", AlertRow.resolved_at_ms > 0)
        ).all()
    # A busy machine may space the burst's batches more than the window apart: each incident
    # fires on a drop and resolves a window after the last drop before it resolved.
    for alert in incidents:
        assert any(alert.active_since_ms >= t for t in dropped)
        last_drop = max(t for t in dropped if t <= alert.resolved_at_ms)
        assert alert.resolved_at_ms >= last_drop + 3_000


@SQLITE_ONLY
def test_a_killed_query_fires_query_failed_until_it_runs_again(
    spark, engine, database_url, log_dir, checkpoint
):
    scenario, name = play_now("steady", log_dir), unique_name("killed")
    with evaluating(spark, engine, database_url):
        query = start_query(spark, scenario, log_dir, checkpoint, name, _fail_in_batch_3)
        failed = wait_until(lambda: live_alerts(engine, "query_failed"), WAIT, "the failure")
        with so.Session(engine) as session:
            ended_at = session.scalars(sa.select(Query.terminated_at_ms)).one()
        query = start_query(spark, scenario, log_dir, checkpoint, name, _write_nowhere)
        try:
            over = wait_until(lambda: resolved(engine, "query_failed"), WAIT, "the restart")
        finally:
            stop_between_batches(query)
    assert failed.message == "the query failed: RuntimeError: the scooter table is gone"
    # Fired by the pass that saw the query end, or a later one: a pass's time is taken before it
    # reads, so it may precede the end by the pass's length (well under a second here).
    assert ended_at - 1_000 <= failed.fired_at_ms < over[0].resolved_at_ms


@SQLITE_ONLY
def test_a_restart_from_an_older_checkpoint_fires_rewound_until_its_window_passes(
    spark, engine, database_url, log_dir, checkpoint, tmp_path
):
    rules = tmp_path / "rules.yml"
    rules.write_text("rules:\n  rewound: {window: 3s}\n")
    scenario, name = play_now("steady", log_dir), unique_name("rewound")
    older = str(tmp_path / "older-checkpoint")
    # Batches 2 s apart leave time between them to stop in: with back-to-back batches a stop
    # waits long enough for the first run to read everything, and there is nothing to rewind
    # (and the last run's stop waits up to 15 s for a gap). Two batches a run: the older
    # checkpoint ends at batch 1 and the second run reads to batch 3, so a restart from it
    # reads batch 2 again and ends its offsets before where batch 3 ended them.
    with evaluating(spark, engine, database_url, rules):
        query = start_query(spark, scenario, log_dir, checkpoint, name, every="2 seconds")
        batches_done(query, 2)
        stop_between_batches(query)
        shutil.copytree(checkpoint, older)
        query = start_query(spark, scenario, log_dir, checkpoint, name, every="2 seconds")
        batches_done(query, 4)
        stop_between_batches(query)
        assert not alert_rows(engine, "rewound"), "a restart where it left off is no rewind"
        restarted_ms = int(time.time() * 1000)
        query = start_query(spark, scenario, log_dir, older, name, every="2 seconds")
        try:
            rewound = wait_until(
                lambda: running(query, lambda: live_alerts(engine, "rewound")), WAIT, "the rewind"
            )
            partitions = {f"telemetry/{p}" for p in range(TRAFFIC["partitions"])}
            wait_until(lambda: covered(engine, "rewound") == partitions, 30, "all")
            over = wait_until(lambda: resolved(engine, "rewound"), 30, "the window")
        finally:
            stop_between_batches(query)
    assert over
    rows = alert_rows(engine, "rewound")
    with so.Session(engine) as session:
        rewound_at = session.scalar(
            sa.select(sa.func.min(Batch.batch_time_ms)).where(Batch.watermark_rewound)
        )
    assert rewound_at >= restarted_ms and all(r.fired_at_ms >= rewound_at for r in rows)
    assert all(r.resolved_at_ms >= rewound_at + 3_000 for r in rows)
    assert rewound.message.startswith("the watermark")


@SQLITE_ONLY
def test_a_long_batch_is_running_not_silent_and_fires_long_batch_until_it_completes(
    spark, engine, database_url, log_dir, checkpoint, tmp_path
):
    """Batch 4 takes 12 s (a slow sink): the driver tells it runs, so the query is not silent
    (no_progress, at 8 s, would fire without that), and long_batch fires after 4 s."""
    # The driver tells every 5 s (monitor.spark.running), first up to 5 s into the batch: 8 s
    # of silence is 3 s more than it leaves between its news, and long_batch fires by about
    # 9.5 s into the batch, 2.5 s before its end.
    rules = tmp_path / "rules.yml"
    rules.write_text("rules:\n  no_progress: {threshold: 8s}\n  long_batch: {threshold: 4s}\n")
    hang = {}

    def slow_batch_4(batch, batch_id):
        batch.write.format("noop").mode("append").save()
        if batch_id == 4:
            hang["from"] = time.time() * 1000
            time.sleep(12)
            hang["to"] = time.time() * 1000

    def running():
        with so.Session(engine) as session:
            query = session.scalars(sa.select(Query)).one()
            return (query.running_batch_id, query.running_since_ms)

    # 8 batches of 30 records: the query has data through batch 5, which the test waits for, and
    # reads the rest soon after, so the stop between back-to-back batches does not wait out a
    # backlog of 30 batches.
    with monitored(
        spark,
        engine,
        database_url,
        log_dir,
        checkpoint,
        "steady",
        rules,
        slow_batch_4,
        traffic=dict(records=240),
    ) as (_, query, _):
        alert = wait_until(lambda: live_alerts(engine, "long_batch"), WAIT, "the long batch")
        assert "to" not in hang, "it fires while the batch runs"
        batch_id, since_ms = running()
        assert batch_id == 4 and since_ms <= alert.fired_at_ms - 4_000
        wait_until(lambda: state(engine, alert.id) == "resolved", WAIT, "the batch to complete")
        batches_done(query, 6)
        wait_until(lambda: running() == (None, None), 30, "the batch in flight to be cleared")
    assert alert.message.startswith("batch 4 has run for ")
    assert not alert_rows(engine, "no_progress"), "a query running a batch is not silent"
    with so.Session(engine) as session:
        resolved_at = session.get_one(AlertRow, alert.id).resolved_at_ms
    assert hang["from"] <= alert.fired_at_ms < hang["to"] <= resolved_at
