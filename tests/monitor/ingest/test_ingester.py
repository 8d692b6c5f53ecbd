"""Event logs real Spark wrote, into the store: every codec alike, exactly once across a crash,
following a log as it grows and is renamed, bad lines and files reported and skipped."""

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from monitor.health.predicates import Timeouts
from monitor.ingest import ingester as ingester_module
from monitor.ingest.ingester import UNSTOPPED, Ingester
from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import upgrade
from monitor.store.schema.models import Batch, LogPosition, Query, RejectedEvent
from monitor.store.write.writes import write_events
from tests.support.event_logs import LOG_START, query_run, read_all
from tests.support.waiting import wait_until

VARIANTS = ("zstd", "lz4", "snappy", "plain")
WMON = str(Path(sys.executable).with_name("wmon"))


def store(path: Path):
    engine = create_engine(f"sqlite:///{path}")
    upgrade(engine)
    return engine


def ingest(engine, *urls: Path, report=None) -> Ingester:
    problems = report if report is not None else []
    ingester = Ingester(engine, [str(url) for url in urls], Timeouts(), report=problems.append)
    ingester.step()
    return ingester


def batches(engine) -> list[tuple]:
    """Each stored batch as what the same query over the same data repeats run to run."""
    with engine.connect() as connection:
        rows = connection.execute(
            sa.select(Batch.batch_id, Batch.num_input_rows, Batch.watermark_ms).order_by(
                Batch.query_id, Batch.batch_id
            )
        )
        return [tuple(row) for row in rows]


def statuses(engine) -> list[str]:
    with engine.connect() as connection:
        return list(connection.scalars(sa.select(Query.status)))


def test_every_codec_and_layout_stores_the_same_batches(event_logs, tmp_path):
    stored = {}
    for variant in (*VARIANTS, "single_zstd"):
        engine = store(tmp_path / f"{variant}.db")
        problems: list[str] = []
        ingest(engine, event_logs.directory(variant), report=problems)
        assert problems == [], variant
        stored[variant] = (batches(engine), statuses(engine))
    assert len(stored["zstd"][0]) == 3 and stored["zstd"][1] == ["terminated"]
    assert stored["zstd"][0][-1][2] is not None, "the watermark is stored"
    assert all(result == stored["zstd"] for result in stored.values()), stored


def test_a_crash_mid_transaction_neither_skips_nor_repeats_a_line(
    event_logs, tmp_path, monkeypatch
):
    log = event_logs.events_file("plain")
    total_lines = len(read_all(ingester_module.discover(str(log))[0].files[0]))
    clean = store(tmp_path / "clean.db")
    ingest(clean, log)

    monkeypatch.setattr(ingester_module, "LINES_PER_WRITE", 10)
    calls = 0

    def crash_on_the_fifth(engine, events, timeouts, *, also=None):
        nonlocal calls
        calls += 1

        def then_die(session, written):
            if also is not None:
                also(session, written)
            raise KeyboardInterrupt  # killed before the transaction commits

        write_events(engine, events, timeouts, also=then_die if calls == 5 else also)

    monkeypatch.setattr(ingester_module, "write_events", crash_on_the_fifth)
    crashed = store(tmp_path / "crashed.db")
    first = Ingester(crashed, [str(log)], Timeouts())
    with pytest.raises(KeyboardInterrupt):
        first.step()
    assert first.totals.lines == 40, "four transactions of ten lines were stored"
    monkeypatch.setattr(ingester_module, "write_events", write_events)
    second = ingest(crashed, log)
    assert first.totals.lines + second.totals.lines == total_lines
    assert batches(crashed) == batches(clean) and statuses(crashed) == statuses(clean)
    assert ingest(crashed, log).totals.lines == 0, "a third run finds nothing new"


def test_following_a_log_as_it_grows_and_ends(event_logs, tmp_path):
    history = tmp_path / "history"
    shutil.copytree(event_logs.directory("plain", in_progress=True), history)
    (log,) = history.glob("eventlog_v2_*/events_*")
    (status,) = history.glob("eventlog_v2_*/appstatus_*.inprogress")
    whole = event_logs.events_file("plain").read_bytes()
    log.write_bytes(whole[: len(whole) // 2])  # cut mid-line: that line waits for its end
    engine = store(tmp_path / "wmon.db")
    follower = Ingester(engine, [str(history)], Timeouts())
    follower.step()
    assert statuses(engine) == ["active"]
    seen = batches(engine)
    assert len(seen) < 3

    log.write_bytes(whole)
    status.rename(status.with_suffix(""))  # the application ended
    follower.step()
    assert statuses(engine) == ["terminated"]
    assert batches(engine)[: len(seen)] == seen and len(batches(engine)) == 3
    assert follower.totals.lines == whole.count(b"\n"), "each line read once"

    # A new application in the directory is found by the next look.
    (other,) = event_logs.directory("zstd").iterdir()
    shutil.copytree(other, history / other.name)
    follower.step()
    assert statuses(engine) == ["terminated", "terminated"]


def test_a_single_file_log_renamed_at_its_end_is_not_read_again(event_logs, tmp_path):
    history = tmp_path / "history"
    shutil.copytree(event_logs.directory("single_zstd", in_progress=True), history)
    engine = store(tmp_path / "wmon.db")
    follower = Ingester(engine, [str(history)], Timeouts())
    follower.step()
    read = follower.totals.lines
    assert read > 0 and len(batches(engine)) == 3

    (running,) = history.iterdir()
    running.unlink()
    final = history / running.name.removesuffix(".inprogress")
    shutil.copyfile(event_logs.events_file("single_zstd"), final)
    follower.step()
    again = Ingester(engine, [str(history)], Timeouts())
    again.step()
    whole = len(read_all(ingester_module.discover(str(history))[0].files[0]))
    assert follower.totals.lines == whole and again.totals.lines == 0
    with engine.connect() as connection:
        [position] = connection.execute(sa.select(LogPosition)).all()
    assert (position.lines_read, position.url) == (whole, final.as_uri())


def test_bad_lines_are_reported_with_file_and_line_and_skipped(event_logs, tmp_path):
    history = tmp_path / "history"
    shutil.copytree(event_logs.directory("plain"), history)
    shutil.copytree(event_logs.directory("zstd"), history, dirs_exist_ok=True)
    (plain_file,) = history.glob("eventlog_v2_*/events_*_local-*[0-9]")
    lines = plain_file.read_text().splitlines(keepends=True)
    progress = next(i for i, line in enumerate(lines) if "QueryProgressEvent" in line)
    bad = [
        "this is not json\n",
        '{"progress": {"batchId": 1}}\n',
        lines[progress].replace('"batchId":0', '"batchId":"zero"'),
    ]
    plain_file.write_text("".join(lines[:progress] + bad + lines[progress + 1 :]))
    zstd_file = next(history.glob("eventlog_v2_*/events_*.zstd"))

    engine = store(tmp_path / "wmon.db")
    problems: list[str] = []
    ingest(engine, history, report=problems)
    url = plain_file.as_uri()
    assert problems == [
        f"{url}:{progress + 1}: skipped: not JSON (Expecting value: line 1 column 1 (char 0))",
        f"{url}:{progress + 2}: set aside: not a Spark event: it has no 'Event' name",
        f"{url}:{progress + 3}: set aside: progress field 'batchId' must be int, not 'zero'",
    ]
    assert statuses(engine) == ["terminated", "terminated"]
    assert len(batches(engine)) == 3 + 2, "only the bad batch 0 is missing"
    with engine.connect() as connection:
        aside = connection.execute(
            sa.select(RejectedEvent.origin, RejectedEvent.document).order_by(RejectedEvent.id)
        ).all()
    assert [origin for origin, _ in aside] == [f"{url}:{progress + 2}", f"{url}:{progress + 3}"]
    assert json.loads(aside[1].document)["progress"]["batchId"] == "zero"
    assert ingest(engine, history).totals.lines == 0, "set aside once, not again"
    with engine.connect() as connection:
        assert connection.scalar(sa.select(sa.func.count()).select_from(RejectedEvent)) == 2

    # A broken file is reported once and left; the rest of the history is stored.
    zstd_file.write_bytes(zstd_file.read_bytes()[:-7])
    again = store(tmp_path / "again.db")
    problems = []
    ingest(again, history, report=problems)
    [broken] = [problem for problem in problems if problem.startswith(zstd_file.as_uri())]
    assert broken.endswith("truncated zstd data: the last frame is incomplete (file skipped)")
    assert len(problems) == 4


def test_wmon_ingest_backfills_with_progress_and_then_finds_nothing_new(event_logs, tmp_path):
    history = tmp_path / "history"
    for variant in VARIANTS:
        shutil.copytree(event_logs.directory(variant), history, dirs_exist_ok=True)
    env = dict(os.environ, WMON_DATABASE_URL=f"sqlite:///{tmp_path / 'wmon.db'}")
    first = subprocess.run([WMON, "ingest", str(history)], capture_output=True, text=True, env=env)
    assert first.returncode == 0, first.stderr
    assert [line.split(":")[0:2] for line in first.stderr.splitlines()[1:]] == [
        ["ingest", f" [{n}/4] local-{app.split('-')[1]}"]
        for n, app in enumerate(sorted(event_logs.apps[v] for v in VARIANTS), 1)
    ]
    assert first.stdout.startswith("4 applications, 4 files: ")
    assert ", 20 events stored, " in first.stdout and first.stdout.endswith("; 0 problems\n")
    second = subprocess.run([WMON, "ingest", str(history)], capture_output=True, text=True, env=env)
    assert second.returncode == 0, second.stderr
    assert "0 lines, 0 events stored" in second.stdout


def test_wmon_ingest_exits_1_when_something_was_not_stored(event_logs, tmp_path):
    env = dict(os.environ, WMON_DATABASE_URL=f"sqlite:///{tmp_path / 'wmon.db'}")
    missing = tmp_path / "nowhere"
    done = subprocess.run(
        [
            WMON,
            "ingest",
            str(event_logs.directory("lzf")),
            str(event_logs.directory("zstd")),
            str(missing),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 1
    assert "unknown codec 'lzf'" in done.stderr and f"{missing.as_uri()}: not found" in done.stderr
    assert done.stderr.rstrip().endswith(
        "wmon: error: 2 problems, each reported above: what they name is not stored; "
        "everything else is"
    )
    assert "5 events stored" in done.stdout, "the readable application is stored"


def test_an_application_copied_in_while_followed_is_read_whole_once_its_file_is(
    event_logs, tmp_path, monkeypatch
):
    """A finished application copied into the history folder: its status file first, then its
    events file in two parts; one that stays short past the grace is reported, once."""
    history = tmp_path / "history"
    (source,) = event_logs.directory("zstd").iterdir()
    copied = history / source.name
    copied.mkdir(parents=True)
    for status in source.glob("appstatus_*"):
        shutil.copy(status, copied)
    (events,) = source.glob("events_*")
    data = events.read_bytes()
    (copied / events.name).write_bytes(data[: len(data) // 2])
    engine, problems = store(tmp_path / "wmon.db"), []
    follower = Ingester(engine, [str(history)], Timeouts(), report=problems.append, following=True)
    follower.step()
    follower.step()
    assert (problems, statuses(engine)) == ([], ["active"]), "the lines so far, and waiting"

    monkeypatch.setattr(ingester_module, "SHORT_GRACE_S", 0.0)
    follower.step()
    follower.step()
    [waited] = problems
    assert waited.endswith(
        "the last frame is incomplete (waited 0 s for the rest; read again if it grows)"
    )

    (copied / events.name).write_bytes(data)
    follower.step()
    assert statuses(engine) == ["terminated"]
    assert (follower.totals.files, follower.totals.events) == (1, 5)
    assert len(problems) == 1


def test_wmon_ingest_follow_picks_up_new_applications_until_interrupted(event_logs, tmp_path):
    history = tmp_path / "history"
    history.mkdir()
    database_url = f"sqlite:///{tmp_path / 'wmon.db'}"
    env = dict(os.environ, WMON_DATABASE_URL=database_url)
    engine = store(tmp_path / "wmon.db")
    follower = subprocess.Popen(
        [WMON, "ingest", "--follow", "--interval", "0.2", str(history)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        for count, variant in enumerate(("zstd", "snappy"), 1):
            (application,) = event_logs.directory(variant).iterdir()
            shutil.copytree(application, history / application.name)
            # Each application's last event ends its query: once it is stored, all of it is.
            wait_until(
                lambda count=count: statuses(engine) == ["terminated"] * count,
                30,
                f"the {variant} application to be followed",
            )
        follower.send_signal(signal.SIGINT)
        out, err = follower.communicate(timeout=30)
    finally:
        follower.kill()
    assert follower.returncode == 130, err
    assert out.startswith("2 applications, 2 files: ") and "10 events stored" in out
    assert statuses(engine) == ["terminated", "terminated"]


def test_a_run_left_running_when_the_application_ends_ends_with_it(event_logs, tmp_path):
    history = tmp_path / "history"
    shutil.copytree(event_logs.directory("plain"), history)
    (log,) = history.glob("eventlog_v2_*/events_*")
    lines = log.read_text().splitlines(keepends=True)
    # As when spark.stop() runs without query.stop(), or the driver is killed: no end logged.
    log.write_text("".join(line for line in lines if "QueryTerminatedEvent" not in line))
    [app_end] = [json.loads(line) for line in lines if "SparkListenerApplicationEnd" in line]
    engine = store(tmp_path / "wmon.db")
    ingest(engine, history)
    with engine.connect() as connection:
        query = connection.execute(sa.select(Query)).one()
    assert (query.status, query.terminated_at_ms) == ("failed", app_end["Timestamp"])
    assert query.exception == UNSTOPPED


def test_a_run_left_running_ends_with_its_application_in_a_later_ingest_too(event_logs, tmp_path):
    """The issue's probe: ingested while the application ran, then again by a new process
    after it ended without stopping its query; the query stayed active."""
    history = tmp_path / "history"
    shutil.copytree(event_logs.directory("plain", in_progress=True), history)
    (log,) = history.glob("eventlog_v2_*/events_*")
    (status,) = history.glob("eventlog_v2_*/appstatus_*.inprogress")
    lines = [
        line
        for line in event_logs.events_file("plain").read_text().splitlines(keepends=True)
        if "QueryTerminatedEvent" not in line
    ]
    end = next(i for i, line in enumerate(lines) if "SparkListenerApplicationEnd" in line)
    log.write_text("".join(lines[:end]))
    engine = store(tmp_path / "wmon.db")
    ingest(engine, history)
    assert statuses(engine) == ["active"]

    log.write_text("".join(lines))
    status.rename(status.with_suffix(""))  # the application ended
    ingest(engine, history)  # a new process: nothing of the first one's memory
    with engine.connect() as connection:
        query = connection.execute(sa.select(Query)).one()
    assert (query.status, query.exception) == ("failed", UNSTOPPED)


def test_wmon_ingest_names_a_fifo_among_the_logs_and_reads_the_rest(tmp_path):
    """A FIFO named like a log, in the history folder or given itself, is refused and named
    (an open() of it would wait for a writer for good); the other logs are stored."""
    history = tmp_path / "history"
    history.mkdir()
    log = LOG_START + query_run("q-1", "r-1", [0, 1, 2], 1_700_000_000_000, ended=True)
    (history / "local-1700000000001").write_text(log)
    fifos = [history / "local-1700000000002.inprogress", tmp_path / "local-1700000000003"]
    for fifo in fifos:
        os.mkfifo(fifo)
    env = dict(os.environ, WMON_DATABASE_URL=f"sqlite:///{tmp_path / 'wmon.db'}")
    done = subprocess.run(
        [WMON, "ingest", str(history), str(fifos[1])],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    for fifo in fifos:
        assert (
            f"wmon: {fifo.as_uri()}: is a FIFO, not a regular file (file skipped)\n" in done.stderr
        )
    assert done.stdout.startswith("3 applications, 3 files: 6 lines, 5 events stored"), done.stdout


def test_wmon_ingest_says_a_rewritten_log_is_read_again_from_its_start(tmp_path):
    """The issue's probe: run again over a log rewritten with another query, it went on from
    the old offset, stored nothing of the new query's start and said '0 problems'."""
    history = tmp_path / "history"
    history.mkdir()
    log = history / "local-1700000000000.inprogress"
    log.write_text(LOG_START + query_run("q-old", "r-old", [0, 1, 2], 1_700_000_000_000))
    env = dict(os.environ, WMON_DATABASE_URL=f"sqlite:///{tmp_path / 'wmon.db'}")
    ingest = [WMON, "ingest", str(history)]
    assert subprocess.run(ingest, capture_output=True, env=env).returncode == 0
    read = log.stat().st_size
    log.write_text(LOG_START + query_run("q-new", "r-new", range(6), 1_700_000_060_000))
    done = subprocess.run(ingest, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert (
        f"wmon: {log.as_uri()}: rewritten: its first {read:,} bytes are not those read from it; "
        "reading it again from its start\n"
    ) in done.stderr
    assert done.stdout.startswith("1 applications, 1 files: 8 lines, 7 events stored, ")
    assert done.stdout.endswith("; 1 rewritten files read again; 0 problems\n")
    with store(tmp_path / "wmon.db").connect() as connection:
        stored = connection.execute(sa.select(Batch.query_id, Batch.batch_id)).all()
    assert sorted(stored) == [("q-new", n) for n in range(6)] + [("q-old", n) for n in range(3)]
