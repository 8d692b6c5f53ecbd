"""GET /metrics on real SQLite and PostgreSQL stores filled through the real write path, parsed
with prometheus_client's own parser."""

import time

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so
from prometheus_client.parser import text_string_to_metric_families

import web
from monitor.alerts.runner import AlertRunner
from monitor.events import QueryStarted, QueryTerminated, TimerSnapshot
from monitor.store.schema.models import AlertRow, Batch
from monitor.store.write.writes import write_event, write_events
from tests.support.progress import QUERY, batch_event, write_state_batch
from web import create_app

T0 = 1_795_316_400_000  # 2026-11-22T03:00:00Z
NOW = T0 + 600_000
KEEP_ENDED_S = 600


@pytest.fixture
def app_config():
    return {"CLOCK": lambda: NOW, "TESTING": True, "METRICS_KEEP_ENDED_S": KEEP_ENDED_S}


def samples(response):
    """The exposition's samples as {(name, sorted labels): value}."""
    text = response.get_data(as_text=True)
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def query(name, query_id):
    return (("query", name), ("query_id", query_id))


def partition(name, query_id, number):
    return (("partition", str(number)), ("query", name), ("query_id", query_id), ("topic", "t"))


def write_orders(engine):
    """Query "orders": two runs, late records in both, the second run's batches continuing."""
    write_events(
        engine,
        [
            QueryStarted("q-orders", "run-1", "orders", T0),
            batch_event(
                "q-orders",
                0,
                NOW - 30_000,
                name="orders",
                watermark_ms=NOW - 60_000,
                ends=(10, 20),
                latests=(15, 20),
                rate=50.0,
                event_times={
                    0: (10, NOW - 70_000, NOW - 40_000, 2),
                    1: (20, NOW - 80, NOW - 50, 1, [], {"future": 2, "future_lead_ms": 900_000}),
                },
            ),
            QueryTerminated("q-orders", "run-1", NOW - 25_000),
            QueryStarted("q-orders", "run-2", "orders", NOW - 20_000),
            batch_event(
                "q-orders",
                1,
                NOW - 10_000,
                name="orders",
                run_id="run-2",
                watermark_ms=NOW - 45_000,
                starts=(10, 20),
                ends=(30, 20),
                latests=(37, 20),
                rate=40.0,
                event_times={
                    0: (20, NOW - 60_000, NOW - 30_000, 3, [], {"future": 1, "future_lead_ms": 1})
                },
            ),
            TimerSnapshot(
                "q-orders", "run-2", NOW - 5_000, NOW - 45_000, 7, NOW + 60_000, 60_000, 1
            ),
        ],
    )


def test_metrics_export_the_latest_batch_partitions_and_timers(engine, client):
    write_orders(engine)
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.content_type.startswith("text/plain; version=")
    found = samples(response)
    orders = query("orders", "q-orders")
    assert found[("wmon_query_watermark_seconds", orders)] == (NOW - 45_000) / 1000
    assert found[("wmon_query_watermark_age_seconds", orders)] == 45.0
    assert found[("wmon_query_last_batch_id", orders)] == 1
    assert found[("wmon_query_last_batch_timestamp_seconds", orders)] == (NOW - 10_000) / 1000
    assert found[("wmon_query_input_rows_per_second", orders)] == 40.0
    assert found[("wmon_query_offset_lag", orders)] == 7  # 37 - 30 and 20 - 20
    assert found[("wmon_query_status", (*orders, ("status", "active")))] == 1
    assert found[("wmon_query_status", (*orders, ("status", "terminated")))] == 0
    # Its health as the pages judge it, one series: 'lagging', for its future-dated records.
    health = [k for k in found if k[0] == "wmon_query_health" and ("query_id", "q-orders") in k[1]]
    assert health == [("wmon_query_health", (*orders, ("status", "lagging")))]
    assert found[health[0]] == 1
    assert found[("wmon_query_pending_timers", orders)] == 7
    assert (
        found[("wmon_query_next_timer_expiry_timestamp_seconds", orders)] == (NOW + 60_000) / 1000
    )
    p0, p1 = partition("orders", "q-orders", 0), partition("orders", "q-orders", 1)
    assert found[("wmon_partition_offset_lag", p0)] == 7
    assert found[("wmon_partition_offset_lag", p1)] == 0
    # W_p: the max event time so far minus the 10 s delay; p1 had no records in batch 1.
    assert found[("wmon_partition_watermark_seconds", p0)] == (NOW - 30_000 - 10_000) / 1000
    assert found[("wmon_partition_max_event_time_seconds", p1)] == (NOW - 50) / 1000
    # Late records add up over both runs: a counter, monotonic across the restart.
    assert found[("wmon_partition_late_records_total", p0)] == 5
    assert found[("wmon_partition_late_records_total", p1)] == 1
    assert found[("wmon_partition_future_records_total", p0)] == 1
    assert found[("wmon_partition_future_records_total", p1)] == 2
    # Batch 1's watermark came from the largest event time read before it, p1's.
    assert found[("wmon_partition_watermark_driver", p1)] == 1
    assert found[("wmon_partition_watermark_driver", p0)] == 0
    assert found[("wmon_partition_idle", p0)] == 0
    # p0's head, offset 30, is the 16th of the 22 records that arrived between the batches'
    # latest offsets (15, then 37): it became available 16/22 of the 20 s after batch 0.
    head_age_s = (30_000 - round(16 / 22 * 20_000)) / 1000
    assert found[("wmon_partition_backlog_seconds", p0)] == head_age_s
    assert found[("wmon_partition_backlog_seconds", p1)] == 0
    # p0's backlog went from 5 to 7: two batches show no trend, so no verdict and no catch-up
    # yet; p1 has none.
    assert ("wmon_partition_catch_up_seconds", p0) not in found
    assert found[("wmon_partition_catch_up_seconds", p1)] == 0
    falling, ok = ("verdict", "falling_behind"), ("verdict", "ok")
    assert not any(
        found[("wmon_partition_backlog_verdict", tuple(sorted((*p0, v))))] for v in VERDICTS
    )
    assert found[("wmon_partition_backlog_verdict", tuple(sorted((*p1, falling))))] == 0
    assert found[("wmon_partition_backlog_verdict", tuple(sorted((*p1, ok))))] == 1
    assert found[("wmon_query_backlog_seconds", orders)] == head_age_s
    assert ("wmon_query_catch_up_seconds", orders) not in found
    assert found[("wmon_store_up", ())] == 1
    assert found[("wmon_exported_queries", ())] == 1
    # A third batch on the same line (5, 7, then 8 records behind): p0 falls behind.
    write_event(engine, behind_batch(2, NOW, ends=(40, 20), latests=(48, 20)))
    found = samples(client.get("/metrics"))
    assert found[("wmon_partition_catch_up_seconds", p0)] == float("inf")
    assert found[("wmon_partition_backlog_verdict", tuple(sorted((*p0, falling))))] == 1
    assert found[("wmon_query_catch_up_seconds", orders)] == float("inf")


VERDICTS = [("verdict", v) for v in ("ok", "catching_up", "falling_behind", "stalled")]


def behind_batch(batch_id, at_ms, ends, latests):
    """A batch of the second run of "orders" that reads up to `ends` of `latests`."""
    return batch_event(
        "q-orders",
        batch_id,
        at_ms,
        name="orders",
        run_id="run-2",
        watermark_ms=NOW - 45_000,
        starts=(30, 20),
        ends=ends,
        latests=latests,
    )


def test_ended_queries_drop_out_after_the_keep_time(engine, client):
    for query_id, ended_ms in (
        ("q-recent", NOW - 60_000),
        ("q-old", NOW - KEEP_ENDED_S * 1000 - 1),
    ):
        write_events(
            engine,
            [
                QueryStarted(query_id, "run-1", query_id, T0),
                batch_event(query_id, 0, ended_ms - 1_000, name=query_id, watermark_ms=T0),
                QueryTerminated(query_id, "run-1", ended_ms, exception="boom"),
            ],
        )
    found = samples(client.get("/metrics"))
    assert found[("wmon_query_status", (*query("q-recent", "q-recent"), ("status", "failed")))] == 1
    assert not [key for key in found if ("query_id", "q-old") in key[1]]
    assert found[("wmon_exported_queries", ())] == 1


def test_live_alerts_are_counted_by_rule_severity_and_state(engine, client):
    states = {"q0": "firing", "q1": "firing", "q2": "pending"}
    for query_id in states:
        write_event(engine, batch_event(query_id, 0, NOW - 1_000, name=f"orders_{query_id}"))
    with so.Session(engine) as session:
        for query_id, state in states.items():
            session.add(
                AlertRow(
                    rule="partition_stalled",
                    query_id=query_id,
                    partitions=["t/0"],
                    severity="critical",
                    state=state,
                    message="stalled",
                    active_since_ms=NOW - 60_000,
                    held_at_ms=NOW - 1_000,
                )
            )
        session.commit()
    found = samples(client.get("/metrics"))
    labels = (("rule", "partition_stalled"), ("severity", "critical"))
    assert found[("wmon_alerts", (*labels, ("state", "firing")))] == 2
    assert found[("wmon_alerts", (*labels, ("state", "pending")))] == 1


def test_the_ingest_lag_is_how_long_after_its_batch_ended_the_newest_batch_was_stored(
    engine, client
):
    ran_ms = time.time_ns() // 1_000_000 - 30_000
    before = time.time_ns() // 1_000_000
    write_event(engine, batch_event("q0", 0, ran_ms, name="orders", duration_ms=2_000))
    after = time.time_ns() // 1_000_000
    with so.Session(engine) as session:
        stored_ms = session.scalar(sa.select(Batch.stored_at_ms))
    assert before <= stored_ms <= after
    found = samples(client.get("/metrics"))
    lag = found[("wmon_query_ingest_lag_seconds", query("orders", "q0"))]
    assert lag == (stored_ms - ran_ms - 2_000) / 1000
    assert 28 <= lag < 60


def test_the_evaluation_lag_is_how_long_ago_any_evaluator_last_evaluated(engine, client):
    assert ("wmon_alert_evaluation_lag_seconds", ()) not in samples(client.get("/metrics"))
    runner = AlertRunner(engine, clock=lambda: NOW - 12_000)
    assert runner.run_once() == []
    assert samples(client.get("/metrics"))[("wmon_alert_evaluation_lag_seconds", ())] == 12
    runner.close()  # another evaluator may take over at once; the last evaluation stays known
    assert samples(client.get("/metrics"))[("wmon_alert_evaluation_lag_seconds", ())] == 12
    other = AlertRunner(engine, clock=lambda: NOW - 2_000)
    assert other.run_once() == []
    assert samples(client.get("/metrics"))[("wmon_alert_evaluation_lag_seconds", ())] == 2


def test_a_store_that_cannot_be_read_is_a_503_with_the_monitor_s_own_series(tmp_path):
    app = create_app({"DATABASE_URL": f"sqlite:///{tmp_path / 'missing.db'}", "TESTING": True})
    try:
        response = app.test_client().get("/metrics")
    finally:
        web.stop(app)
    assert response.status_code == 503
    text = response.get_data(as_text=True)
    assert text.startswith("# wmon: cannot use the store: no store at")
    found = samples(response)
    assert found[("wmon_store_up", ())] == 0


def test_an_empty_store_exports_only_the_monitor_s_own_series(client):
    found = samples(client.get("/metrics"))
    assert found == {
        ("wmon_store_up", ()): 1.0,
        ("wmon_rejected_events", ()): 0.0,
        ("wmon_exported_queries", ()): 0.0,
    }


def test_stateful_operators_export_their_state_and_whether_it_grows(engine, app_config, client):
    start = NOW - 60_000
    for b in range(6):
        counted = ("dedupe", 100 * (b + 1), 100, {"SnapshotLastUploaded.partition_0_default": 2})
        uncounted = ("agg", 0, 50, {"rocksdbSstFileSize": 4_096 * (b + 1)})
        write_state_batch(engine, b, 1, [counted, uncounted], epoch=start)
    found = samples(client.get("/metrics"))
    labels = query("telemetry_windows", QUERY)  # the fixture's name
    dedupe = tuple(sorted((*labels, ("operator", "dedupe"), ("operator_index", "0"))))
    agg = tuple(sorted((*labels, ("operator", "agg"), ("operator_index", "1"))))
    assert found[("wmon_operator_state_rows", dedupe)] == 600
    assert found[("wmon_operator_state_memory_bytes", dedupe)] == 1_600
    assert found[("wmon_operator_state_snapshot_lag", dedupe)] == 4
    assert found[("wmon_operator_state_growing", dedupe)] == 1
    # Not counted (trackTotalNumberOfRows=false): no rows, the files' size instead.
    assert ("wmon_operator_state_rows", agg) not in found
    assert found[("wmon_operator_state_store_bytes", agg)] == 24_576
    assert found[("wmon_operator_state_growing", agg)] == 1


def test_a_query_behind_its_trigger_exports_its_interval_and_median_batch(engine, client):
    write_event(
        engine, QueryStarted("paced-id", "run-1", "paced", NOW - 60_000, "ProcessingTime", 2_000)
    )
    for k, duration in enumerate([1_500, 2_500, 3_500]):
        at = NOW - 10_000 + 2_000 * k
        write_event(engine, batch_event("paced-id", k, at, name="paced", duration_ms=duration))
    write_event(engine, QueryStarted("once-id", "run-2", "once", NOW - 60_000, "AvailableNow"))
    once_batch = batch_event(
        "once-id", 0, NOW - 5_000, name="once", run_id="run-2", duration_ms=900
    )
    write_event(engine, once_batch)
    found = samples(client.get("/metrics"))
    paced, once = query("paced", "paced-id"), query("once", "once-id")
    assert found[("wmon_query_trigger_interval_seconds", paced)] == 2.0
    assert found[("wmon_query_batch_duration_seconds", paced)] == 2.5
    assert found[("wmon_query_behind_trigger", paced)] == 1
    # Available now has no interval to keep: its batches' duration only.
    assert found[("wmon_query_batch_duration_seconds", once)] == 0.9
    assert ("wmon_query_trigger_interval_seconds", once) not in found
    assert ("wmon_query_behind_trigger", once) not in found
