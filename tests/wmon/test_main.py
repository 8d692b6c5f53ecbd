"""The `wmon` command in-process, on real SQLite and PostgreSQL stores."""

import json
import re
import sqlite3
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import web
import wmon.queries
from monitor.collect.progress import parse_progress
from monitor.events import BatchRunning, QueryStarted, QueryTerminated
from monitor.store.schema.engine import create_engine, display_url, parse_url
from monitor.store.schema.migrate import current_revision, head_revision
from monitor.store.write.writes import write_event
from streaming.log import PartitionedLog
from tests.support.cli import run_wmon
from tests.support.diagnosis_scenario import write_telemetry
from tests.support.network import closed_port
from tests.support.progress import progress_doc
from web import create_app
from wmon.main import build_parser, main

QUERY, RUN = "11111111-1111-1111-1111-111111111111", "run-1"
OTHER, OTHER_RUN = "22222222-2222-2222-2222-222222222222", "run-2"
# 2026-11-22 02:57:30.000 UTC and the fixtures' eventTime values, as epoch ms.
T0 = 1_795_316_250_000
WATERMARK, EVENT_MIN, EVENT_MAX = 1_795_316_249_318, 1_795_316_251_368, 1_795_316_253_318


@pytest.fixture(autouse=True)
def no_default_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Keep the default store inside the test's folder, whatever the machine's environment."""
    monkeypatch.delenv("WMON_DATABASE_URL", raising=False)
    monkeypatch.delenv("WMON_BUFFER_SIZE", raising=False)
    monkeypatch.setenv("WMON_HOME", str(tmp_path / "default-home"))


def iso(ms: int) -> str:
    """Epoch ms in Spark's timestamp format, e.g. 2026-11-22T02:57:30.500Z."""
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def populate(url: str) -> None:
    """Two queries: telemetry_windows with batches 0-3, rate_dedup with batch 5, then failed."""
    engine = create_engine(url)
    write_event(engine, QueryStarted(QUERY, RUN, "telemetry_windows", T0 - 5_000))
    for batch_id in range(4):
        doc = progress_doc(
            id=QUERY,
            runId=RUN,
            batchId=batch_id,
            timestamp=iso(T0 + 500 + 1_000 * batch_id),
            numInputRows=10 * (batch_id + 1),
        )
        write_event(engine, parse_progress(doc))
    write_event(engine, QueryStarted(OTHER, OTHER_RUN, "rate_dedup", T0 + 8_000))
    dedup = progress_doc("progress_rate_dedup.json", id=OTHER, runId=OTHER_RUN)
    write_event(engine, parse_progress(dedup))
    write_event(
        engine,
        QueryTerminated(OTHER, OTHER_RUN, T0 + 11_000, "boom", "FOREACH_BATCH_USER_FUNCTION_ERROR"),
    )
    engine.dispose()


@pytest.fixture
def store(database_url: str) -> str:
    """The URL of a store holding two queries (see populate)."""
    populate(database_url)
    return database_url


def snapshot(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, to show that a command changed nothing."""
    engine = create_engine(url)
    with engine.connect() as connection:
        tables = sorted(sa.inspect(connection).get_table_names())
        rows = {
            table: sorted(
                map(tuple, connection.execute(sa.text(f'SELECT * FROM "{table}"'))), key=repr
            )
            for table in tables
        }
    engine.dispose()
    return rows


def table(*lines: str) -> str:
    return "\n".join(lines) + "\n"


# No alert rule was evaluated: no alerts.
QUERIES_A_MINUTE_LATER = table(
    "name               health   alerts  heard     last batch  running  spark   error",
    "rate_dedup         failed   -       49 s ago  5           -        failed"
    "  FOREACH_BATCH_USER_FUNCTION_ERROR",
    "telemetry_windows  healthy  -       57 s ago  3           -        active  -",
)
# Silent for longer than no_progress' threshold (5 minutes by default), a running query is
# stalled. With --wide, its id too.
QUERIES_AN_HOUR_LATER_WIDE = table(
    "name               health   alerts  heard            last batch  running  spark   error"
    "                              id",
    "rate_dedup         failed   -       59 min 49 s ago  5           -        failed"
    "  FOREACH_BATCH_USER_FUNCTION_ERROR  22222222-2222-2222-2222-222222222222",
    "telemetry_windows  stalled  -       59 min 56 s ago  3           -        active"
    "  -                                  11111111-1111-1111-1111-111111111111",
)
# Under the table, how the batches of the last five minutes keep the trigger (none is known).
PACE = "trigger not known; median batch 726 ms of the last 4; its longest stage addBatch 508 ms"
BATCHES_TABLE = table(
    "batch  time                     watermark                rows  took    skew"
    "  watermark state  watermark driver",
    "2      2026-11-22 02:57:32.500  2026-11-22 02:57:29.318  30    726 ms  -     ok"
    "               -",
    "3      2026-11-22 02:57:33.500  2026-11-22 02:57:29.318  40    726 ms  -     ok"
    "               -",
    PACE,
)
LAST_BATCH_TABLE = table(BATCHES_TABLE.splitlines()[0], BATCHES_TABLE.splitlines()[2], PACE)
BATCHES_WIDE = table(
    "batch  time                     watermark                event time min"
    "           event time max           rows  rows/s in  rows/s done  took    skew"
    "  flink watermark  watermark state  watermark driver  driver record",
    "2      2026-11-22 02:57:32.500  2026-11-22 02:57:29.318  2026-11-22 02:57:31.368"
    "  2026-11-22 02:57:33.318  30    23.6       55.0         726 ms  -     -                ok"
    "               -                 -",
    "3      2026-11-22 02:57:33.500  2026-11-22 02:57:29.318  2026-11-22 02:57:31.368"
    "  2026-11-22 02:57:33.318  40    23.6       55.0         726 ms  -     -                ok"
    "               -                 -",
    PACE,
)


def partitions_table(batch_id: int, behind: str, verdict: str) -> str:
    """The partitions of a batch of the telemetry query: every batch has the same offsets,
    so the backlogs of telemetry/0 and /2 do not move (stalled, from the second batch on)
    and were there at the first batch stored; a backlog without a verdict has no catch-up."""
    no_event_times = "-        -"
    width = max(len("behind"), len(behind))
    never = "-" if verdict == "-" else "never"
    waiting = f"{behind:<{width}}  {never:<8}  {verdict:<7}  -     -"
    # A stalled backlog is the partition's status too; the state column is as wide as it.
    state = "stalled" if verdict == "stalled" else "ok"
    column = max(len("state"), len(state))
    return table(
        f"batch  partition    offset lag  {'state':<{column}}  records  time lag"
        f"  {'behind':<{width}}  catch-up  verdict  late  future",
        f"{batch_id}      telemetry/0  4           {state:<{column}}  {no_event_times}"
        f"         {waiting}",
        f"{batch_id}      telemetry/1  0           {'ok':<{column}}  {no_event_times}         "
        f"{'none':<{width}}  now       ok       -     -",
        f"{batch_id}      telemetry/2  600         {state:<{column}}  {no_event_times}"
        f"         {waiting}",
    )


def partitions_wide(batch_id: int) -> str:
    no_event_times = "-        -               -                    -"
    waiting = "  >= 1.0 s  0.0        0.0     never     stalled  -     -           -       -"
    return table(
        "batch  partition    start  end   latest  offset lag  state    records  max event time"
        "  partition watermark  time lag  backlog  behind    arrival/s  read/s  catch-up"
        "  verdict  late  late total  future  lead",
        f"{batch_id}      telemetry/0  1000   1020  1024    4           stalled  {no_event_times}"
        f"         4      {waiting}",
        f"{batch_id}      telemetry/1  940    960   960     0           ok       {no_event_times}"
        "         0        none      0.0        0.0     now       ok       -     -           -"
        "       -",
        f"{batch_id}      telemetry/2  880    900   1500    600         stalled  {no_event_times}"
        f"         600    {waiting}",
    )


TABLE_CASES = [
    (["batches", QUERY, "--limit", "2"], BATCHES_TABLE),
    (["batches", "telemetry_windows", "--limit", "2"], BATCHES_TABLE),
    (["batches", "telemetry_windows", "--limit", "1"], LAST_BATCH_TABLE),
    (["batches", QUERY, "--limit", "2", "--wide"], BATCHES_WIDE),
    (["partitions", QUERY], partitions_table(3, ">= 60 s", "stalled")),
    (
        ["partitions", "telemetry_windows", "--batch", "1"],
        partitions_table(1, ">= 1.0 s", "stalled"),
    ),
    (["partitions", QUERY, "--batch", "1", "--wide"], partitions_wide(1)),
    (["partitions", QUERY, "--batch", "0"], partitions_table(0, ">= 0 ms", "-")),
    (["partitions", QUERY, "--batch", "4"], "(none)\n"),
]
TABLE_IDS = [
    "batches by id",
    "batches by name",
    "batches limit 1",
    "batches wide",
    "partitions of the latest batch",
    "partitions of batch 1 by name",
    "partitions of batch 1 wide",
    "partitions of batch 0",
    "partitions of a batch not stored",
]


@pytest.mark.parametrize(("argv", "expected"), TABLE_CASES, ids=TABLE_IDS)
def test_tables(
    store: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    expected: str,
):
    # A backlog's age is as of now: a minute after the first batch.
    monkeypatch.setattr(wmon.queries, "now_ms", lambda: T0 + 60_000)
    assert run_wmon(capsys, *argv, "--database-url", store) == (0, expected, "")


@pytest.mark.parametrize(("flag", "expected"), [([], "(none)\n"), (["--json"], "[]\n")])
def test_an_empty_store_has_no_queries(
    database_url: str, capsys: pytest.CaptureFixture[str], flag: list[str], expected: str
) -> None:
    assert run_wmon(capsys, "queries", *flag, "--database-url", database_url) == (0, expected, "")


@pytest.mark.parametrize(
    ("later_ms", "flags", "expected"),
    [(60_000, [], QUERIES_A_MINUTE_LATER), (3_600_000, ["--wide"], QUERIES_AN_HOUR_LATER_WIDE)],
    ids=["a minute later", "an hour later, wide"],
)
def test_queries_show_their_health_the_most_urgent_first(
    store: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    later_ms: int,
    flags: list[str],
    expected: str,
):
    monkeypatch.setattr(wmon.queries, "now_ms", lambda: T0 + later_ms)
    assert run_wmon(capsys, "queries", *flags, "--database-url", store) == (0, expected, "")


def test_a_query_running_a_long_batch_is_heard_from_and_says_which_batch(
    store: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    engine = create_engine(store)
    since = T0 + 4_000
    write_event(engine, BatchRunning(QUERY, RUN, T0 + 3_600_000, None, since))
    engine.dispose()
    monkeypatch.setattr(wmon.queries, "now_ms", lambda: T0 + 3_605_000)
    status, out, _ = run_wmon(capsys, "queries", "--database-url", store)
    assert status == 0
    # Silent for an hour but for word of its batch in flight: healthy, and running batch 4.
    assert re.search(r"\ntelemetry_windows +healthy +- +5.0 s ago +3 +batch 4 for 1 h +active", out)


def test_queries_as_json_are_the_rows_the_api_gives(
    store: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    now = T0 + 3_600_000
    monkeypatch.setattr(wmon.queries, "now_ms", lambda: now)
    status, out, err = run_wmon(capsys, "queries", "--json", "--database-url", store)
    app = create_app({"DATABASE_URL": store, "CLOCK": lambda: now, "TESTING": True})
    try:
        served = app.test_client().get("/api/queries").get_json()["queries"]
    finally:
        web.stop(app)
    assert (status, err) == (0, "")
    assert json.loads(out) == served
    assert [(q["name"], q["status"], q["stored_status"]) for q in served] == [
        ("rate_dedup", "failed", "failed"),
        ("telemetry_windows", "stalled", "active"),
    ]


def test_queries_are_judged_by_the_rules_given(
    store: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    monkeypatch.setattr(wmon.queries, "now_ms", lambda: T0 + 3_600_000)
    rules = tmp_path / "rules.yml"
    rules.write_text("rules:\n  no_progress: {threshold: 2h}\n")
    monkeypatch.setenv("WMON_ALERT_RULES", str(rules))
    status, out, _ = run_wmon(capsys, "queries", "--database-url", store)
    assert status == 0 and "telemetry_windows  healthy" in out
    missing = tmp_path / "missing.yml"
    status, out, err = run_wmon(capsys, "queries", "--rules", str(missing), "--database-url", store)
    assert (status, out) == (1, "")
    assert err.startswith(f"wmon: error: {missing}: cannot read it")


HEALTHY_WATERMARK = {"watermark_skew_ms": None, "flink_watermark_ms": None, "watermark_state": "ok"}
# Not instrumented: who drove the watermark is not measured.
NO_DRIVER = {"watermark_driver_partition": None, "watermark_driver_record": None}
NO_EVENT_TIMES = dict.fromkeys(
    (
        "records",
        "max_event_time_ms",
        "partition_watermark_ms",
        "time_lag_ms",
        "late_records",
        "late_records_total",
    )
)


def batch_json(batch_id: int) -> dict[str, Any]:
    return {
        "batch_id": batch_id,
        "batch_time_ms": T0 + 500 + 1_000 * batch_id,
        "watermark_ms": WATERMARK,
        "event_time_min_ms": EVENT_MIN,
        "event_time_max_ms": EVENT_MAX,
        "num_input_rows": 10 * (batch_id + 1),
        "input_rows_per_second": 23.6,
        "processed_rows_per_second": 55.0,
        "trigger_duration_ms": 726,
        **HEALTHY_WATERMARK,
        **NO_DRIVER,
    }


# A partition as the API's query page has it too: flags, the late window, future-dated records.
NO_MEASUREMENTS = {
    "idle": False,
    "stalled": False,
    "rewound": False,
    **NO_EVENT_TIMES,
    "late_samples": [],
    "future_records": None,
    "future_lead_ms": None,
    "late_records_window": 0,
    "recent_late_samples": [],
}


def backlog_json(records: int, age_ms: int) -> dict[str, Any]:
    """A partition's backlog whose offsets did not move: a backlog there at the first batch
    stored (stalled), or none."""
    return {
        "backlog_records": records,
        "backlog_age_ms": age_ms if records else 0,
        "backlog_age": "at_least" if records else "none",
        "arrival_rate": 0.0,
        "read_rate": 0.0,
        "backlog_trend": "stable",
        "catch_up_ms": None if records else 0,
        "verdict": "stalled" if records else "ok",
        "status": "stalled" if records else "ok",
    }


def partitions_json(batch_id: int, rows_per_second: float, age_ms: int) -> list[dict[str, Any]]:
    offsets = [("telemetry/0", 1000, 1020, 1024, 4), ("telemetry/1", 940, 960, 960, 0)]
    offsets.append(("telemetry/2", 880, 900, 1500, 600))
    return [
        {
            "batch_id": batch_id,
            "partition": name,
            "topic": "telemetry",
            "start_offset": start,
            "end_offset": end,
            "latest_offset": latest,
            "offset_lag": lag,
            "rows_per_second": rows_per_second,
            **NO_MEASUREMENTS,
            **backlog_json(lag, age_ms),
        }
        for name, start, end, latest, lag in offsets
    ]


DEDUP_BATCH_JSON = {
    "batch_id": 5,
    "batch_time_ms": T0 + 10_000,
    "watermark_ms": T0 + 7_047,
    "event_time_min_ms": T0 + 8_097,
    "event_time_max_ms": T0 + 9_047,
    "num_input_rows": 20,
    "input_rows_per_second": 20.0,
    "processed_rows_per_second": 33.2,
    "trigger_duration_ms": 602,
    **HEALTHY_WATERMARK,
    **NO_DRIVER,
}
DEDUP_PARTITION_JSON = {
    "batch_id": 5,
    "partition": "0",
    "topic": None,
    "start_offset": 3,
    "end_offset": 4,
    "latest_offset": 4,
    "offset_lag": 0,
    "rows_per_second": 1.0,
    **NO_MEASUREMENTS,
    # The rate source's one batch: no backlog, no rates.
    **backlog_json(0, 0) | {"arrival_rate": None, "read_rate": None, "backlog_trend": None},
}
JSON_CASES = [
    (["batches", QUERY, "--limit", "3"], [batch_json(1), batch_json(2), batch_json(3)]),
    (["batches", "rate_dedup"], [DEDUP_BATCH_JSON]),
    (["partitions", "telemetry_windows"], partitions_json(3, 11.8, 59_500)),
    (["partitions", QUERY, "--batch", "2"], partitions_json(2, 15.733333333333333, 2_000)),
    (["partitions", OTHER], [DEDUP_PARTITION_JSON]),
    (["partitions", OTHER, "--batch", "4"], []),
]
JSON_IDS = [
    "batches limit 3 by id",
    "batches of a failed query by name",
    "partitions of the latest batch by name",
    "partitions of batch 2",
    "partitions of a rate source",
    "partitions of a batch not stored",
]


@pytest.mark.parametrize(("argv", "expected"), JSON_CASES, ids=JSON_IDS)
def test_json(
    store: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    expected: Any,
):
    monkeypatch.setattr(wmon.queries, "now_ms", lambda: T0 + 60_000)
    status, out, err = run_wmon(capsys, *argv, "--json", "--database-url", store)
    assert (status, err) == (0, "")
    assert json.loads(out) == expected


def test_a_partition_ahead_of_the_clock_says_so(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = create_engine(database_url)
    write_telemetry(engine)  # telemetry/2 reads a record 2 h 0 min 30 s ahead in batch 3
    engine.dispose()
    argv = ("partitions", "telemetry", "--batch", "3", "--database-url", database_url)
    status, out, _ = run_wmon(capsys, *argv)
    [row] = [line for line in out.splitlines() if "telemetry/2" in line]
    assert status == 0 and "  ahead of the clock by 2 h  " in row


def test_db_upgrade_migrates_once_then_says_already_at(
    empty_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    shown, head = display_url(parse_url(empty_database_url)), head_revision()
    upgraded = f"store {shown}: upgraded from empty to revision {head}\n"
    upgrade = ("db", "upgrade", "--database-url", empty_database_url)
    assert run_wmon(capsys, *upgrade) == (0, upgraded, "")
    already = f"store {shown}: already at revision {head}\n"
    assert run_wmon(capsys, *upgrade) == (0, already, "")
    engine = create_engine(empty_database_url)
    assert current_revision(engine) == head
    engine.dispose()


BAD_ARGUMENTS = [
    (
        ["batches", QUERY, "--limit", "0"],
        "wmon batches: error: argument --limit: must be between 1 and 1000000, not 0"
        " (see wmon batches --help)",
    ),
    (
        ["batches", QUERY, "--limit", "x"],
        "wmon batches: error: argument --limit: must be a whole number, not 'x'"
        " (see wmon batches --help)",
    ),
    (
        ["watch"],
        "wmon: error: argument command: invalid choice: 'watch' (choose from 'db', 'prune',"
        " 'queries', 'batches', 'partitions', 'state', 'timers', 'advise', 'alerts', 'generate',"
        " 'demo', 'serve', 'ingest', 'rejected', 'spark-conf', 'submit', 'pipelines')"
        " (see wmon --help)",
    ),
    ([], "wmon: error: the following arguments are required: command (see wmon --help)"),
    (
        ["batches"],
        "wmon batches: error: the following arguments are required: query"
        " (see wmon batches --help)",
    ),
    (
        ["partitions"],
        "wmon partitions: error: the following arguments are required: query"
        " (see wmon partitions --help)",
    ),
    (
        ["partitions", QUERY, "--batch", "-1"],
        "wmon partitions: error: argument --batch: must be at least 0, not -1"
        " (see wmon partitions --help)",
    ),
    (
        ["db"],
        "wmon db: error: the following arguments are required: db_command (see wmon db --help)",
    ),
    (
        ["generate", "log", "--partitions", "0"],
        "wmon generate: error: argument --partitions: must be at least 1, not 0"
        " (see wmon generate --help)",
    ),
]
BAD_ARGUMENT_IDS = [
    "limit 0",
    "limit not a number",
    "unknown subcommand",
    "no subcommand",
    "batches without query",
    "partitions without query",
    "batch -1",
    "db without subcommand",
    "generate 0 partitions",
]


# Every number option of every command, past each bound and in the forms Python's int() and
# float() take but the strict reader does not: (the command, its arguments, the reason).
BAD_NUMBERS = [
    ("batches", [QUERY, "--limit", "1000001"], "between 1 and 1000000, not 1000001"),
    (
        "batches",
        [QUERY, "--limit", "99999999999999999999"],
        "between 1 and 1000000, not 99999999999999999999",
    ),
    ("batches", [QUERY, "--limit", "1_000"], "a whole number, not '1_000'"),
    ("batches", [QUERY, "--limit", " 5"], "a whole number, not ' 5'"),
    ("batches", [QUERY, "--limit", "+5"], "a whole number, not '+5'"),
    ("batches", [QUERY, "--limit", "٣"], "a whole number, not '٣'"),
    ("timers", [QUERY, "--limit", "0"], "between 1 and 1000000, not 0"),
    ("timers", [QUERY, "--limit", "1000001"], "between 1 and 1000000, not 1000001"),
    ("alerts", ["--limit", "0"], "between 1 and 1000000, not 0"),
    (
        "alerts",
        ["--limit", "99999999999999999999"],
        "between 1 and 1000000, not 99999999999999999999",
    ),
    ("partitions", [QUERY, "--batch", "1e3"], "a whole number, not '1e3'"),
    ("alerts run", ["--interval", "inf"], "a number such as 2 or 0.25, not 'inf'"),
    ("alerts run", ["--interval", "nan"], "a number such as 2 or 0.25, not 'nan'"),
    ("alerts run", ["--interval", "1e3"], "a number such as 2 or 0.25, not '1e3'"),
    ("alerts run", ["--interval", "0"], "between 0.1 and 86400, not 0"),
    ("alerts run", ["--interval", "0.05"], "between 0.1 and 86400, not 0.05"),
    ("alerts run", ["--interval", "86400.5"], "between 0.1 and 86400, not 86400.5"),
    ("prune", ["--days", "0"], "between 1 and 36500, not 0"),
    ("prune", ["--days", "36501"], "between 1 and 36500, not 36501"),
    ("serve", ["--port", "65536"], "between 1 and 65535, not 65536"),
    ("serve", ["--port", "99999999999999999999"], "between 1 and 65535, not 99999999999999999999"),
    ("demo", ["--port", "0"], "between 1 and 65535, not 0"),
    ("generate", ["log", "--rate", "inf"], "a number such as 2 or 0.25, not 'inf'"),
    ("generate", ["log", "--rate", "0"], "between 0.001 and 1000000000, not 0"),
]


@pytest.mark.parametrize(
    ("command", "args", "reason"),
    BAD_NUMBERS,
    ids=[f"{command} {' '.join(args[-2:])}" for command, args, _ in BAD_NUMBERS],
)
def test_a_number_out_of_bounds_or_malformed_is_one_line_and_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, args: list[str], reason: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*command.split(), *args])
    assert exit_info.value.code == 2
    expected = f"wmon {command}: error: argument {args[-2]}: must be {reason}"
    assert capsys.readouterr() == ("", f"{expected} (see wmon {command} --help)\n")
    assert list(tmp_path.iterdir()) == []


def test_a_batch_id_past_64_bits_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["partitions", QUERY, "--batch", "9223372036854775808"])
    assert exit_info.value.code == 2
    assert re.fullmatch(
        r"wmon partitions: error: argument --batch: must be [^\n]*, not 9223372036854775808"
        r" \(see wmon partitions --help\)\n",
        capsys.readouterr().err,
    )


@pytest.mark.parametrize(
    ("argv", "option", "value"),
    [
        (["batches", QUERY, "--limit", "1000000"], "limit", 1_000_000),
        (["timers", QUERY, "--limit", "1"], "limit", 1),
        (["alerts", "--limit", "1000000"], "limit", 1_000_000),
        (["partitions", QUERY, "--batch", "9223372036854775807"], "batch", 2**63 - 1),
        (["partitions", QUERY, "--batch", "0"], "batch", 0),
        (["alerts", "run", "--interval", "0.1"], "interval", 0.1),
        (["alerts", "run", "--interval", "86400"], "interval", 86_400.0),
        (["prune", "--days", "36500"], "days", 36_500),
        (["prune", "--days", "1"], "days", 1),
        (["serve", "--port", "65535"], "port", 65_535),
        (["serve", "--port", "1"], "port", 1),
    ],
    ids=[
        "limit 1000000",
        "timers limit 1",
        "alerts limit 1000000",
        "batch 2^63-1",
        "batch 0",
        "interval 0.1",
        "interval a day",
        "days 36500",
        "days 1",
        "port 65535",
        "port 1",
    ],
)
def test_the_bounds_themselves_are_accepted(argv: list[str], option: str, value: object) -> None:
    assert getattr(build_parser().parse_args(argv), option) == value


@pytest.mark.parametrize(("argv", "message"), BAD_ARGUMENTS, ids=BAD_ARGUMENT_IDS)
def test_a_bad_argument_is_one_line_and_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert capsys.readouterr() == ("", message + "\n")
    assert list(tmp_path.iterdir()) == []  # not even the default store was opened


@pytest.mark.parametrize(
    "argv",
    [["batches", "no_such_query"], ["partitions", "33333333-3333-3333-3333-333333333333"]],
    ids=["batches by unknown name", "partitions by unknown id"],
)
def test_an_unknown_query_is_an_error_and_changes_nothing(
    store: str, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    before = snapshot(store)
    status, out, err = run_wmon(capsys, *argv, "--database-url", store)
    message = f"wmon: error: no query with id or name {argv[1]!r} (see `wmon queries`)\n"
    assert (status, out, err) == (1, "", message)
    assert snapshot(store) == before


@pytest.mark.parametrize("command", ["queries", "batches"])
def test_an_unmigrated_store_is_an_error_and_stays_unmigrated(
    empty_database_url: str, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    parsed = parse_url(empty_database_url)
    if parsed.get_backend_name() == "sqlite":
        sqlite3.connect(parsed.database).close()  # an existing file with no schema
    argv = ["queries"] if command == "queries" else ["batches", QUERY]
    status, out, err = run_wmon(capsys, *argv, "--database-url", empty_database_url)
    message = f"wmon: error: store {display_url(parsed)} is not migrated: run `wmon db upgrade`\n"
    assert (status, out, err) == (1, "", message)
    assert snapshot(empty_database_url) == {}


def missing_file(folder: Path) -> tuple[str, str]:
    path = folder / "missing" / "wmon.db"
    return (
        f"sqlite:///{path}",
        f"no store at {path} (run `wmon db upgrade` or attach a job)",
    )


def not_a_database(folder: Path) -> tuple[str, str]:
    path = folder / "notes.db"
    path.write_text("these are my notes, not a database\n")
    return f"sqlite:///{path}", "cannot use the store: file is not a database"


def unreachable_postgresql(_folder: Path) -> tuple[str, str]:
    port = closed_port()
    return (
        f"postgresql://postgres@127.0.0.1:{port}/wmon",
        f'cannot use the store: connection failed: connection to server at "127.0.0.1",'
        f" port {port} failed: Connection refused",
    )


def fixed(url: str, message: str) -> Callable[[Path], tuple[str, str]]:
    return lambda _folder: (url, message)


def bad_url(url: str) -> Callable[[Path], tuple[str, str]]:
    example = "(expected e.g. sqlite:///path/to/wmon.db or postgresql://user@host/db)"
    return fixed(url, f"not a database URL: {url!r} {example}")


MYSQL = fixed(
    "mysql://wmon@db/wmon",
    "unsupported database 'mysql' in 'mysql://wmon@db/wmon': use one of sqlite, postgresql",
)
BAD_STORES = [
    (["queries"], missing_file),
    (["partitions", QUERY], missing_file),
    (["queries"], not_a_database),
    (["batches", QUERY], unreachable_postgresql),
    (["db", "upgrade"], unreachable_postgresql),
    (["queries"], bad_url("not a url")),
    (["db", "upgrade"], bad_url("not a url")),
    (["queries"], bad_url("postgresql://wmon@db:port/wmon")),
    (["queries"], MYSQL),
    (["db", "upgrade"], MYSQL),
]
BAD_STORE_IDS = [
    "queries on a missing sqlite file",
    "partitions on a missing sqlite file",
    "queries on a file that is not a sqlite database",
    "batches on unreachable postgresql",
    "db upgrade on unreachable postgresql",
    "queries on a malformed url",
    "db upgrade on a malformed url",
    "queries on a url with a malformed port",
    "queries on an unsupported backend",
    "db upgrade on an unsupported backend",
]


def files(folder: Path) -> dict[str, bytes | None]:
    """Every file (with its bytes) and folder (None) under `folder`."""
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
        for p in folder.rglob("*")
    }


@pytest.mark.parametrize(("command", "bad_store"), BAD_STORES, ids=BAD_STORE_IDS)
def test_a_store_that_cannot_be_used_is_one_line_and_status_1(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
    bad_store: Callable[[Path], tuple[str, str]],
) -> None:
    monkeypatch.chdir(tmp_path)
    url, message = bad_store(tmp_path)
    before = files(tmp_path)
    assert run_wmon(capsys, *command, "--database-url", url) == (1, "", f"wmon: error: {message}\n")
    assert files(tmp_path) == before


def test_generate_writes_the_records_it_reports(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "log"
    status, out, err = run_wmon(
        capsys, "generate", str(path), "--partitions", "3", "--records", "120", "--seed", "7"
    )
    assert (status, err) == (0, "")
    first, *rest = out.splitlines()
    assert first == f"wrote 120 records to {path / 'telemetry'}"
    reported = {}
    for line in rest:
        match = re.fullmatch(r"  partition (\d+): (\d+) records", line)
        assert match, line
        reported[int(match[1])] = int(match[2])
    assert sorted(reported) == [0, 1, 2] and sum(reported.values()) == 120
    assert PartitionedLog(path).end_offsets("telemetry") == reported


def test_generate_a_scenario_says_each_partitions_role_and_how_to_read_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "log"
    argv = [
        "generate",
        str(path),
        "--scenario",
        "stalled_partition",
        "--partitions",
        "3",
        "--records",
        "300",
    ]
    status, out, err = run_wmon(capsys, *argv)
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        f"wrote 300 records to {path / 'telemetry'}",
        "  partition 0: 100 records (steady)",
        "  partition 1: 100 records (stalled)",
        "  partition 2: 100 records (steady)",
        """  read it with .option('maxOffsetsPerPartition', '{"0": 33, "1": 0, "2": 33}')""",
    ]
    assert PartitionedLog(path).end_offsets("telemetry") == {0: 100, 1: 100, 2: 100}
