"""A telemetry query whose watermark a future-dated record dragged 2 h ahead, for diagnosis."""

import json

from monitor.collect.progress import parse_progress
from monitor.store.write.writes import write_events
from tests.support.progress import progress_doc, stamp

QUERY, NAME = "telemetry-id", "telemetry"
T0 = 1_795_316_400_000  # 2026-11-22T03:00:00Z, the time of batch 0
STEP = 10_000  # a batch every 10 s
DELAY = 10_000
OFFSET_BASE = (1_000, 2_000, 8_650)  # telemetry/0, /1, /2 start there
FUTURE_KEY, FUTURE_OFFSET = "s-17", 8_812


def at(batch_id):
    """The batch time of a batch."""
    return T0 + batch_id * STEP


# The record telemetry/2 reads in batch 3, 2 h 0 min 30 s ahead of that batch. Batch 4's
# watermark is its event time less the delay; batch 5 has the same, 2 h ahead of its time.
FUTURE_MS = at(3) + 7_230_000
# Batch 4 of telemetry/2 has another future-dated record, 10 min ahead, below that one.
SECOND_FUTURE = ("s-21", at(4) + 600_000, 8_830)


def watermark(batch_id):
    """Spark's watermark: the largest event time read before the batch, less the delay."""
    if batch_id == 0:
        return None
    return (FUTURE_MS if batch_id >= 4 else at(batch_id - 1) - 1_000) - DELAY


def partition(p, batch_id, key):
    """What the operator measured of telemetry/p in a batch: 40 records a batch, on time with
    16-32 s of slack (bucket 15) in batches 2-4; ten, each some 2 h late (bucket 23), in
    batch 5 (the first judged by the future watermark); none measured in batches 0 and 1,
    which have no late watermark yet. telemetry/1 has one record 1-2 s late (bucket 11) in
    batch 3."""
    top = at(batch_id) - (1_000, 5_000, 3_000)[p]
    offset = OFFSET_BASE[p] + 41 * batch_id + 40
    figures = {
        "records": 40,
        "min_ms": at(batch_id) - 9_000,
        "max_ms": top,
        "late": 0,
        "samples": [],
        "max_record": [f"k{p}-{batch_id}", top, offset],
        "late_buckets": {},
        "slack_buckets": {"15": 40} if 2 <= batch_id <= 4 else {},
    }
    if batch_id == 5:
        figures |= {"records": 10, "late": 10, "late_buckets": {"23": 10}}
    if (p, batch_id) == (1, 3):
        figures |= {"records": 41, "late": 1, "late_buckets": {"11": 1}}
    if (p, batch_id) == (2, 3):
        future = [key, FUTURE_MS, FUTURE_OFFSET]
        figures |= future_figures(future, FUTURE_MS - at(3), {"15": 40, "23": 1})
    if (p, batch_id) == (2, 4):
        figures |= future_figures(list(SECOND_FUTURE), 600_000, {"15": 40, "20": 1})
    return figures


def future_figures(record, lead_ms, slack):
    """One future-dated record among a batch's 40 on-time ones: the batch's max."""
    return {
        "records": 41,
        "max_ms": record[1],
        "max_record": record,
        "future": 1,
        "future_lead_ms": lead_ms,
        "future_samples": [record],
        "slack_buckets": slack,
    }


def telemetry_batch(batch_id, key):
    """Batch `batch_id` of the telemetry query, three Kafka partitions, instrumented."""
    task = {
        "batch": batch_id,
        "delay_ms": DELAY,
        "late_watermark_ms": watermark(batch_id - 1) if batch_id else None,
        "partitions": {
            f"telemetry/{p}": partition(p, batch_id, key) for p in range(len(OFFSET_BASE))
        },
    }

    def offsets(batch):
        return {"telemetry": {str(p): base + 41 * batch for p, base in enumerate(OFFSET_BASE)}}

    doc = progress_doc(
        id=QUERY,
        runId="run-1",
        batchId=batch_id,
        timestamp=stamp(at(batch_id)),
        numInputRows=120,
        eventTime={} if batch_id == 0 else {"watermark": stamp(watermark(batch_id))},
        sources=[
            {
                "description": "KafkaV2[Subscribe[telemetry]]",
                "startOffset": offsets(batch_id),
                "endOffset": offsets(batch_id + 1),
                "latestOffset": offsets(batch_id + 1),
                "numInputRows": 120,
            }
        ],
        observedMetrics={"wmon": {"tasks": [json.dumps(task)]}},
    )
    doc["name"] = NAME
    return parse_progress(doc)


def write_telemetry(engine, key=FUTURE_KEY):
    """Batches 0-5 of the telemetry query, the future-dated record's key `key`."""
    write_events(engine, [telemetry_batch(i, key) for i in range(6)])
