"""The offline-scooter pipeline: the buffered processor is deterministic, the naive one is not."""

import json
from collections import defaultdict
from dataclasses import dataclass

import pytest

from monitor.collect.observed import partition_event_times
from monitor.collect.progress import parse_time_ms
from streaming.log import PartitionedLog
from streaming.scenarios import FAST, SLOW, Scenario, play
from streaming.scooters import (
    BufferedOfflineDetector,
    NaiveOfflineDetector,
    offline_periods,
    replay,
    scooter_pipeline,
)
from tests.support.spark_queries import records_read, unique_name

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


# Six hours of a backfill, 12 scooters in 3 partitions, one report per scooter every ~10 min,
# some silences over 30 minutes; partition 0 is read 1.5 times as fast as the others, so it
# runs up to two hours of event time ahead of them.
BACKFILL = dict(partitions=3, scooters=12, records=432, rate=0.02, trigger_seconds=1_200)
BACKFILL.update(fast_factor=1.5, max_disorder_ms=60_000)


@dataclass
class Outcome:
    """What one run of the pipeline gave: offline events, final watermark, progress."""

    events: set[tuple[str, str, int]]
    watermark: int
    progress: list[dict]

    @property
    def dropped_by_spark(self) -> int:
        """Spark's numRowsDroppedByWatermark over the run."""
        return sum(
            op["numRowsDroppedByWatermark"] for p in self.progress for op in p["stateOperators"]
        )

    def measured(self, field: str) -> dict[str, int]:
        """A figure of the instrumented operator summed per partition over the run."""
        totals: dict[str, int] = defaultdict(int)
        for p in self.progress:
            for times in partition_event_times(p["observedMetrics"]):
                totals[times.partition] += getattr(times, field)
        return dict(totals)


def run(spark, log_dir, tmp_path, processor, options, delay):
    """One availableNow run of the instrumented scooter pipeline into a memory table."""
    name = unique_name("scooters")
    checkpoint = str(tmp_path / name)
    pipeline = scooter_pipeline(
        spark, str(log_dir), checkpoint, processor, options=options, delay=delay
    )
    query = (
        pipeline.writeStream.queryName(name)
        .format("memory")
        .outputMode("append")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(300), "the query did not finish"
    rows = spark.sql(f"SELECT * FROM {name}").collect()
    return checkpoint, Outcome(
        {(r["scooter_id"], r["event"], r["event_time_ms"]) for r in rows},
        parse_time_ms(query.lastProgress["eventTime"]["watermark"]),
        [json.loads(p.json) for p in query.recentProgress],
    )


def scaled(scenario: Scenario, factor: int) -> dict[str, str]:
    """The scenario's read limits, `factor` times as many records per trigger."""
    caps = json.loads(scenario.options["maxOffsetsPerPartition"])
    return {"maxOffsetsPerPartition": json.dumps({p: n * factor for p, n in caps.items()})}


def reports(log, checkpoint, surviving_only=False):
    """Each scooter's report times that the query read (or only those not dropped as late)."""
    times = defaultdict(list)
    for _, _, record, late in records_read(log, checkpoint):
        if not (surviving_only and late):
            times[record.key].append(record.timestamp_ms)
    return times


@pytest.mark.spark
@pytest.mark.e2e
def test_on_a_skewed_backfill_the_buffered_output_is_the_same_for_any_batching(
    spark, rocksdb, log_dir, tmp_path
):
    log = PartitionedLog(log_dir)
    scenario = play("skewed_backfill", log, **BACKFILL)
    # A delay above the skew the backfill builds up: Spark drops nothing.
    delay = "150 minutes"
    buffered, naive = [], []
    # Two batchings that cut the backlog differently: 24 and 40 reports of a slow partition a
    # batch, several of each scooter's. The scenario's own caps, 8 a batch, would take three
    # times the batches, and every batch costs the same Python planning and RocksDB commit.
    for factor in (3, 5):
        options = scaled(scenario, factor)
        checkpoint, outcome = run(
            spark, log_dir, tmp_path, BufferedOfflineDetector(OFFLINE_AFTER), options, delay
        )
        assert outcome.dropped_by_spark == 0 == sum(outcome.measured("late_records").values())
        assert sum(outcome.measured("records").values()) == scenario.records
        buffered.append(outcome)
        naive.append(
            run(spark, log_dir, tmp_path, NaiveOfflineDetector(OFFLINE_AFTER), options, delay)[1]
        )
    [watermark] = {outcome.watermark for outcome in buffered}
    truth = offline_periods(reports(log, checkpoint), OFFLINE_AFTER, watermark)
    assert len(truth) > 10
    assert [outcome.events for outcome in buffered] == [truth, truth], "batching changed it"
    assert any(outcome.events != truth for outcome in naive), "the naive processor should err"


@pytest.mark.spark
@pytest.mark.e2e
def test_on_a_skewed_backfill_the_monitor_counts_every_report_spark_drops(
    spark, rocksdb, log_dir, tmp_path
):
    log = PartitionedLog(log_dir)
    scenario = play("skewed_backfill", log, **BACKFILL)
    # The pipeline's own 30-minute delay, far below the skew: the Bird failure. Twice the
    # scenario's caps, 16 reports of a slow partition a batch (40 minutes of its event time,
    # an hour of the fast one's), lose reports in every slow partition in half the batches.
    checkpoint, outcome = run(
        spark,
        log_dir,
        tmp_path,
        BufferedOfflineDetector(OFFLINE_AFTER),
        scaled(scenario, 2),
        "30 minutes",
    )
    late = outcome.measured("late_records")
    read = records_read(log, checkpoint)
    expected = defaultdict(int)
    for _, partition, _, is_late in read:
        expected[f"telemetry/{partition}"] += is_late
    assert late == dict(expected)
    assert sum(late.values()) == outcome.dropped_by_spark > 0
    lossy = {int(name.split("/")[1]) for name, count in late.items() if count}
    assert lossy == set(scenario.with_role(SLOW)) and not lossy & set(scenario.with_role(FAST))

    # What reached the processor gives exactly its output; the lost reports make it differ
    # from the truth of everything that was sent: scooters reported offline that were not.
    surviving = reports(log, checkpoint, surviving_only=True)
    assert outcome.events == offline_periods(surviving, OFFLINE_AFTER, outcome.watermark)
    everything = offline_periods(reports(log, checkpoint), OFFLINE_AFTER, outcome.watermark)
    assert outcome.events - everything, "the dropped reports should cause false offlines"
