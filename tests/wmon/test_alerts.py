"""`wmon alerts` and `wmon alerts run`: list alerts, evaluate once or on a schedule."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from monitor.alerts.rulefile import MAX_FILE_BYTES
from monitor.alerts.runner import AlertRunner
from monitor.store.schema.engine import display_url
from tests.support.alert_scenarios import stalled
from tests.support.cli import run_wmon
from tests.support.receivers import LocalReceiver
from wmon.main import build_parser, main


@pytest.fixture
def stalled_store(engine, database_url):
    stalled(engine)
    return database_url


def test_one_pass_raises_the_stall_and_lists_the_most_urgent_first(capsys, stalled_store):
    assert run_wmon(capsys, "alerts", "run", "--once", "--database-url", stalled_store)[:2] == (
        0,
        # Evaluated now, years after its batches, the query is also silent and its watermark
        # old: no_progress fires at once; the stall and the watermark's age wait for their
        # 'for' of a minute.
        "3 transitions\n",
    )
    status, out, _ = run_wmon(capsys, "alerts", "--json", "--database-url", stalled_store)
    listed = {(a["rule"], tuple(a["partitions"]), a["state"]) for a in json.loads(out)}
    assert status == 0
    assert listed == {
        ("partition_stalled", ("t/1",), "pending"),
        ("no_progress", (), "firing"),
        ("watermark_age", (), "pending"),
    }
    status, out, _ = run_wmon(capsys, "alerts", "--database-url", stalled_store)
    header, *lines = out.splitlines()
    rows = [line for line in lines if line[:1].isdigit()]
    said = " ".join(line for line in lines if line not in rows)
    assert header.split()[:5] == ["id", "state", "severity", "rule", "query"]
    assert [row.split()[1:4] for row in rows][0] == ["firing", "critical", "no_progress"]
    assert sorted(row.split()[1] for row in rows) == ["firing", "pending", "pending"]
    # The pass is over and no process evaluates now: the list says as of when it is.
    assert said.startswith("No process evaluates the alert rules now: these alerts are as of")


def test_a_second_pass_adds_nothing(capsys, stalled_store):
    run_wmon(capsys, "alerts", "run", "--once", "--database-url", stalled_store)
    assert run_wmon(capsys, "alerts", "run", "--once", "--database-url", stalled_store)[1] == (
        "0 transitions\n"
    )


def test_a_bad_rules_file_is_one_error_line_and_changes_nothing(capsys, stalled_store, tmp_path):
    rules = tmp_path / "rules.yml"
    rules.write_text("rules:\n  late_records: {count: lots}\n")
    argv = ["alerts", "run", "--once", "--rules", str(rules), "--database-url", stalled_store]
    status, out, err = run_wmon(capsys, *argv)
    assert (status, out) == (1, "")
    assert err == f"wmon: error: {rules}: line 2: count must be a whole number, not 'lots'\n"
    assert (
        json.loads(
            run_wmon(capsys, "alerts", "--all", "--json", "--database-url", stalled_store)[1]
        )
        == []
    )


@pytest.fixture
def sqlite_store(tmp_path, capsys):
    """A migrated SQLite store, empty."""
    url = f"sqlite:///{tmp_path / 'wmon.db'}"
    assert run_wmon(capsys, "db", "upgrade", "--database-url", url)[0] == 0
    return url


def write(path, data):
    path.write_bytes(data)
    return path


def fifo_fed_by_yes(path, request):
    """A FIFO that `yes` writes to without end, until the test is over."""
    os.mkfifo(path)
    writer = subprocess.Popen(["sh", "-c", 'exec yes > "$0"', str(path)])
    request.addfinalizer(lambda: (writer.kill(), writer.wait(timeout=10)))
    return path


ODD_RULES_FILES = [
    (lambda p, r: write(p, b"#" * (MAX_FILE_BYTES + 1)), "larger than 256 KiB: not a rules file"),
    (lambda p, r: Path("/dev/zero"), "is a character device, not a regular file"),
    (fifo_fed_by_yes, "is a FIFO, not a regular file"),
    (lambda p, r: write(p, b"\x89PNG\r\n\x1a\n\x00"), "line 1: not UTF-8 text"),
    (lambda p, r: p.parent, "is a directory, not a regular file"),
    (lambda p, r: write(p, b"- rules\n- queries\n"), "line 1: the file must be a mapping"),
    (lambda p, r: write(p, b"[" * 100_000), "line 1: nested deeper than 20 levels"),
    (
        lambda p, r: write(p, b"rules:\n  rewound: {window: 99999999999999999999999d}\n"),
        "line 2: window must be at most 365d, not '99999999999999999999999d'",
    ),
    (
        lambda p, r: write(p, b"rules:\n  offset_lag: {threshold: 1_000}\n"),
        "line 2: threshold must be a whole number, not '1_000'",
    ),
]


@pytest.mark.parametrize(
    ("make", "problem"),
    ODD_RULES_FILES,
    ids=[
        "over the cap",
        "a device",
        "fifo fed by yes",
        "binary",
        "directory",
        "a list",
        "nested",
        "window past 365 days",
        "count with underscore",
    ],
)
def test_an_odd_rules_file_is_one_error_line_naming_it(
    capsys, sqlite_store, tmp_path, request, make, problem
):
    rules = make(tmp_path / "rules.yml", request)
    argv = ["alerts", "run", "--once", "--rules", str(rules), "--database-url", sqlite_store]
    assert run_wmon(capsys, *argv) == (1, "", f"wmon: error: {rules}: {problem}\n")


def test_bad_arguments_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["alerts", "run", "--interval", "0"])
    assert exit_.value.code == 2


def test_the_store_may_be_named_before_or_after_run():
    parser = build_parser()
    assert parser.parse_args(["alerts", "--database-url", "x", "run"]).database_url == "x"
    assert parser.parse_args(["alerts", "run", "--database-url", "y"]).database_url == "y"


def test_one_pass_also_sends_what_it_queued(capsys, stalled_store, engine, tmp_path):
    receiver = LocalReceiver()
    try:
        rules = tmp_path / "rules.yml"
        rules.write_text(f"receivers:\n  - {{name: ops, kind: webhook, url: '{receiver.url}'}}\n")
        run_wmon(
            capsys,
            "alerts",
            "run",
            "--once",
            "--rules",
            str(rules),
            "--database-url",
            stalled_store,
        )
    finally:
        receiver.close()
    # The query is silent: its stall, pending anyway, is caused by that and not told.
    assert {body["alert"]["rule"] for _, body in receiver.received} == {"no_progress"}


@pytest.mark.parametrize("with_rules", [False, True], ids=["defaults", "rules file"])
def test_on_a_schedule_it_says_where_and_with_which_rules(
    capsys, stalled_store, tmp_path, monkeypatch, with_rules
):
    monkeypatch.delenv("WMON_ALERT_RULES", raising=False)
    runs = []
    monkeypatch.setattr(
        AlertRunner, "run", lambda runner, stop: runs.append((runner.interval_s, stop.is_set()))
    )
    rules = tmp_path / "rules.yml"
    rules.write_text("rules: {}\n")
    argv = ["alerts", "run", "--interval", "2.5", "--database-url", stalled_store]
    status, out, _ = run_wmon(capsys, *argv, *(["--rules", str(rules)] if with_rules else []))
    assert status == 0
    assert out.splitlines() == [
        f"wmon: evaluating alert rules every 2.5 s in {display_url(stalled_store)}",
        f"wmon: rules from {rules if with_rules else 'the built-in defaults'}; Ctrl-C stops",
    ]
    assert runs == [(2.5, False)]
