"""Spark event logs in the ingest tests: the codecs written; a log's lines read and summed up."""

import json
from pathlib import Path

from monitor.ingest.logfiles import LogFile, discover
from monitor.ingest.reader import LogReader

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
