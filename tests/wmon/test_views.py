"""Every table command's default view fits a terminal 120 columns wide and is whole in a pipe,
`--wide` shows every column and value whole, and `--json` keeps every field whatever the
width."""

import io
import json
import re
import time

import pytest
import sqlalchemy.orm as so

import wmon.queries
from monitor.collect.progress import parse_progress
from monitor.events import QueryStarted, QueryTerminated, TimerSnapshot
from monitor.store.write.rejected import set_aside
from monitor.store.write.writes import write_event
from tests.support.alert_scenarios import stalled
from tests.support.diagnosis_scenario import QUERY as TELEMETRY
from tests.support.diagnosis_scenario import at, write_telemetry
from tests.support.progress import progress_doc, stamp
from wmon.advise import COLUMNS as ADVICE_COLUMNS
from wmon.main import main
from wmon.render import (
    ALERT_COLUMNS,
    BATCH_COLUMNS,
    PARTITION_COLUMNS,
    QUERY_COLUMNS,
    REJECTED_COLUMNS,
    STATE_COLUMNS,
    TIMER_COLUMNS,
)

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

FAILED, FAILED_RUN = "44444444-4444-4444-4444-444444444444", "run-f"
# A name as Spark Declarative Pipelines gives its flows, and the error of a foreachBatch.
LONG_NAME = "spark_catalog.analytics.scooter_offline_events_by_region_and_hour"
ERROR = (
    "ValueError: scooter s-17 reported a position outside every known region"
    " (lat 91.2, lon 181.7) in its heartbeat of 2026-11-22T03:00:31Z"
)
EXCEPTION = (
    "org.apache.spark.api.python.PythonException: Error from python worker:\n"
    "Traceback (most recent call last):\n"
    '  File "/jobs/offline.py", line 88, in handle\n'
    f"{ERROR}\n"
)
REFUSED = (
    "progress field 'sources[0].endOffset' must be an object of partition offsets,"
    " not the string 'latest' (a source this version of the collector cannot read)"
)
TABLES = {
    "queries": (["queries"], QUERY_COLUMNS),
    "batches": (["batches", "telemetry"], BATCH_COLUMNS),
    "partitions": (["partitions", "telemetry", "--batch", "3"], PARTITION_COLUMNS),
    "state": (["state", "telemetry"], STATE_COLUMNS),
    "timers": (["timers", "telemetry"], TIMER_COLUMNS),
    "alerts": (["alerts", "--all"], ALERT_COLUMNS),
    "advise": (["advise", "telemetry"], ADVICE_COLUMNS),
    "rejected": (["rejected"], REJECTED_COLUMNS),
}


@pytest.fixture
def store(engine, database_url, capsys):
    """The telemetry query (a future-dated record drives its watermark, pending timers), a
    query with a stalled partition, one with a long name that has just failed with a long
    error, a refused event, and the alerts a pass of the rules raises on them."""
    write_telemetry(engine)
    for taken in range(3):
        write_event(
            engine,
            TimerSnapshot(
                TELEMETRY, "run-1", at(3 + taken), at(2 + taken), 1_250, at(4), 60_000, 3
            ),
        )
    stalled(engine)
    now = int(time.time() * 1000)
    write_event(engine, QueryStarted(FAILED, FAILED_RUN, LONG_NAME, now - 60_000))
    doc = progress_doc(id=FAILED, runId=FAILED_RUN, batchId=0, timestamp=stamp(now - 30_000))
    doc["name"] = LONG_NAME
    write_event(engine, parse_progress(doc))
    failure = QueryTerminated(FAILED, FAILED_RUN, now - 10_000, EXCEPTION, "PYTHON_EXCEPTION")
    write_event(engine, failure)
    with so.Session(engine) as session, session.begin():
        set_aside(session, now, "app-20261122030000-0007", [(progress_doc(), REFUSED)])
    assert main(["alerts", "run", "--once", "--database-url", database_url]) == 0
    capsys.readouterr()
    return database_url


def output(capsys, argv, database_url):
    assert main([*argv, "--database-url", database_url]) == 0
    return capsys.readouterr().out


def headers(line):
    """A table's headers: its header line split where two spaces or more part them."""
    return re.split(r"  +", line.strip())


@pytest.mark.parametrize("command", TABLES)
def test_the_default_view_fits_the_terminal_and_leaves_the_extra_columns_out(
    store, capsys, monkeypatch, command
):
    argv, columns = TABLES[command]
    piped = output(capsys, argv, store).splitlines()
    lines = on_a_terminal(monkeypatch, "120", argv, store).splitlines()
    assert len(lines) > 1
    assert max(map(len, lines)) <= 120
    assert headers(lines[0]) == headers(piped[0]) == [c.header for c in columns if not c.extra]


@pytest.mark.parametrize("command", TABLES)
def test_wide_shows_every_column(store, capsys, command):
    argv, columns = TABLES[command]
    lines = output(capsys, [*argv, "--wide"], store).splitlines()
    assert headers(lines[0]) == [c.header for c in columns]


def test_a_long_value_is_whole_in_a_pipe_or_with_wide_and_cut_on_a_terminal(
    store, capsys, monkeypatch
):
    for argv, whole in (
        (["queries"], f"{LONG_NAME}  failed"),
        (["alerts"], f"the query failed: {ERROR}"),
        (["rejected"], REFUSED),
    ):
        assert whole in output(capsys, argv, store)
        assert whole in output(capsys, [*argv, "--wide"], store)
    default = on_a_terminal(monkeypatch, "120", ["queries"], store)
    [failed] = [line for line in default.splitlines() if "failed" in line]
    assert failed.startswith(LONG_NAME[:20]) and "…  failed  " in failed
    assert LONG_NAME not in failed
    alerts = on_a_terminal(monkeypatch, "120", ["alerts"], store).splitlines()
    [query_failed] = [line for line in alerts if "query_failed" in line]
    assert len(query_failed) == 120 and query_failed.endswith("…")
    [refused] = on_a_terminal(monkeypatch, "120", ["rejected"], store).splitlines()[1:]
    assert "  progress field 'sources[0].endO…  " in refused and len(refused) <= 120


@pytest.mark.parametrize("command", TABLES)
def test_json_keeps_every_field_whole_whatever_the_width(store, capsys, monkeypatch, command):
    argv, _ = TABLES[command]
    now = int(time.time() * 1000)
    monkeypatch.setattr(wmon.queries, "now_ms", lambda: now)
    piped = json.loads(output(capsys, [*argv, "--json"], store))
    wide = json.loads(output(capsys, [*argv, "--json", "--wide"], store))
    narrow = json.loads(on_a_terminal(monkeypatch, "80", [*argv, "--json"], store))
    assert piped == wide == narrow
    assert piped


def test_json_has_the_long_values_whole(store, capsys):
    names = [row["name"] for row in json.loads(output(capsys, ["queries", "--json"], store))]
    assert LONG_NAME in names
    [refused] = json.loads(output(capsys, ["rejected", "--json"], store))
    assert refused["error"] == REFUSED
    assert {c.attribute for c in BATCH_COLUMNS} == set(
        json.loads(output(capsys, ["batches", "telemetry", "--json"], store))[0]
    )


class Terminal(io.StringIO):
    """Standard output that is a terminal."""

    def isatty(self):
        return True


def on_a_terminal(monkeypatch, columns, argv, database_url):
    """What a command prints on a terminal `columns` wide."""
    terminal = Terminal()
    monkeypatch.setattr("sys.stdout", terminal)
    monkeypatch.setenv("COLUMNS", columns)
    assert main([*argv, "--database-url", database_url]) == 0
    return terminal.getvalue()


@pytest.mark.parametrize(("columns", "widest"), [("200", 200), ("100", 100), ("40", 80)])
def test_on_a_terminal_the_view_takes_its_width_never_less_than_80(
    store, monkeypatch, columns, widest
):
    lines = on_a_terminal(monkeypatch, columns, ["alerts"], store).splitlines()
    assert max(map(len, lines)) == widest
