"""Progress documents and events: canned listener events, and batches built from them."""

import copy
import json
from datetime import datetime, timezone
from typing import Any

from monitor.collect.progress import parse_progress, parse_time_ms
from monitor.collect.spark_events import PROGRESS, named
from monitor.health.predicates import Timeouts
from monitor.store.write.writes import write_event
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


def fixture_progress(query_id=None, batch_id=0, run_id=None, **changes):
    """The fixture's progress document as batch `batch_id` of `query_id` if given, by `run_id`
    (by default the query id with its first "0000" as "1111"), with some top-level fields
    changed."""
    ids = {"batchId": batch_id}
    if query_id is not None:
        ids |= {"id": query_id, "runId": run_id or query_id.replace("0000", "1111", 1)}
    elif run_id is not None:
        ids["runId"] = run_id
    return progress_doc() | ids | changes  # not progress_doc(**changes): its `name` is a file


def progress_event(query_id=None, batch_id=0, run_id=None, **changes):
    """fixture_progress's document as a listener posts it (a named event)."""
    return named(PROGRESS, {"progress": fixture_progress(query_id, batch_id, run_id, **changes)})


def fleet_event(n, batch_id=0):
    """Batch `batch_id` of the `n`-th query of a fleet (id 0000000n-0000-…) as a listener posts
    it."""
    return progress_event(f"{n:08d}-0000-0000-0000-000000000000", batch_id)


def fixture_batch(query_id=None, batch_id=0, run_id=None, **changes):
    """fixture_progress's document as a BatchProgress."""
    return parse_progress(fixture_progress(query_id, batch_id, run_id, **changes))


def stored_watermark(reported: dict[str, Any]) -> int | None:
    """The watermark of one of Spark's progress documents as the store keeps it: its "no
    watermark yet" (1970) is none."""
    return parse_time_ms(reported["eventTime"]["watermark"]) or None


def stamp(ms: int) -> str:
    """Epoch milliseconds as Spark writes times in progress events."""
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _offsets(values, topic=TOPIC):
    return {topic: {str(p): v for p, v in enumerate(values)}}


def operator_observation(batch_id, partitions, delay_ms, late_watermark_ms, silent_tasks=0):
    """The instrumented operator's observed metric: one task's figures for `partitions` (a
    partition's name to its figures), and a null for each of `silent_tasks` tasks that
    measured nothing."""
    task = {
        "batch": batch_id,
        "delay_ms": delay_ms,
        "late_watermark_ms": late_watermark_ms,
        "partitions": partitions,
    }
    return {"wmon": {"tasks": [json.dumps(task), *[None] * silent_tasks]}}


def _observed(batch_id, event_times, delay_ms, late_watermark_ms, topic=TOPIC):
    """The instrumented operator's observation: `event_times` maps partition number to
    (records, min event ms, max event ms, late records[, samples[, more figures]]), the more
    figures a dict of the diagnosis ones (future-dated records, buckets, the max record)."""
    partitions = {
        f"{topic}/{p}": {
            "records": figures[0],
            "min_ms": figures[1],
            "max_ms": figures[2],
            "late": figures[3],
            "samples": [list(s) for s in (figures[4] if len(figures) > 4 else [])],
        }
        | (figures[5] if len(figures) > 5 else {})
        for p, figures in event_times.items()
    }
    return operator_observation(batch_id, partitions, delay_ms, late_watermark_ms)


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
    stages=None,
    dropped=None,
    event_times=None,
    delay_ms=10_000,
    late_watermark_ms=None,
    topic=TOPIC,
):
    """A BatchProgress of a query reading `topic` (`t`): offsets per partition, the watermark,
    the trigger duration (and its `stages`' durations), rows dropped by one stateful operator
    and, if given, the instrumented operator's per-partition event times."""
    doc = progress_doc(
        id=query_id,
        runId=run_id,
        batchId=batch_id,
        timestamp=stamp(at_ms),
        numInputRows=rows,
        inputRowsPerSecond=rate,
        durationMs={"triggerExecution": duration_ms, **(stages or {})},
        eventTime={} if watermark_ms is None else {"watermark": stamp(watermark_ms)},
        stateOperators=[]
        if dropped is None
        else [{"operatorName": "dedupe", "numRowsDroppedByWatermark": dropped}],
        sources=[
            {
                "description": f"KafkaV2[Subscribe[{topic}]]",
                "startOffset": None if starts is None else _offsets(starts, topic),
                "endOffset": _offsets(ends, topic),
                "latestOffset": _offsets(latests if latests is not None else ends, topic),
            }
        ],
        observedMetrics={}
        if event_times is None
        else _observed(batch_id, event_times, delay_ms, late_watermark_ms, topic),
    )
    doc["name"] = name  # progress_doc's own `name` is the fixture's
    return parse_progress(doc)


# The query, the health timeouts and the epoch of `write`'s batches.
QUERY = "33333333-3333-3333-3333-333333333333"
T = Timeouts(idle_ms=10_000, stall_ms=20_000)
EPOCH = 1_700_000_000_000


def write(
    engine,
    batch_id,
    at_s,
    ends,
    latests,
    watermark_s=0,
    rows=10,
    event_max=None,
    starts=None,
    epoch=EPOCH,
    run="r",
):
    """A batch at `at_s` seconds after `epoch` with per-partition start/end/latest offsets of
    topic t, reported by `run`."""
    at = epoch + at_s * 1000
    partitions = {
        f"t/{p}": {"records": 1, "min_ms": m, "max_ms": m, "late": 0, "samples": []}
        for p, m in (event_max or {}).items()
    }
    observed = operator_observation(batch_id, partitions, 1_000, None) if event_max else {}
    doc = progress_doc(
        id=QUERY,
        runId=run,
        batchId=batch_id,
        timestamp=stamp(at),
        numInputRows=rows,
        eventTime={"watermark": stamp(epoch + watermark_s * 1000)},
        sources=[
            {
                "description": "KafkaV2[Subscribe[t]]",
                "startOffset": starts and {"t": {str(p): s for p, s in enumerate(starts)}},
                "endOffset": {"t": {str(p): e for p, e in enumerate(ends)}},
                "latestOffset": {"t": {str(p): v for p, v in enumerate(latests)}},
            }
        ],
        observedMetrics=observed,
    )
    write_event(engine, parse_progress(doc), T)


def write_state_batch(engine, batch_id, watermark_s, operators, epoch=EPOCH):
    """Batch `batch_id` of QUERY, 10 s after the one before, 10 input rows, its watermark at
    `watermark_s` and its stateful operators as (name, numRowsTotal, numRowsUpdated, custom
    metrics), their memory 1,000 bytes more than their rows."""
    doc = progress_doc(
        id=QUERY,
        runId="r",
        batchId=batch_id,
        timestamp=stamp(epoch + batch_id * 10_000),
        numInputRows=10,
        eventTime={"watermark": stamp(epoch + watermark_s * 1000)},
        stateOperators=[
            {
                "operatorName": name,
                "numRowsTotal": total,
                "numRowsUpdated": updated,
                "numRowsRemoved": 0,
                "memoryUsedBytes": 1_000 + total,
                "customMetrics": custom,
            }
            for name, total, updated, custom in operators
        ],
    )
    write_event(engine, parse_progress(doc), T)
