"""Two queries' interleaved events, as the group-write and rollup tests write them: starts,
instrumented batches a minute apart, a replayed batch, a restart from an older checkpoint, an
idle query, a timer snapshot, a failure."""

import json

from monitor.collect.progress import parse_progress
from monitor.events import QueryIdle, QueryStarted, QueryTerminated, TimerSnapshot
from tests.support.synthetic import synthetic_progress

A, B = "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000002"
T0 = 1_795_000_000_000
MINUTE = 60_000


def progress(query_id, run_id, batch_id, at_ms, *, unmeasured=(), start_back=0):
    """An instrumented batch of four partitions: partition 2 stalls from batch 2 on (its end
    offset stays while more arrives), partitions in `unmeasured` had no records; a restart
    from an older checkpoint starts `start_back` offsets back. Each measured partition has its
    lateness histograms."""
    doc = synthetic_progress(query_id, run_id, batch_id, 4, at_ms, instrumented=True)
    # Figures that differ from batch to batch, and a second state operator, for the rollups.
    doc["numInputRows"] = 4_000 + 7 * batch_id
    doc["durationMs"]["triggerExecution"] = 900 + 37 * batch_id
    doc["inputRowsPerSecond"], doc["processedRowsPerSecond"] = 1_000.0 + batch_id / 3, 2_000.5
    doc["stateOperators"].append(
        {"operatorName": "dedupe", "numRowsTotal": 100 * batch_id, "memoryUsedBytes": 4_096}
    )
    [source] = doc["sources"]
    if batch_id >= 2:
        source["startOffset"]["telemetry"]["2"] = source["endOffset"]["telemetry"]["2"] = 2002
    for offset in source["startOffset"]["telemetry"]:
        source["startOffset"]["telemetry"][offset] -= start_back
    [task] = doc["observedMetrics"]["wmon"]["tasks"]
    figures = json.loads(task)
    for name in unmeasured:
        del figures["partitions"][f"telemetry/{name}"]
    # Lateness histograms that differ from batch to batch and partition to partition.
    for number, measured in enumerate(figures["partitions"].values()):
        measured["late_buckets"] = {str(4 + batch_id % 3): 1 + number}
        measured["slack_buckets"] = {"3": 10 + batch_id, str(8 + number): 2}
    doc["observedMetrics"]["wmon"]["tasks"] = [json.dumps(figures)]
    return parse_progress(doc)


def events():
    """Two queries interleaved: starts, batches a minute apart, a replayed batch, a restart
    from an older checkpoint, an idle query, a timer snapshot, a failure."""
    written = [QueryStarted(A, "a1", "alpha", T0), QueryStarted(B, "b1", "beta", T0)]
    for batch_id in range(8):
        at_ms = T0 + batch_id * MINUTE
        quiet = ("3",) if 3 <= batch_id <= 5 else ()
        written.append(progress(A, "a1", batch_id, at_ms, unmeasured=quiet))
        if batch_id < 5:
            written.append(progress(B, "b1", batch_id, at_ms + 500))
    written += [
        progress(A, "a2", 7, T0 + 9 * MINUTE),  # the last batch again, after a restart
        progress(A, "a3", 4, T0 + 10 * MINUTE, start_back=1500),  # an older checkpoint
        progress(A, "a3", 5, T0 + 11 * MINUTE),
        QueryIdle(A, "a3", T0 + 12 * MINUTE),
        TimerSnapshot(A, "a3", T0 + 12 * MINUTE, T0, 7, T0 + 13 * MINUTE, 60_000, 2),
        QueryTerminated(B, "b1", T0 + 12 * MINUTE, "java.lang.IllegalStateException", "E1"),
        progress(A, "a3", 6, T0 + 13 * MINUTE, unmeasured=("0", "1")),
    ]
    return written
