"""The offline-scooter pipeline: the buffered processor is deterministic, the naive one is not."""

import json

import pytest

from monitor.observed import partition_event_times
from monitor.progress import parse_time_ms
from streaming.log import LogRecord, PartitionedLog
from streaming.scooters import (
    BufferedOfflineDetector,
    NaiveOfflineDetector,
    offline_periods,
    replay,
    scooter_pipeline,
)
from tests.helpers import unique_name

START_MS = 1_700_000_000_000
MINUTE = 60_000
OFFLINE_AFTER = 30 * MINUTE


@pytest.mark.parametrize(
    "reports, now, last_seen, offline, events, after",
    [
        ([10, 20], 25, None, False, [], (20, False)),
        ([10, 50], 55, None, False, [("offline", 10), ("online", 50)], (50, False)),
        ([10], 45, None, False, [("offline", 10)], (10, True)),
        ([], 45, 10, False, [("offline", 10)], (10, True)),
        ([], 60, 10, True, [], (10, True)),
        ([70], 75, 10, True, [("online", 70)], (70, False)),
        ([], 20, 30, False, [], (30, False)),
    ],
    ids=[
        "steady",
        "gap-between-reports",
        "silent-until-now",
        "timer-only",
        "already-offline",
        "back-online",
        "timer-older-than-last-report",
    ],
)
def test_replay(reports, now, last_seen, offline, events, after):
    assert replay(reports, now, last_seen, offline, 30) == (events, *after)


def scooter_reports():
    """Six scooters reporting every minute for three hours, some with 40-minute silences."""
    reports = {}
    for k in range(6):
        minutes = range(180)
        if k in (0, 2, 4):
            minutes = [m for m in minutes if not 30 + 20 * k <= m < 70 + 20 * k]
        if k == 5:
            minutes = [m for m in minutes if m < 100]
        reports[f"scooter-{k}"] = [START_MS + m * MINUTE + k * 1_000 for m in minutes]
    return reports


def run(spark, log_dir, tmp_path, processor, limit):
    """Offline events of one run, and the final watermark."""
    name = unique_name("scooters")
    checkpoint = str(tmp_path / name)
    query = (
        scooter_pipeline(spark, str(log_dir), checkpoint, processor, max_offsets=limit)
        .writeStream.queryName(name)
        .format("memory")
        .outputMode("append")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(300), "the query did not finish"
    dropped = sum(
        op["numRowsDroppedByWatermark"] for p in query.recentProgress for op in p["stateOperators"]
    )
    assert dropped == 0, "the test data must have no late records"
    measured = sum(
        times.records
        for p in query.recentProgress
        for times in partition_event_times(json.loads(p.json)["observedMetrics"])
    )
    assert measured == sum(len(times) for times in scooter_reports().values())
    rows = spark.sql(f"SELECT * FROM {name}").collect()
    watermark = parse_time_ms(query.lastProgress["eventTime"]["watermark"])
    return {(r["scooter_id"], r["event"], r["event_time_ms"]) for r in rows}, watermark


@pytest.mark.spark
@pytest.mark.e2e
def test_buffered_output_is_the_same_for_any_batching_and_equals_the_truth(
    spark, rocksdb, log_dir, tmp_path
):
    reports = scooter_reports()
    log = PartitionedLog(log_dir)
    for partition, scooters in ((0, range(3)), (1, range(3, 6))):
        times = sorted((t, f"scooter-{k}") for k in scooters for t in reports[f"scooter-{k}"])
        log.append("telemetry", partition, [LogRecord(key, "{}", t) for t, key in times])

    buffered, naive, watermarks = [], [], set()
    for limit in (100, 400, 1_200):
        events, watermark = run(
            spark, log_dir, tmp_path, BufferedOfflineDetector(OFFLINE_AFTER), limit
        )
        buffered.append(events)
        watermarks.add(watermark)
        naive.append(run(spark, log_dir, tmp_path, NaiveOfflineDetector(OFFLINE_AFTER), limit)[0])
    [watermark] = watermarks
    truth = offline_periods(reports, OFFLINE_AFTER, watermark)
    assert {("scooter-0", "offline", START_MS + 29 * MINUTE)} <= truth
    assert buffered == [truth] * 3, "the buffered processor must not depend on batching"
    assert any(events != truth for events in naive), "the naive processor should miss some"
