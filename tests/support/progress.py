"""Progress documents and events: canned listener events, and batches built from them."""

import copy
import json
from datetime import datetime, timezone
from typing import Any

from monitor.collect.progress import parse_progress
from tests.support.paths import FIXTURES

TOPIC = "t"


def fixture(name: str) -> Any:
    """A JSON document from tests/fixtures/ (a fresh copy each call)."""
    return json.loads((FIXTURES / name).read_text())


def progress_doc(name: str = "progress_kafka.json", **changes: Any) -> dict[str, Any]:
    """The progress document of a fixture, with some top-level fields changed."""
    doc = copy.deepcopy(fixture(name)["progress"])
    doc.update(changes)
    return doc


def stamp(ms: int) -> str:
    """Epoch milliseconds as Spark writes times in progress events."""
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _offsets(values):
    return {TOPIC: {str(p): v for p, v in enumerate(values)}}


def _observed(batch_id, event_times, delay_ms, late_watermark_ms):
    """The instrumented operator's observation: `event_times` maps partition number to
    (records, min event ms, max event ms, late records[, samples[, more figures]]), the more
    figures a dict of the diagnosis ones (future-dated records, buckets, the max record)."""
    partitions = {
        f"{TOPIC}/{p}": {
            "records": figures[0],
            "min_ms": figures[1],
            "max_ms": figures[2],
            "late": figures[3],
            "samples": [list(s) for s in (figures[4] if len(figures) > 4 else [])],
        }
        | (figures[5] if len(figures) > 5 else {})
        for p, figures in event_times.items()
    }
    task = {
        "batch": batch_id,
        "delay_ms": delay_ms,
        "late_watermark_ms": late_watermark_ms,
        "partitions": partitions,
    }
    return {"wmon": {"tasks": [json.dumps(task)]}}


def batch_event(
    query_id,
    batch_id,
    at_ms,
    *,
    name=None,
    run_id="run-1",
    watermark_ms=None,
    starts=None,
    ends=(10, 10),
    latests=None,
    rows=None,
    rate=None,
    duration_ms=100,
    dropped=None,
    event_times=None,
    delay_ms=10_000,
    late_watermark_ms=None,
):
    """A BatchProgress of a query reading topic `t`: offsets per partition, the watermark,
    the trigger duration, rows dropped by one stateful operator and, if given, the
    instrumented operator's per-partition event times."""
    doc = progress_doc(
        id=query_id,
        runId=run_id,
        batchId=batch_id,
        timestamp=stamp(at_ms),
        numInputRows=rows,
        inputRowsPerSecond=rate,
        durationMs={"triggerExecution": duration_ms},
        eventTime={} if watermark_ms is None else {"watermark": stamp(watermark_ms)},
        stateOperators=[]
        if dropped is None
        else [{"operatorName": "dedupe", "numRowsDroppedByWatermark": dropped}],
        sources=[
            {
                "description": f"KafkaV2[Subscribe[{TOPIC}]]",
                "startOffset": None if starts is None else _offsets(starts),
                "endOffset": _offsets(ends),
                "latestOffset": _offsets(latests if latests is not None else ends),
            }
        ],
        observedMetrics={}
        if event_times is None
        else _observed(batch_id, event_times, delay_ms, late_watermark_ms),
    )
    doc["name"] = name  # progress_doc's own `name` is the fixture's
    return parse_progress(doc)
