"""Progress events shaped like Spark's, for the benchmarks that need many of them."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any


def synthetic_progress(
    query_id: str, run_id: str, batch_id: int, partitions: int, time_ms: int
) -> dict[str, Any]:
    """A progress document shaped like Spark's for a Kafka source with `partitions` partitions."""
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
        "observedMetrics": {},
    }


def progress_events(count: int, partitions: int) -> list[str]:
    """`count` listener events of one query, as JSON, one batch a second from now."""
    query_id, run_id, now_ms = str(uuid.uuid4()), str(uuid.uuid4()), int(time.time() * 1000)
    return [
        json.dumps(
            {
                "progress": synthetic_progress(
                    query_id, run_id, batch, partitions, now_ms + batch * 1000
                )
            }
        )
        for batch in range(count)
    ]
