"""Progress documents shaped like Spark's for a Kafka source of many partitions, for the
benchmarks and the tests that need many of them."""

from __future__ import annotations

import json
import time
from typing import Any

RECORDS = 1000


def _slack(batch_id: int, p: int, on_time: int) -> dict[str, int]:
    """How far ahead of the late watermark a partition's on-time records were, by log-scale
    bucket (health.lateness): 0.5 to 16 s, five buckets whose counts vary from batch to
    batch and partition to partition."""
    counts = [100 + (batch_id * 7 + p * 13 + n * 29) % 97 for n in range(4)]
    return {str(10 + n): count for n, count in enumerate([*counts, on_time - sum(counts)])}


def measured(batch_id: int, partitions: int, time_ms: int) -> dict[str, Any]:
    """The instrumented operator's observed metric for one batch: every partition of topic
    `telemetry` measured, named as the source names it, some records late, with samples and
    the lateness histograms."""
    figures = {
        f"telemetry/{p}": {
            "records": RECORDS,
            "min_ms": time_ms - 5_000 - p,
            "max_ms": time_ms - 500 + p,
            "late": p % 3,
            "samples": [[f"k{p}", time_ms - 20_000, 1000 * batch_id + p]] if p % 3 else [],
            "late_buckets": {"14": p % 3} if p % 3 else {},
            "slack_buckets": _slack(batch_id, p, RECORDS - p % 3),
        }
        for p in range(partitions)
    }
    task = {
        "batch": batch_id,
        "delay_ms": 10_000,
        "late_watermark_ms": time_ms - 11_000 if batch_id else None,
        "partitions": figures,
    }
    return {"wmon": {"tasks": [json.dumps(task, separators=(",", ":"))]}}


def synthetic_progress(
    query_id: str,
    run_id: str,
    batch_id: int,
    partitions: int,
    time_ms: int,
    instrumented: bool = False,
) -> dict[str, Any]:
    """A progress document shaped like Spark's for a Kafka source with `partitions` partitions,
    with the instrumented operator's figures if `instrumented`."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time_ms / 1000))
    end = {str(p): 1000 * (batch_id + 1) + p for p in range(partitions)}
    return {
        "id": query_id,
        "runId": run_id,
        "name": "bench",
        "timestamp": f"{stamp}.000Z",
        "batchId": batch_id,
        "numInputRows": 1000 * partitions,
        "inputRowsPerSecond": 1000.0,
        "processedRowsPerSecond": 2000.0,
        "durationMs": {"addBatch": 700, "latestOffset": 3, "triggerExecution": 900},
        "eventTime": {
            "min": f"{stamp}.000Z",
            "max": f"{stamp}.500Z",
            "avg": f"{stamp}.250Z",
            "watermark": f"{stamp}.000Z",
        },
        "stateOperators": [
            {
                "operatorName": "stateStoreSave",
                "numRowsTotal": 10,
                "numRowsDroppedByWatermark": 1,
                "memoryUsedBytes": 2048,
                "customMetrics": {},
            }
        ],
        "sources": [
            {
                "description": "KafkaV2[Subscribe[telemetry]]",
                "startOffset": {"telemetry": {p: v - 1000 for p, v in end.items()}},
                "endOffset": {"telemetry": end},
                "latestOffset": {"telemetry": {p: v + 50 for p, v in end.items()}},
                "numInputRows": 1000 * partitions,
            }
        ],
        "sink": {"description": "NoopTable"},
        "observedMetrics": measured(batch_id, partitions, time_ms) if instrumented else {},
    }

