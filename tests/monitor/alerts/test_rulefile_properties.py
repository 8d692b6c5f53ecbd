"""The rules file fed any text, any bytes and random YAML-shaped documents: a rule set within
the bounds, or the rules file's own one-line error naming it; never another exception."""

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.alerts.rulefile import (
    MAX_DURATION_MS,
    RuleSet,
    RulesFileError,
    load_rules,
    load_rules_file,
)
from monitor.alerts.rules import RULES, Kind
from monitor.numbers import INT64_MAX

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True)
# The words a rules file uses, and some it does not.
KEYS = st.sampled_from(
    [
        "rules",
        "queries",
        "receivers",
        "match",
        "name",
        "kind",
        "url",
        "enabled",
        "for",
        "threshold",
        "window",
        "count",
        "within",
        *RULES,
        "alerts",
        "",
    ]
)
# Numbers as a rules file writes them: right, past the bounds, or malformed.
NUMBERS = st.sampled_from(
    [
        "0",
        "5m",
        "500ms",
        "365d",
        "8760h",
        "12",
        "9223372036854775807",
        "366d",
        "31536000001ms",
        "99999999999999999999999d",
        "9223372036854775808",
        "٥m",
        "1_000",
        "0x10",
        "1:30",
        "-1",
        "inf",
        ".nan",
    ]
)
SCALARS = (
    NUMBERS
    | st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=10)
    | st.sampled_from(["webhook", "slack", "http://127.0.0.1:9000/x", "https://h:99999/", "*"])
)
ANYTHING = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)


def mostly(usual: st.SearchStrategy[Any], other: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`usual` three times in four, else `other` (`|` would weigh each of `other`'s branches
    as much as `usual`)."""
    return st.sampled_from([usual, usual, usual, other]).flatmap(lambda chosen: chosen)


# Documents in the rules file's shape; most values are numbers as a rules file writes them,
# right or wrong.
VALUES = mostly(NUMBERS, SCALARS)


def settings_of(rule: str) -> st.SearchStrategy[dict[str, Any]]:
    """Settings of `rule`, with the names it knows."""
    return st.fixed_dictionaries(
        {},
        optional={
            "enabled": mostly(st.booleans(), SCALARS),
            "for": VALUES,
            **{name: VALUES for name in RULES[rule].params},
        },
    )


RULE_SETTINGS = st.lists(
    st.sampled_from(list(RULES)).flatmap(lambda rule: st.tuples(st.just(rule), settings_of(rule))),
    max_size=2,
).map(dict)
SHAPED = st.fixed_dictionaries(
    {},
    optional={
        "rules": RULE_SETTINGS,
        "queries": st.lists(
            st.fixed_dictionaries({"match": mostly(st.just("*"), SCALARS), "rules": RULE_SETTINGS}),
            max_size=2,
        ),
        "receivers": st.lists(
            st.fixed_dictionaries(
                {
                    "name": mostly(st.sampled_from(["ops", "chat"]), SCALARS),
                    "kind": st.sampled_from(["webhook", "slack"]),
                    "url": mostly(st.just("http://127.0.0.1:9000/x"), SCALARS),
                }
            ),
            max_size=2,
        ),
    },
)
DOCUMENTS = SHAPED | ANYTHING
# YAML's own syntax, for text that is nearly a rules file: anchors, aliases, tags, flow
# collections, documents.
FRAGMENTS = st.sampled_from(
    [
        "rules:",
        "queries:",
        "  - ",
        "  ",
        ": ",
        "{",
        "}",
        "[",
        "]",
        ", ",
        "&a ",
        "*a",
        "!!int ",
        "!!binary ",
        "!odd ",
        "---\n",
        "\n",
        "'",
        '"',
        "#",
        "\t",
        "\x00",
        "5m",
        "count: ",
    ]
)
YAML_TEXT = st.lists(FRAGMENTS | st.text(max_size=5), max_size=30).map("".join)


def dumped(doc: Any, flow: bool) -> str:
    """`doc` as YAML text, in block or flow style."""
    return yaml.safe_dump(doc, default_flow_style=flow, allow_unicode=True)


def within_bounds(rules: RuleSet) -> bool:
    """Every setting the file makes, for all queries and per name, is a whole number within
    the rules file's bounds."""
    for patches in (rules.everywhere, *(patches for _, patches in rules.per_query)):
        for rule, patch in patches.items():
            kinds = {name: kind for name, (kind, _) in RULES[rule].params.items()}
            for name, value in {"for": patch.for_ms or 0, **patch.params}.items():
                high = INT64_MAX if kinds.get(name) is Kind.COUNT else MAX_DURATION_MS
                if not (type(value) is int and 0 <= value <= high):
                    return False
    return True


def rules_or_its_error(read: Any, source: str) -> None:
    """`read()` is a rule set within bounds, or RulesFileError: one line, naming `source`."""
    try:
        rules = read()
    except RulesFileError as error:
        message = str(error)
        assert message.startswith(f"{source}: ") and "\n" not in message, message
        # Cut short: monitor.numbers quotes at most 40 characters of a value.
        assert len(message) < 500 + len(source), message
        return
    assert within_bounds(rules)


@SETTINGS
@given(st.text(max_size=300) | YAML_TEXT)
def test_any_text_is_rules_or_the_rules_files_error(text):
    rules_or_its_error(lambda: load_rules(text, "rules.yml"), "rules.yml")


@SETTINGS
@given(DOCUMENTS, st.booleans())
def test_any_yaml_document_is_rules_or_the_rules_files_error(doc, flow):
    rules_or_its_error(lambda: load_rules(dumped(doc, flow), "rules.yml"), "rules.yml")


@SETTINGS
@given(st.binary(max_size=300) | YAML_TEXT.map(lambda text: text.encode("utf-8", "replace")))
def test_any_bytes_in_a_file_are_rules_or_an_error_naming_the_file(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rules.yml"
        path.write_bytes(data)
        rules_or_its_error(lambda: load_rules_file(path), str(path))
