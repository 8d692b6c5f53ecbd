"""Spark jobs run by spark-submit in tests, and what their driver and event logs say of them."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from monitor.ingest.logfiles import discover
from monitor.ingest.reader import LogReader

STREAMING_EVENT = "org.apache.spark.sql.streaming.StreamingQueryListener$"
# Spark's ProgressReporter.updateProgress adds each progress to `query.recentProgress`, posts it
# to the listener bus (which the event log listens to), and only then logs it, as pretty JSON.
PROGRESS_LOGGED = "Streaming query made progress: "


def job_env(**extra: str) -> dict[str, str]:
    """This environment for a job: this Python for PySpark, a local driver, no WMON_ settings
    from the machine, and `extra`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("WMON_")}
    env.update(PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    return {**env, **extra}


def start(command: list[str], output: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`command` in a session of its own, stdout to `output`.out and stderr to `output`.err."""
    with open(f"{output}.out", "wb") as out, open(f"{output}.err", "wb") as err:
        return subprocess.Popen(command, stdout=out, stderr=err, env=env, start_new_session=True)


def end(process: subprocess.Popen[bytes]) -> None:
    """Stop a process started by `start` and all it started: SIGTERM, SIGKILL to whatever of
    its session is left after 30 s (a PySpark driver can outlive its JVM)."""
    _signal_session(process, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
    _signal_session(process, signal.SIGKILL)
    process.wait()


def _signal_session(process: subprocess.Popen[bytes], sent: signal.Signals) -> None:
    try:
        os.killpg(process.pid, sent)
    except ProcessLookupError:
        pass


def tail(path: Path, size: int = 3000) -> str:
    """The end of a job's output file, for an assertion message."""
    return path.read_text(errors="replace")[-size:] if path.exists() else f"(no {path})"


def logged_progress(stderr: Path) -> list[dict[str, Any]]:
    """Every progress the driver's log has printed in full so far, in order."""
    text = stderr.read_text(errors="replace")
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    at = text.find(PROGRESS_LOGGED)
    while at != -1:
        try:
            progress, after = decoder.raw_decode(text, at + len(PROGRESS_LOGGED))
        except json.JSONDecodeError:  # still being written
            break
        found.append(progress)
        at = text.find(PROGRESS_LOGGED, after)
    return found


def event_log(directory: Path) -> tuple[str, list[dict[str, Any]]]:
    """The one finished application's id in an event log directory, and all its events."""
    [application] = discover(str(directory))
    assert not application.in_progress, f"{application.url} is still being written"
    events = []
    for file in application.files:
        reader = LogReader(file)
        while lines := reader.read():
            events += [json.loads(line.text) for line in lines]
        assert reader.done, f"{file.url} was not read to its end"
    return application.app_id, events


def streaming_events(events: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The streaming query events among Spark's events: (kind, event), kind as
    "QueryProgressEvent"."""
    return [
        (event["Event"].removeprefix(STREAMING_EVENT), event)
        for event in events
        if event["Event"].startswith(STREAMING_EVENT)
    ]


def epoch_ms(text: str | None) -> int | None:
    """One of Spark's progress times ("2026-11-23T14:05:39.182Z") in epoch milliseconds."""
    if text is None:
        return None
    moment = datetime.fromisoformat(text)
    return int(moment.timestamp()) * 1000 + moment.microsecond // 1000


def batch_figures(progress: dict[str, Any]) -> dict[str, Any]:
    """What a store should hold of a batch, from Spark's progress in either of its forms: the
    event log's has no batch total of input rows, only the sources'."""
    event_time = progress.get("eventTime") or {}
    rows = progress.get("numInputRows")
    if rows is None:
        rows = sum(source["numInputRows"] for source in progress["sources"])
    return {
        "batch_id": progress["batchId"],
        "batch_time_ms": epoch_ms(progress["timestamp"]),
        "num_input_rows": rows,
        "watermark_ms": epoch_ms(event_time.get("watermark")),
        "event_time_min_ms": epoch_ms(event_time.get("min")),
        "event_time_max_ms": epoch_ms(event_time.get("max")),
        "trigger_duration_ms": progress["durationMs"]["triggerExecution"],
    }


class LineServer:
    """A TCP server on 127.0.0.1 for Spark's socket source: once a client connects, it sends
    `lines`, one every `every` seconds, and then holds the connection open until closed."""

    def __init__(self, lines: list[str], every: float) -> None:
        self.lines, self.every, self.sent = lines, every, 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def start(self) -> "LineServer":
        """Begin waiting for the client."""
        self._thread.start()
        return self

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            with client:
                for line in self.lines:
                    if self._closed.wait(self.every):
                        return
                    client.sendall(f"{line}\n".encode())
                    self.sent += 1
                self._closed.wait()
            return

    def close(self) -> None:
        """Stop sending and close the connection and the server."""
        self._closed.set()
        self._thread.join(timeout=10)
        self._listener.close()
