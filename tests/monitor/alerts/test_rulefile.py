"""The rules file: defaults overridden for all queries and per name; bad files named by line."""

import os
import re
import subprocess
from pathlib import Path

import pytest

from monitor.alerts.lifecycle import Timing
from monitor.alerts.rulefile import MAX_FILE_BYTES, RulesFileError, load_rules, load_rules_file
from monitor.alerts.rules import RULES

GOOD = """\
rules:
  watermark_skew: {threshold: 2m, for: 30s, keep_firing_for: 5m}
  partition_idle: {enabled: false}
queries:
  - match: "scooters_*"
    rules:
      late_records: {count: 1000, share: 0.5%}
      partition_idle: {enabled: true, for: 500ms}
  - match: "scooters_stalled_*"
    rules:
      late_records: {count: 5}
"""


def test_built_in_defaults_without_a_file():
    configs = load_rules("").for_query("orders")
    assert set(configs) == set(RULES)
    skew = configs["watermark_skew"]
    assert (skew.enabled, skew.timing, skew.params) == (
        True,
        Timing(for_ms=120_000, keep_firing_ms=120_000),
        {"threshold": 300_000},
    )


def test_settings_for_every_query_then_per_name_in_order():
    rules = load_rules(GOOD)
    orders = rules.for_query("orders")
    assert orders["watermark_skew"].params == {"threshold": 120_000}
    assert orders["watermark_skew"].timing == Timing(for_ms=30_000, keep_firing_ms=300_000)
    assert not orders["partition_idle"].enabled
    assert orders["late_records"].params == {"count": 100, "share": 100, "window": 300_000}
    backfill = rules.for_query("scooters_skewed_backfill")
    assert backfill["partition_idle"].enabled
    assert backfill["partition_idle"].timing.for_ms == 500
    assert backfill["late_records"].params == {"count": 1000, "share": 50, "window": 300_000}
    assert rules.for_query("scooters_stalled_partition")["late_records"].params["count"] == 5
    assert not rules.for_query(None)["partition_idle"].enabled


def test_a_fleet_s_settings_are_each_query_s_own():
    rules = load_rules(GOOD)
    names = ["orders", "scooters_a", None, "scooters_stalled_b", "scooters_b", "orders"]
    assert rules.for_queries(names) == [rules.for_query(name) for name in names]
    first, *_, last = rules.for_queries(names)
    assert first is last, "worked out once for the queries that match the same patterns"


@pytest.mark.parametrize(
    "text, message",
    [
        ("rules: [1, 2", "line 1: not YAML"),
        ("alerts: {}\n", "line 1: unknown key 'alerts' in the file"),
        (
            "rules:\n  watermark_skew: {threshold: 2 minutes}\n",
            "line 2: threshold must be a duration",
        ),
        ("rules:\n  late_records: {count: -1}\n", "line 2: count must be at least 0, not -1"),
        ("rules:\n  late_records: {count: true}\n", "line 2: count must be a whole number"),
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


@pytest.mark.parametrize(
    "setting, params",
    [
        ("{window: 0}", {"count": 100, "share": 100, "window": 0}),
        ("{window: 500ms}", {"count": 100, "share": 100, "window": 500}),
        ("{window: 365d}", {"count": 100, "share": 100, "window": 31_536_000_000}),
        ("{window: 8760h}", {"count": 100, "share": 100, "window": 31_536_000_000}),
        ("{window: 31536000000ms}", {"count": 100, "share": 100, "window": 31_536_000_000}),
        ("{window: 0005m}", {"count": 100, "share": 100, "window": 300_000}),
        ("{count: '12'}", {"count": 12, "share": 100, "window": 300_000}),
        ("{count: 9223372036854775807}", {"count": 2**63 - 1, "share": 100, "window": 300_000}),
        ("{share: 0%}", {"count": 100, "share": 0, "window": 300_000}),
        ("{share: 0.25%}", {"count": 100, "share": 25, "window": 300_000}),
        ("{share: 2.5%}", {"count": 100, "share": 250, "window": 300_000}),
        ("{share: 100%}", {"count": 100, "share": 10_000, "window": 300_000}),
    ],
    ids=[
        "zero",
        "ms",
        "365 days",
        "365 days in hours",
        "365 days in ms",
        "leading zeros",
        "quoted count",
        "largest count",
        "no share",
        "a quarter of a percent",
        "a share with one decimal",
        "all",
    ],
)
def test_numbers_within_bounds(setting, params):
    rules = load_rules(f"rules:\n  late_records: {setting}\n")
    assert rules.for_query("q")["late_records"].params == params


@pytest.mark.parametrize(
    "setting, message",
    [
        ("{window: 366d}", "window must be at most 365d, not '366d'"),
        ("{window: 31536000001ms}", "window must be at most 365d, not '31536000001ms'"),
        (
            "{window: 99999999999999999999999d}",
            "window must be at most 365d, not '99999999999999999999999d'",
        ),
        ("{window: ٥m}", "window must be a duration such as 500ms, .*, not '٥m'"),
        ("{window: 5 m}", "window must be a duration such as 500ms, .*, not '5 m'"),
        ("{window: '5m '}", "window must be a duration such as 500ms, .*, not '5m '"),
        ("{window: 1:30}", "window must be a duration such as 500ms, .*, not '1:30'"),
        ("{window: -5m}", "window must be a duration such as 500ms, .*, not '-5m'"),
        ("{window: 5}", "window must be a duration such as 500ms, .*, not '5'"),
        ("{count: 1_000}", "count must be a whole number, not '1_000'"),
        ("{count: 0x10}", "count must be a whole number, not '0x10'"),
        ("{count: +5}", "count must be a whole number, not '\\+5'"),
        ("{count: 1.0}", "count must be a whole number, not '1.0'"),
        ("{count: 9223372036854775808}", "count must be .*, not 9223372036854775808"),
        ("{count: 99999999999999999999999}", "count must be .*, not '9999"),
        ("{share: 1}", "share must be a share such as 1% or 0.25%, not '1'"),
        ("{share: 0.125%}", "share must be a share such as 1% or 0.25%, not '0.125%'"),
        ("{share: 100.01%}", "share must be at most 100%, not '100.01%'"),
        ("{share: 101%}", "share must be .*100.*101"),
        ("{share: 1e2%}", "share must be a share such as 1% or 0.25%, not '1e2%'"),
    ],
    ids=[
        "366 days",
        "a ms past 365 days",
        "23 digits of days",
        "arabic-indic digit",
        "space before the unit",
        "space after the unit",
        "sexagesimal",
        "negative",
        "no unit",
        "underscore",
        "hexadecimal",
        "plus sign",
        "decimal count",
        "count past 64 bits",
        "23-digit count",
        "share without a percent sign",
        "share with three decimals",
        "share a hundredth past all",
        "share past all",
        "share in exponent notation",
    ],
)
def test_numbers_out_of_bounds_or_malformed_name_the_line(setting, message):
    with pytest.raises(RulesFileError, match=f"^rules.yml: line 2: {message}"):
        load_rules(f"rules:\n  late_records: {setting}\n", "rules.yml")


# Nine to the ninth "lol"s, were the aliases expanded.
BILLION_LAUGHS = "queries:\n  - &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"  - &{name} [{', '.join([f'*{previous}'] * 9)}]\n"
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.parametrize(
    "text, message",
    [
        ("- rules\n- queries\n", "line 1: the file must be a mapping"),
        ("just text\n", "line 1: the file must be a mapping"),
        ("[" * 10_000, "line 1: nested deeper than 20 levels"),
        ("rules:\n  " + "{a: " * 30, "line 2: nested deeper than 20 levels"),
        (BILLION_LAUGHS, "line 2: a queries entry must be a mapping"),
        ("queries: &q [*q]\n", "line 1: a queries entry must be a mapping"),
        ("rules: *nothing\n", "line 1: not YAML: found undefined alias 'nothing'"),
        ("rules: {}\n---\nrules: {}\n", "line 2: not YAML: but found another document"),
        ("rules:\n  \x00: {}\n", "line 2: not YAML: unacceptable character #x0000"),
        ("rules:\n  \ud800: {}\n", "line 2: not YAML: unacceptable character #xd800"),
        ("x" * 1_000 + ": 1\n", "line 1: unknown key 'x{39}\\.\\.\\. in the file"),
        (
            "rules:\n  query_failed: {enabled: !!timestamp 2026-02-30}\n",
            "line 2: enabled is not a value: day is out of range for month$",
        ),
    ],
    ids=[
        "a list",
        "a scalar",
        "nested 10000 deep",
        "nested 30 deep in rules",
        "alias bomb",
        "recursive alias",
        "undefined alias",
        "two documents",
        "NUL character",
        "lone surrogate",
        "long key cut short",
        "impossible date",
    ],
)
def test_an_odd_document_is_the_rules_files_own_error_in_one_line(text, message):
    with pytest.raises(RulesFileError, match=f"^rules.yml: {message}") as error:
        load_rules(text, "rules.yml")
    assert "\n" not in str(error.value) and len(str(error.value)) < 200


def test_a_file_at_the_size_cap_is_read(tmp_path):
    path = tmp_path / "rules.yml"
    path.write_text("rules: {}\n#" + "x" * (MAX_FILE_BYTES - 12) + "\n")
    assert path.stat().st_size == MAX_FILE_BYTES
    assert load_rules_file(path).for_query("q") == load_rules("").for_query("q")


def write_bytes(path, data):
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: write_bytes(p, b"rules: {}\n" + b"#" * MAX_FILE_BYTES), "larger than 256 KiB"),
        (lambda p: Path("/dev/zero"), "is a character device, not a regular file"),
        (lambda p: write_bytes(p, b"rules:\n  \xff\xfe: {}\n"), "line 2: not UTF-8 text"),
        (lambda p: write_bytes(p, b"\x89PNG\r\n\x1a\n\x00\x00"), "line 1: not UTF-8 text"),
        (lambda p: p.parent, "is a directory, not a regular file"),
        (lambda p: p.parent / "missing.yml", "cannot read it: No such file or directory"),
        (lambda p: (os.mkfifo(p), p)[1], "is a FIFO, not a regular file"),
    ],
    ids=[
        "one byte over the cap",
        "a device",
        "latin-1",
        "binary",
        "a directory",
        "missing",
        "a fifo",
    ],
)
@pytest.mark.timeout(10)  # a FIFO that nothing writes to blocks a plain open() for good
def test_an_odd_file_is_an_error_naming_the_file(tmp_path, make, message):
    path = make(tmp_path / "rules.yml")
    with pytest.raises(RulesFileError, match=f"^{re.escape(str(path))}: {message}"):
        load_rules_file(path)


@pytest.mark.timeout(10)
def test_a_fifo_being_written_is_refused_without_reading_it(tmp_path):
    fifo = tmp_path / "rules.yml"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", 'exec yes > "$0"', str(fifo)])
    try:
        with pytest.raises(RulesFileError, match=f"^{re.escape(str(fifo))}: is a FIFO, not a"):
            load_rules_file(fifo)
    finally:
        writer.kill()
        writer.wait(timeout=10)
