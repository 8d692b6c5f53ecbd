"""`wmon alerts` and `wmon alerts run`: list alerts, evaluate once or on a schedule."""

import json

import pytest

from monitor.alerts.runner import AlertRunner
from monitor.store.engine import display_url
from tests.monitor.alerts.test_delivery import LocalReceiver
from tests.monitor.alerts.test_evaluate import stalled
from wmon.main import build_parser, main


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def stalled_store(engine, database_url):
    stalled(engine)
    return database_url


def test_one_pass_fires_the_stalled_partition_and_lists_it(capsys, stalled_store):
    assert run(capsys, "alerts", "run", "--once", "--database-url", stalled_store)[:2] == (
        0,
        # Evaluated now, years after its batches, the query is also silent and its watermark
        # old: no_progress fires at once, watermark_age waits for its 'for' of a minute.
        "3 transitions\n",
    )
    status, out, _ = run(capsys, "alerts", "--json", "--database-url", stalled_store)
    listed = {(a["rule"], a["partition"], a["state"]) for a in json.loads(out)}
    assert status == 0
    assert listed == {
        ("partition_stalled", "t/1", "firing"),
        ("no_progress", None, "firing"),
        ("watermark_age", None, "pending"),
    }
    status, out, _ = run(capsys, "alerts", "--database-url", stalled_store)
    header, *rows = out.splitlines()
    assert header.split()[:5] == ["id", "state", "severity", "rule", "query"]
    assert sorted(row.split()[1] for row in rows) == ["firing", "firing", "pending"]


def test_a_second_pass_adds_nothing(capsys, stalled_store):
    run(capsys, "alerts", "run", "--once", "--database-url", stalled_store)
    assert run(capsys, "alerts", "run", "--once", "--database-url", stalled_store)[1] == (
        "0 transitions\n"
    )


def test_a_bad_rules_file_is_one_error_line_and_changes_nothing(capsys, stalled_store, tmp_path):
    rules = tmp_path / "rules.yml"
    rules.write_text("rules:\n  late_records: {count: lots}\n")
    argv = ["alerts", "run", "--once", "--rules", str(rules), "--database-url", stalled_store]
    status, out, err = run(capsys, *argv)
    assert (status, out) == (1, "")
    assert err == f"wmon: error: {rules}: line 2: count must be a whole number >= 0, not 'lots'\n"
    assert (
        json.loads(run(capsys, "alerts", "--all", "--json", "--database-url", stalled_store)[1])
        == []
    )


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
        run(
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
    assert {body["alert"]["rule"] for _, body in receiver.received} == {
        "partition_stalled",
        "no_progress",
    }


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
    status, out, _ = run(capsys, *argv, *(["--rules", str(rules)] if with_rules else []))
    assert status == 0
    assert out.splitlines() == [
        f"wmon: evaluating alert rules every 2.5 s in {display_url(stalled_store)}",
        f"wmon: rules from {rules if with_rules else 'the built-in defaults'}; Ctrl-C stops",
    ]
    assert runs == [(2.5, False)]
