"""Text from jobs made storable once, where events come in."""

import pytest

from monitor.collect.texts import short_name, storable, storable_document


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("telemetry/3", "telemetry/3"),
        ("a\x00b", "a\\x00b"),
        ("\ud800x\udfff", "\\ud800x\\udfff"),
        ("ünïcode 中文 🙂", "ünïcode 中文 🙂"),
        ("tab\tand\x1b escape", "tab\tand\x1b escape"),
    ],
    ids=["plain", "nul", "lone-surrogates", "unicode", "other-controls-kept"],
)
def test_only_what_no_store_holds_is_escaped(text, expected):
    assert storable(text) == expected
    storable(text).encode("utf-8")


def test_every_string_of_a_document_keys_too():
    doc = {"end\x00": {"t\ud800": [1, "x\x00", None, 2.5, True]}}
    assert storable_document(doc) == {"end\\x00": {"t\\ud800": [1, "x\\x00", None, 2.5, True]}}


@pytest.mark.parametrize(
    ("name", "expected"),
    [(None, None), ("q" * 500, "q" * 500), ("q" * 501, "q" * 499 + "…")],
    ids=["none", "at-the-limit", "past-it"],
)
def test_a_long_name_is_cut_and_marked(name, expected):
    assert short_name(name) == expected
