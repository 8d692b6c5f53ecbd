"""Proof on jobs no one here wrote: Spark's own example streaming programs from the pyspark
package, unmodified, each run as its own spark-submit JVM, are recorded with the batches Spark
itself reports.

Spark says what happened twice, independently of us: its driver log prints every progress as it
adds it to `query.recentProgress` (and posts it to the listener bus), and its event log writes
the same progress from the bus. Both are compared with the store, batch by batch, after
`wmon submit` (the JVM listener posting to a real `wmon serve`) and after `wmon ingest` of an
event log written with nothing of ours in the job.

Neither example declares a watermark (no `withWatermark`), so Spark reports no watermark and no
event-time figures for them: those are compared too, but are absent on both sides. What these
tests prove is the rest: every batch, its id, time, duration and input rows, end to end.
"""

import json
import re
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.ingest.ingester import UNSTOPPED
from monitor.ingest.logfiles import discover
from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import upgrade
from monitor.store.schema.models import Query, Sender
from tests.support.cli import run_wmon
from tests.support.network import closed_port
from tests.support.spark_submit import (
    LineServer,
    batch_figures,
    end,
    event_log,
    job_env,
    logged_progress,
    start,
    streaming_events,
    tail,
)
from tests.support.waiting import wait_until
from wmon.submit import spark_submit

pytestmark = pytest.mark.spark

WMON = Path(sys.executable).parent / "wmon"
EXAMPLES = spark_submit().parent.parent / "examples/src/main/python/sql/streaming"
BLOCKCHAIN = EXAMPLES / "structured_blockchain_admission_control.py"
WORDCOUNT = EXAMPLES / "structured_network_wordcount_windowed.py"
TOKEN = "examples-token"
STARTED, PROGRESS = "QueryStartedEvent", "QueryProgressEvent"
IDLE, TERMINATED = "QueryIdleEvent", "QueryTerminatedEvent"
# A loaded 2-core machine takes ~10 s to start a JVM and run its first batch.
JOB_TIMEOUT = 240
# The lines the word count is fed, one every quarter second: 4 s of them, which its batches
# (under a second each once the first is done) read a few at a time, in 3-5 batches. More
# lines only make more of the same batches, each a second of the machine.
LINES, EVERY = 16, 0.25
# What batch_figures gives, as `wmon batches --json` names them.
FIGURES = (
    *("batch_id", "batch_time_ms", "num_input_rows", "trigger_duration_ms"),
    *("watermark_ms", "event_time_min_ms", "event_time_max_ms"),
)
SUMMARY = re.compile(r"([\d,]+) lines, ([\d,]+) events stored.*; ([\d,]+) problems")


def spark_args(event_logs: Path) -> list[str]:
    """spark-submit's options for a local job writing Spark's event log into `event_logs`."""
    return [
        "--master",
        "local[2]",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.eventLog.enabled=true",
        "--conf",
        f"spark.eventLog.dir={event_logs.as_uri()}",
    ]


def migrated(path: Path) -> str:
    """The URL of a fresh, migrated SQLite store at `path`."""
    engine = create_engine(f"sqlite:///{path}")
    upgrade(engine)
    engine.dispose()
    return f"sqlite:///{path}"


def cli_output(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """What a `wmon` command prints, run in this process, which it must end with status 0."""
    capsys.readouterr()
    status, out, err = run_wmon(capsys, *argv)
    assert status == 0, err
    return out


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    """What a `wmon ... --json` command prints, run in this process."""
    return json.loads(cli_output(capsys, *argv, "--json"))


def stored_figures(capsys: pytest.CaptureFixture[str], store: str, query: str) -> list[Any]:
    """`wmon batches` of a query (id or name), in batch order, with batch_figures' fields."""
    rows = cli_json(capsys, "batches", query, "--limit", "1000000", "--database-url", store)
    return sorted(({key: row[key] for key in FIGURES} for row in rows), key=lambda f: f["batch_id"])


def ingested(capsys: pytest.CaptureFixture[str], store: str, logs: Path) -> tuple[int, int, int]:
    """`wmon ingest` of `logs` into `store`, run in this process: the lines read, events stored
    and problems its summary line counts."""
    output = cli_output(capsys, "ingest", "--database-url", store, str(logs))
    found = SUMMARY.search(output)
    assert found, output
    lines, events, problems = (int(count.replace(",", "")) for count in found.groups())
    return lines, events, problems


def senders(store: str) -> list[tuple[str, int, int]]:
    """Each sender the collector heard: its name, the events stored from it, those it dropped."""
    engine = create_engine(store)
    try:
        with so.Session(engine) as session:
            rows = session.scalars(sa.select(Sender)).all()
            return [(sender.id, sender.events, sender.dropped) for sender in rows]
    finally:
        engine.dispose()


def answering(port: int) -> bool:
    """Whether something accepts connections on the local port."""
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A real `wmon serve` on a free port over a fresh store: (its URL, the store's URL)."""
    store = migrated(tmp_path / "served.db")
    port = closed_port()
    env = job_env(WMON_DATABASE_URL=store, WMON_INGEST_TOKEN=TOKEN)
    server = start([str(WMON), "serve", "--port", str(port)], tmp_path / "serve", env)
    try:
        wait_until(lambda: answering(port) or server.poll() is not None, 60, "wmon serve")
        assert server.poll() is None, tail(tmp_path / "serve.err")
        yield f"http://127.0.0.1:{port}", store
    finally:
        end(server)


def run_blockchain_example(tmp_path: Path, collector_url: str, logs: Path) -> Path:
    """The blockchain example run through `wmon submit` to the collector, writing Spark's
    event log into `logs` too; its driver log's path."""
    # A Python data source's workers wait this long for the driver; 15 s by default, which a
    # loaded 2-core machine has run past.
    patience = ["--conf", "spark.python.authenticate.socketTimeout=60s"]
    wmon = [str(WMON), "submit", "--url", collector_url, "--token", TOKEN, "--"]
    # The example runs its query for 30 s, stops it and the session, then exits.
    command = [*wmon, *spark_args(logs), *patience, str(BLOCKCHAIN)]
    job = start(command, tmp_path / "job", job_env())
    try:
        code = job.wait(timeout=JOB_TIMEOUT)
    finally:
        end(job)
    assert code == 0, tail(tmp_path / "job.err")
    return tmp_path / "job.err"


def test_wmon_submit_records_the_blockchain_example_as_spark_reports_it(
    tmp_path: Path, collector: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    url, store = collector
    logs = tmp_path / "event-logs"
    logs.mkdir()
    err = run_blockchain_example(tmp_path, url, logs)

    app_id, events = event_log(logs)
    streaming = streaming_events(events)
    kinds = [kind for kind, _ in streaming]
    assert kinds[0] == STARTED and kinds[-1] == TERMINATED, kinds
    assert set(kinds[1:-1]) == {PROGRESS}, kinds
    progress = [event["progress"] for _, event in streaming[1:-1]]
    figures = [batch_figures(doc) for doc in progress]
    assert len(figures) >= 2 and [f["batch_id"] for f in figures] == list(range(len(figures)))
    assert [batch_figures(doc) for doc in logged_progress(err)] == figures
    # The example's admission control: ReadMaxRows(20) blocks a batch, of 10,000.
    assert {f["num_input_rows"] for f in figures} == {20}
    assert {f["watermark_ms"] for f in figures} == {None}, "the example has no watermark"

    [query] = cli_json(capsys, "queries", "--database-url", store)
    started = streaming[0][1]
    assert (query["id"], query["name"]) == (started["id"], "admission_control_test")
    assert (query["status"], query["last_batch_id"]) == ("terminated", len(figures) - 1)
    assert stored_figures(capsys, store, "admission_control_test") == figures
    # The listener's sender is the application; it delivered every event and dropped none,
    # and told of batches in flight besides, every 5 s while one ran.
    [(sender, stored, dropped)] = senders(store)
    assert (sender, dropped) == (app_id, 0) and stored >= len(streaming)


def run_wordcount_until_killed(tmp_path: Path, logs: Path) -> Path:
    """The windowed word count example fed LINES lines, killed with SIGTERM once its batches
    have read them all, as one stops a job that runs until killed; its driver log's path."""
    err = tmp_path / "job.err"
    feed = LineServer(["wmon watermark"] * LINES, EVERY).start()
    # lz4 rather than Spark's default zstd; two shuffle partitions rather than 200, which keep
    # a 2-core machine on the first batch for tens of seconds.
    settings = ["--conf", "spark.eventLog.compression.codec=lz4"]
    settings += ["--conf", "spark.sql.shuffle.partitions=2"]
    # The example's arguments: the host and port to read lines from, windows of 2 s.
    example = [str(WORDCOUNT), "127.0.0.1", str(feed.port), "2"]
    command = [str(spark_submit()), *spark_args(logs), *settings, *example]
    job = start(command, tmp_path / "job", job_env())
    try:
        wait_until(
            lambda: job.poll() is not None or rows_logged(err) == LINES,
            JOB_TIMEOUT,
            f"batches that read all {LINES} lines",
        )
        assert job.poll() is None, tail(err)
        job.send_signal(signal.SIGTERM)
        job.wait(timeout=60)
    finally:
        end(job)
        feed.close()
    assert feed.sent == LINES
    return err


def rows_logged(err: Path) -> int:
    """The input rows of every batch the driver's log has printed so far."""
    return sum(progress["numInputRows"] for progress in logged_progress(err))


def test_wmon_ingest_records_the_windowed_wordcount_from_its_lz4_event_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "event-logs"
    logs.mkdir()
    err = run_wordcount_until_killed(tmp_path, logs)

    [application] = discover(str(logs))
    assert {file.codec for file in application.files} == {"lz4"}
    _, events = event_log(logs)
    streaming = streaming_events(events)
    progress = [event["progress"] for kind, event in streaming if kind == PROGRESS]
    figures = [batch_figures(doc) for doc in progress]
    # A query idle for 10 s adds idle events; a loaded machine may wait that long to kill it.
    kinds = [kind for kind, _ in streaming if kind != IDLE]
    # SIGTERM runs Spark's shutdown hook, which stops the SparkContext, its listener bus and
    # event log; the query, idle once it has read every line, is never stopped and the JVM
    # exits under it: no terminated event is posted at all, only the application's end.
    assert kinds == [STARTED] + [PROGRESS] * len(progress), kinds
    assert "SparkListenerApplicationEnd" in {event["Event"] for event in events}
    assert len(figures) >= 2 and [f["batch_id"] for f in figures] == list(range(len(figures)))
    # A progress is logged after it is posted to the listener bus, which the hook drains
    # into the event log: the log has every batch the driver printed.
    assert [batch_figures(doc) for doc in logged_progress(err)] == figures
    assert sum(f["num_input_rows"] for f in figures) == LINES
    assert {f["watermark_ms"] for f in figures} == {None}, "the example has no watermark"

    store = f"sqlite:///{tmp_path / 'ingested.db'}"
    # Every streaming event, and the end of the run the application's end left running.
    assert ingested(capsys, store, logs) == (len(events), len(streaming) + 1, 0)
    query_id = streaming[0][1]["id"]
    [query] = cli_json(capsys, "queries", "--database-url", store)
    assert (query["id"], query["last_batch_id"]) == (query_id, len(figures) - 1)
    # Only the application's end says the query is over: the run ends with it, failed, saying
    # that Spark logged no end of it.
    assert query["status"] == "failed"
    with create_engine(store).connect() as connection:
        assert connection.scalar(sa.select(Query.exception)) == UNSTOPPED
    assert stored_figures(capsys, store, query_id) == figures

    assert ingested(capsys, store, logs) == (0, 0, 0)
    assert stored_figures(capsys, store, query_id) == figures
