"""Spark event logs in the ingest tests: the codecs written; a log's lines read and summed up;
a query's run written as Spark logs it, without Spark."""

import json
from pathlib import Path

from monitor.collect.spark_events import (
    PROGRESS,
    STARTED,
    STREAMING_EVENT,
    TERMINATED,
    named,
    timestamp_text,
)
from monitor.ingest.logfiles import LogFile, discover
from monitor.ingest.reader import LogReader
from tests.support.progress import progress_doc

# The variants tests/jobs/write_event_logs.py writes, by codec; "plain" is
# spark.eventLog.compress=false.
CODEC_VARIANTS = {"zstd": "zstd", "lz4": "lz4", "snappy": "snappy", "plain": None}


def only_file(url: str | Path) -> LogFile:
    """The one log file of the one application at a URL."""
    (application,) = discover(str(url))
    (file,) = application.files
    return file


def read_all(file: LogFile, **options) -> list[str]:
    """Every line of a file, in one reader."""
    return [line.text for line in LogReader(file, **options).read()]


def summary(texts: list[str]) -> list[tuple[str, int | None]]:
    """Each line as its event kind (and a progress event's batch id): what a run repeats."""
    events = []
    for text in texts:
        event = json.loads(text)
        kind = event["Event"].rsplit(".", 1)[-1]
        events.append((kind, event.get("progress", {}).get("batchId")))
    return events


# The first line of every log Spark writes (of every rolled file too): the same in all of them.
LOG_START = '{"Event":"SparkListenerLogStart","Spark Version":"4.3.0"}\n'


def query_run(query_id, run_id, batch_ids, at_ms, *, name="orders", ended=False) -> str:
    """One run of a streaming query as Spark logs it: started at `at_ms`, then a progress event
    a second apart for each batch id, then (if `ended`) terminated."""
    started = {"id": query_id, "runId": run_id, "name": name, "timestamp": timestamp_text(at_ms)}
    events = [named(STARTED, started)]
    for number, batch_id in enumerate(batch_ids, 1):
        moment = timestamp_text(at_ms + 1_000 * number)
        doc = progress_doc(id=query_id, runId=run_id, batchId=batch_id, timestamp=moment)
        doc["name"] = name  # progress_doc's own `name` is the fixture's
        events.append({"Event": STREAMING_EVENT + PROGRESS, "progress": doc})
    if ended:
        events.append(named(TERMINATED, {"id": query_id, "runId": run_id, "exception": None}))
    return "".join(json.dumps(event, separators=(",", ":")) + "\n" for event in events)
