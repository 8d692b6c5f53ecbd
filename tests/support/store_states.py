"""A store in many states at once, for the tests that hold every JSON payload to its schema:
queries running, catching up, instrumented, future-dated, silent, failed, ended, waiting for
their first batch, without offsets, unreadable, reset; alerts pending, firing, resolved,
acknowledged and silenced, with deliveries; events set aside. Null-heavy states are there on
purpose: each field the code can leave null is null in one of them, but for a delivery given up
after a day (`abandoned_at_ms`) and the evaluator's `rules_error` (a rules file broken while a
server runs)."""

import dataclasses

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.alerts.actions import acknowledge, silence
from monitor.alerts.evaluate import evaluate
from monitor.alerts.rulefile import load_rules
from monitor.alerts.runner import descriptions
from monitor.collect.accept import accept
from monitor.collect.progress import parse_progress
from monitor.events import (
    BatchRunning,
    OperatorProgress,
    QueryIdle,
    QueryStarted,
    QueryTerminated,
    TimerSnapshot,
)
from monitor.notify.delivery import deliver_due
from monitor.notify.transport import Sent
from monitor.store.schema.models import AlertRow, BatchOffsets, Query
from monitor.store.write.writes import write_events
from tests.support.alert_scenarios import moves_again, stalled
from tests.support.diagnosis_scenario import QUERY as TELEMETRY
from tests.support.diagnosis_scenario import T0, write_telemetry
from tests.support.progress import T, batch_event, progress_doc, stamp

# Ten minutes after the telemetry query's first batch: it has been silent for nine.
NOW = T0 + 600_000
ORDERS, WAITING, BROKEN = "orders-id", "waiting-id", "broken-id"
RULES = load_rules("""\
rules:
  partition_stalled: {for: 0, keep_firing_for: 0}
  no_progress: {for: 1h}
receivers:
  - {name: ops, kind: webhook, url: "http://127.0.0.1:9/"}
""")


def _operator(batch_id):
    """A RocksDB deduplication whose state grows by 100 rows a batch."""
    return OperatorProgress(
        operator_index=0,
        operator_name="dedupeWithinWatermark",
        num_rows_total=1_000 + 100 * batch_id,
        num_rows_updated=100,
        num_rows_removed=0,
        num_rows_dropped_by_watermark=3,
        memory_used_bytes=50_000 + 1_000 * batch_id,
        num_registered_timers=None,
        num_deleted_timers=None,
        num_expired_timers=None,
        custom_metrics={
            "rocksdbSstFileSize": 200_000 + 5_000 * batch_id,
            "rocksdbCommitFlushLatency": 12,
            "SnapshotLastUploaded.partition_0_default": max(batch_id - 1, 0),
        },
    )


def orders_batch(batch_id):
    """Batch `batch_id` of orders, every 10 s up to 10 s ago: t/0 reads 30 records a batch
    while 10 arrive (catching up on 300), t/1 keeps up; t/0 drops late records, with samples,
    and t/1 reads a record 10 min ahead of its batch."""
    at_ms = NOW - 80_000 + 10_000 * batch_id
    late = 5 if batch_id >= 6 else 0
    samples = [("k-1", at_ms - 90_000, 100 + batch_id), (None, at_ms - 95_000, None)][:late]
    future = {
        "future": 1,
        "future_lead_ms": 600_000,
        "future_samples": [["k-9", at_ms + 600_000, 7]],
    }
    # The late records 66-131 s behind the watermark, the others 8-16 s ahead of it.
    lateness = {"late_buckets": {"17": late}, "slack_buckets": {"14": 30 - late}}
    progress = batch_event(
        ORDERS,
        batch_id,
        at_ms,
        name="orders",
        watermark_ms=at_ms - 20_000,
        starts=(30 * batch_id, 10 * batch_id),
        ends=(30 * (batch_id + 1), 10 * (batch_id + 1)),
        latests=(300 + 10 * (batch_id + 1), 10 * (batch_id + 1)),
        rows=40,
        rate=4.0,
        duration_ms=7_000 + 100 * batch_id,
        stages={"addBatch": 5_000 + 100 * batch_id, "latestOffset": 200},
        event_times={
            0: (30, at_ms - 100_000, at_ms - 15_000, late, samples, lateness),
            1: (10, at_ms - 30_000, at_ms + 600_000, 0, [], future if batch_id == 7 else {}),
        },
    )
    return dataclasses.replace(progress, operators=(_operator(batch_id),))


def _orders():
    """A query triggered every 5 s whose batches take 7 s, with a batch in flight and two
    pending-timer snapshots (the newest with no watermark and no timer due)."""
    return [
        QueryStarted(ORDERS, "run-1", "orders", NOW - 90_000, "ProcessingTime", 5_000),
        *(orders_batch(batch_id) for batch_id in range(8)),
        TimerSnapshot(ORDERS, "run-1", NOW - 20_000, NOW - 40_000, 9, NOW - 1_000, 60_000, 2),
        TimerSnapshot(ORDERS, "run-1", NOW - 5_000, None, 0, None, 60_000, 0),
        BatchRunning(ORDERS, "run-1", NOW - 1_000, 8, NOW - 6_000),
    ]


def _without_offsets(query_id, name, source):
    """One batch of a source whose offsets say less: no partitions, or no latest offsets."""
    doc = progress_doc(
        id=query_id,
        runId=f"run-{query_id}",
        batchId=0,
        timestamp=stamp(NOW - 30_000),
        numInputRows=None,
        sources=[source],
        stateOperators=[],
        observedMetrics={},
    )
    doc["name"] = name
    return parse_progress(doc)


def _ended(query_id, exception=None, error_class=None):
    """A query that ran a batch, then ended: failed with `exception`, or cleanly."""
    return [
        QueryStarted(query_id, f"run-{query_id}", query_id, NOW - 200_000),
        batch_event(query_id, 0, NOW - 100_000, name=query_id, run_id=f"run-{query_id}"),
        QueryTerminated(query_id, f"run-{query_id}", NOW - 60_000, exception, error_class),
    ]


def _timers():
    """The telemetry query's pending timers, the newest snapshot with a timer due."""
    return [TimerSnapshot(TELEMETRY, "run-1", T0 + 55_000, T0 + 40_000, 3, T0 + 60_000, 60_000, 1)]


def _others():
    """Queries in the states the others are not in."""
    memory = {"description": "MemoryStream[value#1]", "startOffset": None, "endOffset": None}
    no_latest = {
        "description": "KafkaV2[Subscribe[t]]",
        "startOffset": {"t": {"0": 5}},
        "endOffset": {"t": {"0": 9}},
        "latestOffset": None,
    }
    return [
        QueryStarted(WAITING, "run-waiting", None, NOW - 2_000),
        _without_offsets("memory-id", "memory", memory),
        _without_offsets("no-latest-id", "no_latest", no_latest),
        *_ended("failed", "java.lang.IllegalStateException: boom", "X_ERROR"),
        *_ended("ended"),
        QueryStarted("idle-id", "run-idle", "idle", NOW - 200_000),
        batch_event("idle-id", 0, NOW - 100_000, name="idle", run_id="run-idle"),
        QueryIdle("idle-id", "run-idle", NOW - 50_000),
        # A Declarative Pipeline's flow, reset: the second query replaces the first.
        QueryStarted("flow-1", "run-flow-1", "p/flow", NOW - 300_000, pipeline="p"),
        QueryStarted("flow-2", "run-flow-2", "p/flow", NOW - 200_000, pipeline="p"),
        batch_event(BROKEN, 0, NOW - 20_000, name="broken", run_id="run-broken"),
    ]


def _pruned(engine):
    """Say the telemetry query's first two batches, and its minutes before them, were pruned:
    its history before then is read from its rollups."""
    with engine.begin() as connection:
        connection.execute(
            sa.update(Query)
            .where(Query.id == TELEMETRY)
            .values(batches_kept_from_ms=T0 + 20_000, minutes_kept_from_ms=T0)
        )


def _break(engine):
    """Make the broken query's partitions unreadable: its status is `error`."""
    with engine.begin() as connection:
        connection.execute(
            sa.update(BatchOffsets)
            .where(BatchOffsets.query_id == BROKEN)
            .values(partitions=b"not packed")
        )


class RefusedOnce:
    """A receiver that answers 503 to the first notification, then takes the rest."""

    def __init__(self):
        self.refused = False

    def __call__(self, url, message):
        if self.refused:
            return Sent(200)
        self.refused = True
        return Sent(503, "HTTP 503 Service Unavailable")


def _evaluate(engine, at_ms):
    with so.Session(engine) as session:
        evaluate(session, RULES, at_ms)


def _alerts(engine):
    """Evaluate the rules up to now: a partition that stalls then moves again (its alert fired
    and resolved), the silent telemetry query (pending for an hour), the others' alerts as the
    default rules find them; each notification tried, the first refused once; an alert
    acknowledged, the watermark_age ones silenced."""
    stall = NOW - 100_000
    stalled(engine, epoch=stall)
    _evaluate(engine, stall + 26_000)
    moves_again(engine, epoch=stall)
    _evaluate(engine, stall + 31_000)
    _evaluate(engine, NOW - 1_000)
    receiver = RefusedOnce()
    deliver_due(engine, RULES.receivers, NOW - 1_000, receiver, descriptions=descriptions())
    deliver_due(engine, RULES.receivers, NOW, receiver, descriptions=descriptions())
    with so.Session(engine) as session:
        firing = session.scalars(
            sa.select(AlertRow.id).where(AlertRow.state == "firing").order_by(AlertRow.id)
        ).first()
        acknowledge(session, firing, "ana", NOW - 500)
        silence(
            session,
            rule="watermark_age",
            query_id=None,
            partition=None,
            until_ms=NOW + 3_600_000,
            now_ms=NOW - 400,
            by="ana",
            comment=None,
        )


def _set_aside(engine):
    """Two events refused: one posted by a named sender, one from nowhere said."""
    bad = {"Event": "org.apache.spark.sql.streaming.StreamingQueryListener$QueryProgressEvent"}
    accept(engine, [bad | {"progress": {"id": "x"}}], NOW - 3_000, T, "app-1")
    accept(engine, [{"Event": 1}], NOW - 2_000, T)


def fill(engine):
    """Write every state into the migrated store behind `engine`."""
    write_telemetry(engine)
    write_events(engine, _orders() + _timers() + _others())
    _alerts(engine)
    _pruned(engine)
    _break(engine)
    _set_aside(engine)
