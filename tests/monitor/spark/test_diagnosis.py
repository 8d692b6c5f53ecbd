"""Diagnosis on real Spark: who drove the watermark, future-dated records and how late or close
each record was, from both operators, against what the data and the offset log say.

One record two hours ahead of the clock (partition 2, offset 20, read in batch 1) drags Spark's
watermark two hours ahead: batch 2's watermark, which batch 3 drops late records by, and every
record from there on is late.
"""

import dataclasses
import json
import math
import os
import time
from collections import Counter

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.collect.progress import parse_progress
from monitor.health.lateness import SHARES, bucket, bucket_bounds
from monitor.spark.instrument import instrument
from monitor.spark.measuring import NO_WATERMARK_MS
from monitor.store.read.drop_causes import lateness
from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import upgrade
from monitor.store.schema.models import Batch
from monitor.store.write.writes import write_events
from streaming.log import LogRecord
from streaming.partitioned_log import PartitionedLog
from tests.support.spark_queries import records_read, unique_name

pytestmark = pytest.mark.spark
WAIT = 120
DELAY_MS = 5_000
TOLERANCE_MS = 300_000  # WMON_FUTURE_TOLERANCE's default: five minutes
RECORDS = 90
FUTURE = (2, 20)  # the partition and offset of the record two hours ahead
TWO_HOURS_MS = 7_200_000


@pytest.fixture(scope="module")
def future_log(tmp_path_factory):
    """Three partitions of 'telemetry' ten minutes behind the clock, a record every second
    (partition 1: every half second), and the record two hours ahead of the clock."""
    start = time.time_ns() // 1_000_000 - 600_000
    log = PartitionedLog(tmp_path_factory.mktemp("log"))
    for partition, spacing in {0: 1_000, 1: 500, 2: 1_000}.items():
        records = [
            LogRecord(
                f"s-{partition}-{i}",
                "{}",
                start + 600_000 + TWO_HOURS_MS if (partition, i) == FUTURE else start + i * spacing,
            )
            for i in range(RECORDS)
        ]
        log.append("telemetry", partition, records)
    return log


def run(spark, log, checkpoint, operator):
    """The query's progress events, parsed, with the figures measured by `operator`."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("WMON_OPERATOR", operator)
        return _run(spark, log, checkpoint)


def _run(spark, log, checkpoint):
    source = (
        spark.readStream.format("partitioned_log")
        .option("path", str(log.root))
        .option("subscribe", "telemetry")
        .option("maxOffsetsPerTrigger", 45)
        .load()
    )
    measured = instrument(source, checkpoint=checkpoint, delay="5 seconds")
    query = (
        measured.withWatermark("timestamp", "5 seconds")
        .dropDuplicates(["timestamp", "partition"])
        .writeStream.queryName(unique_name("future-"))
        .format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(WAIT), "the query did not finish"
    return [parse_progress(json.loads(progress.json)) for progress in query.recentProgress]


def offset_metadata(checkpoint):
    """Per batch: the watermark written before it ran, and its processing time."""
    metadata = {}
    for name in os.listdir(os.path.join(checkpoint, "offsets")):
        if name.isdigit():
            with open(os.path.join(checkpoint, "offsets", name)) as entry:
                line = json.loads(entry.read().splitlines()[1])
            metadata[int(name)] = (line["batchWatermarkMs"], line["batchTimestampMs"])
    return metadata


def from_data(log, checkpoint):
    """What the records the query read say, per (batch, partition): the keys of the
    future-dated ones and their largest lead, and the counts of late and on-time ones by
    bucket, of the batches judged by a watermark (not batch 0, which has none, nor batch 1,
    judged by Spark's 1970 placeholder)."""
    metadata = offset_metadata(checkpoint)
    assert metadata[0][0] == NO_WATERMARK_MS, "batch 1 is judged by the placeholder"
    future, late, slack = {}, Counter(), Counter()
    for batch_id, partition, record, is_late in records_read(log, checkpoint):
        name = f"telemetry/{partition}"
        lead = record.timestamp_ms - metadata[batch_id][1]
        if lead > TOLERANCE_MS:
            keys, largest = future.get((batch_id, name), ([], lead))
            future[(batch_id, name)] = ([*keys, record.key], max(largest, lead))
        if batch_id == 0 or metadata[batch_id - 1][0] == NO_WATERMARK_MS:
            continue
        margin = record.timestamp_ms - metadata[batch_id - 1][0]
        counts, distance = (late, -margin) if is_late else (slack, margin)
        counts[(batch_id, name, str(bucket(distance)))] += 1
    return future, late, slack


def measured_from(figures):
    """The same, as the operator measured it."""
    future = {
        key: ([sample[0] for sample in times.future_samples], times.future_lead_ms)
        for key, times in figures.items()
        if times.future_records
    }
    late, slack = Counter(), Counter()
    for (batch_id, name), times in figures.items():
        late.update({(batch_id, name, n): c for n, c in times.late_buckets.items()})
        slack.update({(batch_id, name, n): c for n, c in times.slack_buckets.items()})
    return future, late, slack


def figures_of(events):
    return {(e.batch_id, t.partition): t for e in events for t in e.event_times}


def without_leads(figures):
    """The figures but the largest leads, which depend on when each run's batches ran."""
    return {key: dataclasses.replace(t, future_lead_ms=None) for key, t in figures.items()}


@pytest.fixture(scope="module")
def measured(spark, future_log, tmp_path_factory):
    """Both operators' events over the same batches, by operator, and their checkpoints."""
    folder = tmp_path_factory.mktemp("checkpoints")
    checkpoints = {operator: str(folder / operator) for operator in ("jvm", "python")}
    events = {
        operator: run(spark, future_log, checkpoint, operator)
        for operator, checkpoint in checkpoints.items()
    }
    return events, checkpoints


def test_both_operators_measure_the_future_dated_records_and_lateness_the_data_shows(
    measured, future_log
):
    events, checkpoints = measured
    figures = {operator: figures_of(events[operator]) for operator in events}
    assert without_leads(figures["jvm"]) == without_leads(figures["python"])
    for operator, checkpoint in checkpoints.items():
        assert measured_from(figures[operator]) == from_data(future_log, checkpoint)
    [(key, (keys, lead))] = measured_from(figures["python"])[0].items()
    times = figures["python"][key]
    culprit = f"s-{FUTURE[0]}-{FUTURE[1]}"
    assert (key, keys, times.future_records) == ((1, "telemetry/2"), [culprit], 1)
    assert times.future_samples == ((culprit, times.max_event_ms, FUTURE[1]),)
    assert times.max_record == times.future_samples[0]
    # Two hours ahead of the clock when the log was written, a little less when it was read.
    assert TWO_HOURS_MS - WAIT * 1_000 < lead <= TWO_HOURS_MS
    late = measured_from(figures["python"])[1]
    assert sum(late.values()) >= 3 * 45  # batches 3 to 5 dropped everything they read


def stored(events, tmp_path):
    """A SQLite store holding the events."""
    engine = create_engine(f"sqlite:///{tmp_path / 'wmon.db'}")
    upgrade(engine)
    write_events(engine, events)
    return engine


def test_the_watermark_driver_is_the_partition_whose_record_set_sparks_watermark(
    measured, future_log, tmp_path
):
    events, checkpoints = measured
    checkpoint = checkpoints["python"]
    engine = stored(events["python"], tmp_path)
    with so.Session(engine) as session:
        batches = session.execute(
            sa.select(
                Batch.batch_id,
                Batch.watermark_ms,
                Batch.watermark_driver_partition,
                Batch.watermark_driver_record,
            ).order_by(Batch.batch_id)
        ).all()
    engine.dispose()
    # Independently: the record with the largest event time read before each batch.
    newest, before = None, {}
    for batch_id, partition, record, _ in sorted(
        records_read(future_log, checkpoint), key=lambda read: read[0]
    ):
        before.setdefault(batch_id, newest)
        if newest is None or record.timestamp_ms > newest[1].timestamp_ms:
            newest = (f"telemetry/{partition}", record)
    driven = 0
    for batch_id, watermark_ms, partition, record in batches:
        expected = before.get(batch_id, newest)
        if expected is None:
            assert (partition, record) == (None, None)
            continue
        offset = int(expected[1].key.rsplit("-", 1)[1])  # keys are s-{partition}-{offset}
        assert (partition, record) == (
            expected[0],
            [expected[1].key, expected[1].timestamp_ms, offset],
        )
        assert record[1] - DELAY_MS == watermark_ms  # what Spark itself reported
        driven += partition == "telemetry/2"
    assert driven >= 2, "the future record drove the watermark from the batch after it"


def test_the_advisor_names_the_delays_the_data_needs(measured, future_log, tmp_path):
    """Each record measured against a watermark needs a delay of delay + 1 - (t - W): the
    advisor answers with the bucket bound that needs more, never less than the exact one."""
    events, checkpoints = measured
    engine = stored(events["python"], tmp_path)
    with so.Session(engine) as session:
        [whole, *partitions] = lateness(session, events["python"][0].query_id)
    engine.dispose()
    watermarks = {b: w for b, (w, _) in offset_metadata(checkpoints["python"]).items()}
    exact, bounded = [], []
    for batch_id, _, record, _ in records_read(future_log, checkpoints["python"]):
        if batch_id == 0 or watermarks[batch_id - 1] == NO_WATERMARK_MS:
            continue
        margin = record.timestamp_ms - watermarks[batch_id - 1]
        exact.append(max(DELAY_MS + 1 - margin, 0))
        low, high = bucket_bounds(bucket(abs(margin)))
        bounded.append(DELAY_MS + 1 + high if margin <= 0 else max(DELAY_MS + 1 - low, 0))
    exact.sort()
    bounded.sort()
    assert (whole.records, whole.delay_ms) == (len(exact), DELAY_MS)
    assert [p.partition for p in partitions] == [f"telemetry/{p}" for p in range(3)]
    for share in SHARES:
        nth = math.ceil(round(share * len(exact), 6)) - 1
        assert exact[nth] <= whole.smallest_delay(share) == bounded[nth]
    # Keeping everything would have taken a delay over two hours: the future record's doing.
    assert whole.smallest_delay(1.0) > TWO_HOURS_MS - WAIT * 1_000
