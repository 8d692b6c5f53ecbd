"""The rules file: defaults overridden for all queries and per name; bad files named by line."""

import pytest

from monitor.alerts.rulefile import RulesFileError, load_rules, load_rules_file
from monitor.alerts.rules import RULES

GOOD = """\
rules:
  watermark_skew: {threshold: 2m, for: 30s}
  partition_idle: {enabled: false}
queries:
  - match: "scooters_*"
    rules:
      late_records: {count: 100}
      partition_idle: {enabled: true, for: 500ms}
  - match: "scooters_stalled_*"
    rules:
      late_records: {count: 5}
"""


def test_built_in_defaults_without_a_file():
    configs = load_rules("").for_query("orders")
    assert set(configs) == set(RULES)
    skew = configs["watermark_skew"]
    assert (skew.enabled, skew.for_ms, skew.params) == (True, 60_000, {"threshold": 300_000})


def test_settings_for_every_query_then_per_name_in_order():
    rules = load_rules(GOOD)
    orders = rules.for_query("orders")
    assert orders["watermark_skew"].params == {"threshold": 120_000}
    assert orders["watermark_skew"].for_ms == 30_000
    assert not orders["partition_idle"].enabled
    assert orders["late_records"].params == {"count": 0, "window": 300_000}
    backfill = rules.for_query("scooters_skewed_backfill")
    assert backfill["partition_idle"].enabled and backfill["partition_idle"].for_ms == 500
    assert backfill["late_records"].params["count"] == 100
    assert rules.for_query("scooters_stalled_partition")["late_records"].params["count"] == 5
    assert not rules.for_query(None)["partition_idle"].enabled


@pytest.mark.parametrize(
    "text, message",
    [
        ("rules: [1, 2", "line 1: not YAML"),
        ("alerts: {}\n", "line 1: unknown key 'alerts' in the file"),
        (
            "rules:\n  watermark_skew: {threshold: 2 minutes}\n",
            "line 2: threshold must be a duration",
        ),
        ("rules:\n  late_records: {count: -1}\n", "line 2: count must be a whole number >= 0"),
        ("rules:\n  late_records: {count: true}\n", "line 2: count must be a whole number >= 0"),
        ("rules:\n  x: {}\n  no_such_rule: {}\n", "line 2: no rule named 'x'"),
        ("rules:\n  offset_lag:\n    for: 1m\n    treshold: 5\n", "line 4: unknown key 'treshold'"),
        ("rules:\n  partition_idle: {enabled: maybe}\n", "line 2: enabled must be true or false"),
        ("queries:\n  - match: a*\n", "line 2: a queries entry needs both match and rules"),
        ("queries: {match: a}\n", "line 1: queries must be a list"),
        (
            "rules:\n  query_failed: {}\n  query_failed: {}\n",
            "line 3: 'query_failed' appears twice",
        ),
        ("rules:\n  watermark_age: {for: [1]}\n", "line 2: for must be a single value"),
        ("rules:\n  offset_lag: {threshold: !!int abc}\n", "line 2: threshold is not a value"),
        ("rules:\n  offset_lag: {threshold: !odd 5}\n", "line 2: threshold is not a value"),
    ],
    ids=[
        "not-yaml",
        "unknown-section",
        "duration-without-unit",
        "negative-count",
        "boolean-count",
        "unknown-rule",
        "misspelt-parameter",
        "not-a-boolean",
        "entry-without-rules",
        "queries-not-a-list",
        "rule-twice",
        "list-for-a-duration",
        "bad-int-tag",
        "unknown-tag",
    ],
)
def test_a_bad_file_names_the_line_and_the_problem(text, message):
    with pytest.raises(RulesFileError, match=f"^rules.yml: {message}"):
        load_rules(text, "rules.yml")


def test_a_file_that_cannot_be_read(tmp_path):
    with pytest.raises(RulesFileError, match="cannot read it"):
        load_rules_file(tmp_path / "missing.yml")


def test_a_file_is_read_from_disk(tmp_path):
    path = tmp_path / "rules.yml"
    path.write_text(GOOD)
    assert not load_rules_file(path).for_query("orders")["partition_idle"].enabled


def test_receivers():
    rules = load_rules(
        "receivers:\n"
        "  - {name: ops, kind: webhook, url: 'https://ops.example.com/hook'}\n"
        "  - {name: chat, kind: slack, url: 'http://127.0.0.1:9000/slack'}\n"
    )
    assert [(r.name, r.kind, r.url) for r in rules.receivers] == [
        ("ops", "webhook", "https://ops.example.com/hook"),
        ("chat", "slack", "http://127.0.0.1:9000/slack"),
    ]


@pytest.mark.parametrize(
    "entry, message",
    [
        ("{name: a, kind: email, url: 'http://x'}", "line 2: kind must be one of webhook, slack"),
        ("{name: a, kind: slack, url: 'ftp://x'}", "line 2: url must be an http:// or https://"),
        (
            "{name: a, kind: slack, url: 'http://h:80x/'}",
            "line 2: url must be an http:// or https://",
        ),
        ("{name: a, kind: slack}", "line 2: a receiver needs name, kind and url"),
    ],
    ids=["unknown-kind", "not-http", "bad-port", "no-url"],
)
def test_a_bad_receiver_names_the_line(entry, message):
    with pytest.raises(RulesFileError, match=f"^rules.yml: {message}"):
        load_rules(f"receivers:\n  - {entry}\n", "rules.yml")


def test_two_receivers_with_one_name():
    text = (
        "receivers:\n"
        "  - {name: a, kind: slack, url: 'http://x'}\n"
        "  - {name: a, kind: webhook, url: 'http://y'}\n"
    )
    with pytest.raises(RulesFileError, match="line 3: two receivers are called 'a'"):
        load_rules(text, "rules.yml")
