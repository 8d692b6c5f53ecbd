"""The JSON API on real SQLite and PostgreSQL stores, filled through the real write path."""

import csv
import io
import json
import sqlite3

import pytest

import web
from monitor.collect.progress import parse_progress
from monitor.events import QueryIdle, QueryStarted, QueryTerminated, TimerSnapshot
from monitor.store.tiers.prune import Cutoffs, prune
from monitor.store.write.writes import write_event, write_events
from tests.support.network import closed_port
from tests.support.progress import batch_event, progress_doc, stamp
from web import create_app
from wmon.main import main

T0 = 1_795_316_400_000  # 2026-11-22T03:00:00Z
DAY_MS = 86_400_000
NOW = T0 + 600_000
SINCE = NOW - 300_000  # the default late window: five minutes


@pytest.fixture
def app_config():
    return {"CLOCK": lambda: NOW, "TESTING": True}


def ok(response):
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def started(query_id, at_ms):
    return QueryStarted(query_id, "run-1", query_id, at_ms)


# Six queries, one for each status.
def write_statuses(engine):
    healthy = [
        batch_event(
            "healthy",
            i,
            NOW - 30_000 + i * 10_000,
            name="healthy",
            watermark_ms=NOW - 45_000 + i * 10_000,
            ends=(10 * (i + 1), 10 * (i + 1)),
            event_times={
                0: (10, NOW - 50_000, NOW - 32_000 + i * 10_000, 0),
                1: (10, NOW - 50_000, NOW - 35_000 + i * 10_000, 0),
            },
        )
        for i in range(3)
    ]
    timers = [
        TimerSnapshot("healthy", "run-1", NOW - 20_000, NOW - 35_000, 9, NOW - 1_000, 60_000, 2),
        TimerSnapshot("healthy", "run-1", NOW - 5_000, NOW - 25_000, 7, NOW + 60_000, 60_000, 1),
    ]
    lagging = [
        batch_event("lagging", 0, T0 + 100_000, name="lagging", event_times={0: (150, 1, 2, 150)}),
        batch_event("lagging", 1, NOW - 20_000, name="lagging", event_times={0: (200, 1, 2, 0)}),
        batch_event("lagging", 2, NOW - 10_000, name="lagging", event_times={0: (200, 1, 2, 120)}),
    ]
    stalled = [
        batch_event(
            "stalled", i, at, name="stalled", ends=(10 * (i + 1), 10), latests=(10 * (i + 1), 50)
        )
        for i, at in enumerate((NOW - 300_000, NOW - 150_000, NOW - 10_000))
    ]
    idle = [
        started("idle", NOW - 200_000),
        batch_event("idle", 0, NOW - 100_000, name="idle"),
        QueryIdle("idle", "run-1", NOW - 50_000),
    ]
    failed = [
        started("failed", NOW - 200_000),
        batch_event("failed", 0, NOW - 100_000, name="failed"),
        QueryTerminated("failed", "run-1", NOW - 60_000, "boom: table missing", "X_ERROR"),
    ]
    terminated = [
        started("terminated", NOW - 200_000),
        batch_event("terminated", 0, NOW - 100_000, name="terminated"),
        QueryTerminated("terminated", "run-1", NOW - 60_000),
    ]
    write_events(engine, healthy + timers + lagging + stalled + idle + failed + terminated)


def test_the_overview_sorts_problems_first_and_terminated_last(engine, client):
    write_statuses(engine)
    queries = ok(client.get("/api/queries"))["queries"]
    assert [(q["name"], q["status"]) for q in queries] == [
        ("failed", "failed"),
        ("stalled", "stalled"),
        ("lagging", "lagging"),
        ("idle", "idle"),
        ("healthy", "healthy"),
        ("terminated", "terminated"),
    ]
    by_name = {q["name"]: q for q in queries}
    # The 150 of batch 0 are outside the window; 120 of 400 read are over the late_records
    # rule's count (100) and share (1 %).
    assert by_name["lagging"]["late_records"] == 120
    assert by_name["stalled"]["offset_lag"] == 40
    assert by_name["failed"]["error_class"] == "X_ERROR"
    assert by_name["idle"]["stored_status"] == "idle"


# A fleet of five, each with a run of its own: a failed query, a silent one (stalled), an idle
# one, two healthy ones.
def write_fleet(engine):
    def batch(query_id, at_ms, name):
        return batch_event(query_id, 0, at_ms, name=name, run_id=f"run-{query_id}")

    write_events(
        engine,
        [
            QueryStarted("f", "run-f", "Payments_EU", NOW - 200_000),
            batch("f", NOW - 100_000, "Payments_EU"),
            QueryTerminated("f", "run-f", NOW - 60_000, "boom", "X_ERROR"),
            batch("s", NOW - 400_000, "orders-eu"),
            QueryStarted("i", "run-i", "orders.us", NOW - 200_000),
            batch("i", NOW - 100_000, "orders.us"),
            QueryIdle("i", "run-i", NOW - 50_000),
            batch("h1", NOW - 10_000, "clicks_raw"),
            batch("h2", NOW - 10_000, "payments_us"),
        ],
    )


@pytest.mark.parametrize(
    ("query_string", "names", "total"),
    [
        ("", ["Payments_EU", "orders-eu", "orders.us", "clicks_raw", "payments_us"], 5),
        ("q=PAYMENTS", ["Payments_EU", "payments_us"], 2),
        ("q=s_", ["Payments_EU", "clicks_raw", "payments_us"], 3),
        ("q=nothing", [], 0),
        ("status=healthy", ["clicks_raw", "payments_us"], 2),
        (
            "status=healthy,failed,idle",
            ["Payments_EU", "orders.us", "clicks_raw", "payments_us"],
            4,
        ),
        ("status=error", [], 0),
        ("q=orders&status=stalled,healthy", ["orders-eu"], 1),
        ("limit=2", ["Payments_EU", "orders-eu"], 5),
        ("limit=2&offset=2", ["orders.us", "clicks_raw"], 5),
        ("offset=4", ["payments_us"], 5),
        ("offset=5", [], 5),
        ("q=u&status=idle,healthy,failed&limit=1&offset=1", ["orders.us"], 3),
    ],
    ids=[
        "all",
        "q, any case",
        "q, any piece",
        "q matching none",
        "a status",
        "several statuses",
        "a status none has",
        "q and statuses",
        "limit",
        "limit and offset",
        "offset",
        "offset past the end",
        "everything",
    ],
)
def test_the_overview_is_searched_filtered_and_paged(engine, client, query_string, names, total):
    write_fleet(engine)
    answer = ok(client.get(f"/api/queries?{query_string}"))
    assert ([q["name"] for q in answer["queries"]], answer["total"]) == (names, total)


@pytest.mark.parametrize(
    ("query_string", "named"),
    [
        ("q=", "q"),
        ("q=%20", "q"),
        (f"q={'x' * 501}", "q"),
        ("q=a%00b", "q"),
        ("status=broken", "status"),
        ("status=", "status"),
        ("status=stalled,", "status"),
        ("status=Stalled", "status"),
        ("limit=0", "limit"),
        ("limit=5001", "limit"),
        ("limit=all", "limit"),
        ("offset=-1", "offset"),
        ("offset=1.5", "offset"),
    ],
)
def test_bad_overview_parameters_get_a_400_naming_them(client, query_string, named):
    response = client.get(f"/api/queries?{query_string}")
    assert response.status_code == 400
    assert response.get_json()["error"].startswith(f"{named} must ")


def test_an_overview_entry_has_the_latest_figures_and_a_trend(engine, client):
    write_statuses(engine)
    [healthy] = [q for q in ok(client.get("/api/queries"))["queries"] if q["id"] == "healthy"]
    assert healthy == {
        "id": "healthy",
        "name": "healthy",
        "run_id": "run-1",
        "status": "healthy",
        "severity": None,
        "alerts": {"critical": 0, "warning": 0, "pending": 0},
        # Nothing fires (the third of three), healthy (the seventh of eight): 2 × 8 + 6.
        "urgency": 22,
        "stored_status": "active",
        "error_class": None,
        "exception": None,
        "last_batch_id": 2,
        "watermark_ms": NOW - 25_000,
        "watermark_age_ms": 25_000,
        "skew_ms": 3_000,  # W_p of t/0 and t/1: NOW - 22 s and NOW - 25 s
        "late_records": 0,
        "late_window_ms": 300_000,
        "silence_ms": 300_000,
        "pending_timers": 7,
        "next_timer_ms": NOW + 60_000,
        "offset_lag": 0,
        "backlog": {"records": 0, "age_ms": 0, "age": "none", "catch_up_ms": 0, "verdict": "ok"},
        "trend": {
            "batch_id": [0, 1, 2],
            "batch_time_ms": [NOW - 30_000, NOW - 20_000, NOW - 10_000],
            "watermark_age_ms": [15_000, 15_000, 15_000],
            "offset_lag": [0, 0, 0],
        },
        "updated_at_ms": NOW - 10_000,
        "clock_ahead_ms": 0,
        "clock_behind_ms": None,
        "running_batch_id": None,
        "running_since_ms": None,
        "unreadable": None,
        "now_ms": NOW,
    }


def test_a_backlog_falling_behind_is_lagging(engine, client):
    # t/1 reads 2 records a batch while 7 arrive: 5, 10, then 15 wait.
    write_events(
        engine,
        [
            batch_event(
                "backlog",
                i,
                NOW - 30_000 + i * 10_000,
                ends=(10, 10 + 2 * i),
                latests=(10, 15 + 7 * i),
            )
            for i in range(3)
        ],
    )
    [entry] = ok(client.get("/api/queries"))["queries"]
    assert (entry["status"], entry["trend"]["offset_lag"]) == ("lagging", [5, 10, 15])
    assert entry["backlog"]["verdict"] == "falling_behind"


# One query, three batches: partition t/1 dropped 5 late records long ago and 4 recently.
BACKLOG_KEYS = (
    "backlog_records",
    "backlog_age_ms",
    "backlog_age",
    "arrival_rate",
    "read_rate",
    "backlog_trend",
    "catch_up_ms",
    "verdict",
)


def write_orders(engine):
    events = [
        batch_event(
            "orders-id",
            0,
            T0 + 100_000,
            name="orders",
            ends=(100, 50),
            latests=(100, 80),
            rows=150,
            rate=15.0,
            dropped=1,
            event_times={
                0: (100, T0, T0 + 95_000, 0),
                1: (50, T0, T0 + 60_000, 5, [("k1", T0 + 1_000, 7)]),
            },
        ),
        batch_event(
            "orders-id",
            1,
            NOW - 20_000,
            name="orders",
            watermark_ms=NOW - 35_000,
            starts=(100, 50),
            ends=(160, 70),
            latests=(200, 90),
            rows=80,
            rate=8.0,
            dropped=2,
            event_times={
                0: (60, NOW - 40_000, NOW - 25_000, 0),
                1: (20, T0, NOW - 200_000, 4, [("k2", T0 + 2_000, 55), (None, T0 + 3_000, 56)]),
            },
        ),
        batch_event(
            "orders-id",
            2,
            NOW - 10_000,
            name="orders",
            watermark_ms=NOW - 25_000,
            starts=(160, 70),
            ends=(200, 70),
            latests=(260, 95),
            rows=40,
            rate=4.0,
            dropped=3,
            event_times={0: (40, NOW - 30_000, NOW - 15_000, 0)},
        ),
    ]
    write_events(engine, events)


def test_a_query_page_has_its_latest_batch_and_partition_table(engine, client):
    write_orders(engine)
    page = ok(client.get("/api/queries/orders"))
    # Its backlogs neither lose records nor fall behind (see below): healthy.
    assert page["query"]["id"] == "orders-id" and page["query"]["status"] == "healthy"
    assert (page["late_records"], page["late_window_ms"], page["timers"]) == (4, 300_000, None)
    latest = page["latest_batch"]
    assert (latest["batch_id"], latest["watermark_ms"], latest["rows_dropped_by_watermark"]) == (
        2,
        NOW - 25_000,
        3,
    )
    # W_p: t/0 NOW - 25 s, t/1 (running max NOW - 200 s) NOW - 210 s.
    assert (latest["watermark_skew_ms"], latest["flink_watermark_ms"]) == (185_000, NOW - 210_000)
    t0, t1 = page["partitions"]
    # t/0's head (offset 200) is the first of the 60 records that arrived in the 10 s between
    # batches 1 and 2; its backlog was empty at batch 0, in its window: ok. Three points (0, 40,
    # 60) are too few, and too bent, for a trend.
    assert {key: t0.pop(key) for key in BACKLOG_KEYS} == {
        "backlog_records": 60,
        "backlog_age_ms": 20_000 - round(10_000 / 60),
        "backlog_age": "interpolated",
        "arrival_rate": pytest.approx(0.27, abs=0.005),
        "read_rate": pytest.approx(0.166, abs=0.005),
        "backlog_trend": "stable",
        "catch_up_ms": None,
        "verdict": "ok",
    }
    # t/1's head (offset 70) was there at batch 0, 500 s ago. Its backlog went from 50 to 20,
    # then to 25: no trend stands out of three such points, and it keeps pace.
    assert (t1["backlog_age_ms"], t1["backlog_age"], t1["verdict"], t1["status"]) == (
        500_000,
        "at_least",
        "ok",
        "ok",
    )
    # Its one stateful operator reports no rows or memory here: known by name only.
    assert [(op["operator"], op["rows"], op["growing"]) for op in page["state"]] == [
        ("dedupe", None, False)
    ]
    # No way in told its trigger: its batches' durations, nothing judged.
    assert page["trigger"] == {
        "kind": None,
        "interval_ms": None,
        "batches": 3,
        "duration_ms": 100,
        "slower_batches": 0,
        "behind": None,
        "stage": None,
        "stage_from_ms": None,
        "stage_to_ms": None,
        "stage_grew": False,
    }
    assert page["backlog"] == {
        "records": 85,
        "age_ms": 500_000,
        "age": "at_least",
        "catch_up_ms": None,
        "verdict": "ok",
    }
    assert t0 == {
        "batch_id": 2,
        "partition": "t/0",
        "topic": "t",
        "start_offset": 160,
        "end_offset": 200,
        "latest_offset": 260,
        "offset_lag": 60,
        "rows_per_second": 4.0,  # 40 of the batch's 40 rows at 4 rows/s
        "idle": False,
        "stalled": False,
        "rewound": False,
        "records": 40,
        "max_event_time_ms": NOW - 15_000,
        "partition_watermark_ms": NOW - 25_000,
        "time_lag_ms": 5_000,
        "late_records": 0,
        "late_records_total": 0,
        "late_samples": [],
        "future_records": 0,
        "future_lead_ms": None,
        "late_records_window": 0,
        "recent_late_samples": [],
        "status": "ok",
    }
    assert (t1["partition"], t1["offset_lag"], t1["rows_per_second"], t1["records"]) == (
        "t/1",
        25,
        0.0,
        0,
    )
    assert (t1["max_event_time_ms"], t1["partition_watermark_ms"], t1["time_lag_ms"]) == (
        NOW - 200_000,
        NOW - 210_000,
        190_000,
    )
    assert (t1["late_records"], t1["late_records_total"], t1["late_records_window"]) == (0, 9, 4)
    assert t1["recent_late_samples"] == [["k2", T0 + 2_000, 55], [None, T0 + 3_000, 56]]


def test_a_query_is_found_by_id_or_name(engine, client):
    write_orders(engine)
    assert ok(client.get("/api/queries/orders-id")) == ok(client.get("/api/queries/orders"))


def test_a_failed_query_shows_its_failure(engine, client):
    write_statuses(engine)
    page = ok(client.get("/api/queries/failed"))
    assert page["query"]["status"] == "failed" and page["query"]["stored_status"] == "failed"
    assert (page["query"]["exception"], page["query"]["error_class"]) == (
        "boom: table missing",
        "X_ERROR",
    )
    assert page["query"]["terminated_at_ms"] == NOW - 60_000


def test_a_query_without_batches(engine, client):
    write_event(engine, started("fresh", NOW - 1_000))
    page = ok(client.get("/api/queries/fresh"))
    assert (page["latest_batch"], page["partitions"], page["query"]["status"]) == (
        None,
        [],
        "waiting",
    )
    series = ok(client.get("/api/queries/fresh/batches"))
    assert series["to_ms"] == NOW and series["series"]["time_ms"] == []


# Batches 0..10, one a second: batch i has i + 1 rows, lasts 100 + 10 i ms, drops i rows.
def write_second_batches(engine, query_id="ds", count=11):
    write_events(
        engine,
        [
            batch_event(
                query_id,
                i,
                T0 + i * 1_000,
                watermark_ms=T0 + i * 1_000 - 5_000,
                ends=(i + 1,),
                rows=i + 1,
                duration_ms=100 + 10 * i,
                dropped=i,
            )
            for i in range(count)
        ],
    )


def test_batches_are_downsampled_into_buckets(engine, client):
    write_second_batches(engine)
    body = ok(client.get(f"/api/queries/ds/batches?from={T0}&to={T0 + 10_000}&points=4"))
    assert (body["from_ms"], body["to_ms"], body["bucket_ms"]) == (T0, T0 + 10_000, 2_500)
    series = body["series"]
    # Buckets of 2.5 s: batches 0-2, 3-4, 5-7, 8-9; batch 10 is at `to`, outside the range.
    assert series["time_ms"] == [T0, T0 + 2_500, T0 + 5_000, T0 + 7_500]
    assert series["batches"] == [3, 2, 3, 2]
    assert (series["first_batch_id"], series["last_batch_id"]) == ([0, 3, 5, 8], [2, 4, 7, 9])
    assert series["watermark_ms"] == [T0 + t - 5_000 for t in (2_000, 4_000, 7_000, 9_000)]
    assert series["watermark_age_max_ms"] == [5_000] * 4
    assert series["duration_max_ms"] == [120, 140, 170, 190]
    assert series["duration_avg_ms"] == [110.0, 135.0, 160.0, 185.0]
    assert series["input_rows"] == [6, 9, 21, 19]
    assert series["rows_dropped_by_watermark"] == [3, 7, 18, 17]
    assert series["watermark_stalled"] == [False] * 4
    assert series["skew_max_ms"] == [None] * 4  # not instrumented


@pytest.mark.parametrize(("points", "buckets"), [(1, 1), (2, 2), (3, 3), (5_000, 10)])
def test_never_more_buckets_than_points(engine, client, points, buckets):
    write_second_batches(engine)
    url = f"/api/queries/ds/batches?from={T0}&to={T0 + 10_000}&points={points}"
    series = ok(client.get(url))["series"]
    assert len(series["time_ms"]) == buckets
    assert sum(series["batches"]) == 10 and sum(series["input_rows"]) == 55


def test_history_ends_after_the_latest_batch_by_default(engine, client):
    write_second_batches(engine)
    body = ok(client.get("/api/queries/ds/batches"))
    assert (body["from_ms"], body["to_ms"]) == (T0 + 10_001 - 3_600_000, T0 + 10_001)
    assert sum(body["series"]["batches"]) == 11


def test_times_may_be_iso_8601(engine, client):
    write_second_batches(engine)

    def series(start, end):
        return ok(client.get("/api/queries/ds/batches", query_string={"from": start, "to": end}))

    millis = series(T0, T0 + 10_000)
    assert series(stamp(T0), "2026-11-22T03:00:10+00:00") == millis
    assert series("2026-11-22T03:00:00", T0 + 10_000) == millis  # no zone: UTC
    assert series("2026-11-22T04:00:00+01:00", stamp(T0 + 10_000)) == millis


# Batches 0..6 a second apart; batch 0 comes before the range.
def write_partition_history(engine):
    events = []
    for i in range(7):
        late_1 = 2 if i in (2, 5) else 0
        events.append(
            batch_event(
                "ph",
                i,
                T0 + i * 1_000,
                ends=(10 * (i + 1), 5 * (i + 1)),
                latests=(10 * (i + 1) + i, 5 * (i + 1)),
                event_times={
                    0: (10, T0, T0 + i * 1_000, i % 2),
                    1: (1, T0 + 500, T0 + 500, late_1),
                },
            )
        )
    write_events(engine, events)


def test_partition_history_per_bucket(engine, client):
    write_partition_history(engine)
    url = f"/api/queries/ph/partitions/history?from={T0 + 1_000}&to={T0 + 7_000}&points=3"
    body = ok(client.get(url))
    assert body["bucket_ms"] == 2_000 and sorted(body["partitions"]) == ["t/0", "t/1"]
    assert body["resolution"] == "last_batch"
    t0, t1 = body["partitions"]["t/0"], body["partitions"]["t/1"]
    # Buckets: batches 1-2, 3-4, 5-6.
    assert t0["time_ms"] == t1["time_ms"] == [T0 + 1_000, T0 + 3_000, T0 + 5_000]
    assert t0["max_event_time_ms"] == [T0 + 2_000, T0 + 4_000, T0 + 6_000]
    assert t0["partition_watermark_ms"] == [T0 - 8_000, T0 - 6_000, T0 - 4_000]
    assert t0["late_records"] == [1, 1, 1]  # batches 1, 3 and 5
    assert t0["records"] == [20, 20, 20]
    assert t0["offset_lag"] == [2, 4, 6]
    assert t1["late_records"] == [2, 0, 2]  # batches 2 and 5
    assert t1["records"] == [10, 10, 10]
    assert t1["max_event_time_ms"] == [T0 + 500] * 3
    assert t1["time_lag_ms"] == [1_500, 3_500, 5_500]
    assert t1["offset_lag"] == [0, 0, 0] and t1["stalled"] == [False] * 3


def test_partition_history_of_a_long_range_is_read_from_the_minutes(engine, client):
    write_partition_history(engine)
    url = f"/api/queries/ph/partitions/history?from={T0 - DAY_MS}&to={T0 + DAY_MS}&points=2"
    body = ok(client.get(url))
    assert (body["bucket_ms"], body["resolution"]) == (DAY_MS, "minute")
    t0, t1 = body["partitions"]["t/0"], body["partitions"]["t/1"]
    assert t0["time_ms"] == t1["time_ms"] == [T0]
    assert (t0["late_records"], t1["late_records"]) == ([3], [4]), "every batch's, summed"
    assert (t0["offset_lag"], t0["max_event_time_ms"]) == ([6], [T0 + 6_000]), "the largest"


def test_partition_history_keeps_the_fields_asked_for(engine, client):
    write_partition_history(engine)
    url = f"/api/queries/ph/partitions/history?from={T0 + 1_000}&to={T0 + 7_000}&points=3"
    every = ok(client.get(url))["partitions"]
    asked = ok(client.get(f"{url}&fields=offset_lag,late_records"))["partitions"]
    assert sorted(asked) == sorted(every) == ["t/0", "t/1"]
    kept = ("time_ms", "offset_lag", "late_records")
    for name, series in asked.items():
        assert series == {key: every[name][key] for key in kept}


def test_the_first_bucket_of_a_query_counts_late_records_from_zero(engine, client):
    write_partition_history(engine)
    url = f"/api/queries/ph/partitions/history?from={T0}&to={T0 + 2_000}&points=1"
    t0 = ok(client.get(url))["partitions"]["t/0"]
    assert t0["late_records"] == [1]  # batches 0 and 1
    assert t0["records"] == [None]  # where batch 0 started reading is not known


def test_partition_history_of_an_empty_range(engine, client):
    write_partition_history(engine)
    url = f"/api/queries/ph/partitions/history?from={T0 - 9_000}&to={T0 - 1_000}"
    assert ok(client.get(url))["partitions"] == {}


def test_history_as_csv_one_line_per_batch_and_partition(engine, client):
    write_partition_history(engine)
    response = client.get(f"/api/queries/ph/history.csv?from={T0 + 1_000}&to={T0 + 3_000}")
    assert response.status_code == 200 and response.mimetype == "text/csv"
    assert "attachment" in response.headers["Content-Disposition"]
    lines = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    assert [(line["batch_id"], line["partition"]) for line in lines] == [
        ("1", "t/0"),
        ("1", "t/1"),
        ("2", "t/0"),
        ("2", "t/1"),
    ]
    first = lines[0]
    assert (first["batch_time_ms"], first["end_offset"], first["offset_lag"]) == (
        str(T0 + 1_000),
        "20",
        "1",
    )
    assert (first["late_records"], first["late_records_total"], first["stalled"]) == (
        "1",
        "1",
        "false",
    )


# A cutoff within a day: PostgreSQL's batches expire by whole days
# (tests/monitor/store/tiers/test_prune.py).
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_history_as_csv_before_the_batches_kept_is_read_from_the_rollups(engine, client):
    write_partition_history(engine)
    prune(engine, Cutoffs(T0 + 3_000, 0, 0))  # batches 0 to 2 go, the minute stays
    first_minute = T0 - T0 % 60_000
    url = f"/api/queries/ph/history.csv?from={first_minute}&to={T0 + 7_000}"

    response = client.get(url)
    assert response.status_code == 200
    assert response.headers["Content-Disposition"].endswith('-minutes.csv"')
    lines = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    assert [(line["start_ms"], line["partition"], line["batches"]) for line in lines] == [
        (str(first_minute), "t/0", "7"),
        (str(first_minute), "t/1", "7"),
    ]
    assert lines[1]["late_records"] == "4", "batches 2 and 5, the pruned one included"
    hours = client.get(f"{url}&resolution=hour").get_data(as_text=True).splitlines()
    assert hours[0].startswith("start_ms,partition,batches,") and len(hours) == 3

    refused = client.get(f"{url}&resolution=batch")
    assert refused.status_code == 400
    assert "ask for resolution=minute" in refused.get_json()["error"]
    assert client.get(f"{url}&resolution=second").status_code == 400
    recent = client.get(f"/api/queries/ph/history.csv?from={T0 + 3_000}&to={T0 + 7_000}")
    assert len(list(csv.DictReader(io.StringIO(recent.get_data(as_text=True))))) == 8


def test_timer_snapshots_oldest_first(engine, client):
    write_statuses(engine)
    snapshots = ok(client.get("/api/queries/healthy/timers"))["snapshots"]
    assert [(s["pending"], s["next_expiry_ms"]) for s in snapshots] == [
        (9, NOW - 1_000),
        (7, NOW + 60_000),
    ]
    assert ok(client.get("/api/queries/healthy/timers?limit=1"))["snapshots"] == snapshots[1:]


@pytest.mark.parametrize(
    ("path", "named"),
    [
        ("batches?from=yesterday", "from"),
        ("batches?to=1.5", "to"),
        (f"batches?from={T0}&to={T0}", "from"),
        (f"batches?from={T0 + 1}&to={T0}", "from"),
        ("batches?points=0", "points"),
        ("batches?points=5001", "points"),
        ("batches?points=many", "points"),
        ("partitions/history?from=x", "from"),
        ("partitions/history?points=-3", "points"),
        ("partitions/history?fields=offset_lag,lag", "fields"),
        ("partitions/history?fields=", "fields"),
        ("history.csv?to=soon", "to"),
        ("timers?limit=0", "limit"),
        ("timers?limit=ten", "limit"),
    ],
)
def test_bad_parameters_get_a_400_naming_them(engine, client, path, named):
    write_second_batches(engine, count=2)
    response = client.get(f"/api/queries/ds/{path}")
    assert response.status_code == 400
    assert named in response.get_json()["error"]


@pytest.mark.parametrize("path", ["", "/batches", "/partitions/history", "/history.csv", "/timers"])
def test_an_unknown_query_gets_a_404(client, path):
    response = client.get(f"/api/queries/nosuchquery{path}")
    assert response.status_code == 404
    assert "nosuchquery" in response.get_json()["error"]


def test_an_unmigrated_store_gets_a_503_saying_what_to_do(tmp_path):
    sqlite3.connect(tmp_path / "empty.db").close()
    app = create_app({"DATABASE_URL": f"sqlite:///{tmp_path / 'empty.db'}"})
    response = app.test_client().get("/api/queries")
    assert response.status_code == 503
    error = response.get_json()["error"]
    assert error.startswith("cannot use the store: no such table")
    assert error.endswith("(is the store migrated? run `wmon db upgrade`)")
    web.stop(app)


def test_a_missing_store_gets_a_503_and_is_not_created(tmp_path):
    path = tmp_path / "absent" / "wmon.db"
    app = create_app({"DATABASE_URL": f"sqlite:///{path}"})
    response = app.test_client().get("/api/queries")
    assert response.status_code == 503
    assert response.get_json()["error"] == (
        f"cannot use the store: no store at {path} "
        "(`wmon db upgrade` creates one, as does a job's listener)"
    )
    assert not path.parent.exists()
    web.stop(app)


def test_the_app_connects_on_the_first_request_not_before():
    app = create_app({"DATABASE_URL": f"postgresql://postgres@127.0.0.1:{closed_port()}/wmon"})
    response = app.test_client().get("/api/queries")
    assert response.status_code == 503 and "cannot use the store" in response.get_json()["error"]
    web.stop(app)


def test_spark_s_first_watermark_of_1970_is_no_watermark(client, engine):
    """Spark's placeholder is no watermark in the API and the scrape: no 1970, no age of 56
    years (the scrape once exported one, and the Grafana board drew it)."""
    doc = progress_doc(id="q0", runId="r0", batchId=0, timestamp=stamp(NOW - 1_000))
    doc["eventTime"] = {"watermark": "1970-01-01T00:00:00.000Z"}
    write_event(engine, parse_progress(doc))
    [entry] = ok(client.get("/api/queries"))["queries"]
    assert entry["watermark_ms"] is None and entry["watermark_age_ms"] is None
    series = ok(client.get(f"/api/queries/q0/batches?from={NOW - 60_000}&to={NOW}"))["series"]
    assert series["watermark_ms"] == [None] and series["watermark_age_max_ms"] == [None]
    scrape = client.get("/metrics").get_data(as_text=True)
    assert 'query_id="q0"} 0.0' in "\n".join(
        line for line in scrape.splitlines() if line.startswith("wmon_query_last_batch_id{")
    )
    ages = ("wmon_query_watermark_seconds{", "wmon_query_watermark_age_seconds{")
    assert not [line for line in scrape.splitlines() if line.startswith(ages)]


def test_wmon_partitions_json_is_the_api_s_partition_table(client, engine, database_url, capsys):
    """One partition, one shape: what the query page reads is what the command prints."""
    write_statuses(engine)
    table = ok(client.get("/api/queries/healthy"))["partitions"]
    assert main(["partitions", "healthy", "--json", "--database-url", database_url]) == 0
    assert json.loads(capsys.readouterr().out) == table
    assert {"idle", "stalled", "rewound", "topic", "late_records_window"} <= set(table[0])
