"""The one reader of numbers from outside: ASCII digits, explicit bounds, clear errors."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.numbers import (
    INT64_MAX,
    INT64_MIN,
    NumberError,
    decimal,
    json_number,
    json_whole,
    shown,
    whole,
)

PROPERTY = settings(max_examples=300, deadline=None, derandomize=True)


@pytest.mark.parametrize(
    ("text", "value"),
    [("0", 0), ("42", 42), ("-7", -7), (str(INT64_MAX), INT64_MAX), (str(INT64_MIN), INT64_MIN)],
)
def test_whole_reads_ascii_digits(text, value):
    assert whole(text, "n") == value


@pytest.mark.parametrize(
    "text",
    ["", " 1", "1 ", "1_000", "+1", "1.0", "1e3", "\u0661\u0662", "\uff11", "0x10", "--1", "-"],
)
def test_whole_refuses_what_int_would_take_or_is_not_a_number(text):
    with pytest.raises(NumberError, match="^n must be a whole number, not "):
        whole(text, "n")


@pytest.mark.parametrize(
    ("text", "low", "high", "message"),
    [
        (
            str(INT64_MAX + 1),
            INT64_MIN,
            INT64_MAX,
            f"n must be at most {INT64_MAX}, not ",
        ),
        ("0", 1, INT64_MAX, "n must be at least 1, not 0"),
        ("11", 1, 10, "n must be between 1 and 10, not 11"),
        ("9" * 5_000, 1, 10, "n must be between 1 and 10, not '9999999999"),
    ],
)
def test_whole_bounds_are_explicit(text, low, high, message):
    with pytest.raises(NumberError) as raised:
        whole(text, "n", low, high)
    assert str(raised.value).startswith(message)


def test_decimal_reads_plain_decimals_only():
    assert decimal("0.25", "interval", 0.01, 60) == 0.25
    for text in ("inf", "nan", "1e3", "1_0", " 1", ".5", "\u0661"):
        with pytest.raises(NumberError, match="interval must be a number such as 2 or 0.25"):
            decimal(text, "interval", 0.01, 60)
    with pytest.raises(NumberError, match="interval must be between 0.01 and 60, not 61"):
        decimal("61", "interval", 0.01, 60)


def test_json_values_must_have_the_right_type_and_bounds():
    assert json_whole(5, "minutes", 1, 10) == 5
    assert json_number(0.5, "ratio", 0, 1) == 0.5
    for value in (True, 5.0, "5", None, [5]):
        with pytest.raises(NumberError, match="^minutes must be a whole number"):
            json_whole(value, "minutes", 1, 10)
    for value in (math.inf, -math.inf, math.nan):
        with pytest.raises(NumberError, match="^ratio must be a finite number"):
            json_number(value, "ratio", 0, 1)
    with pytest.raises(NumberError, match="minutes must be between 1 and 10, not 11"):
        json_whole(11, "minutes", 1, 10)


def test_shown_cuts_hostile_text_short():
    assert shown("abc") == "'abc'"
    assert shown("x" * 10_000) == "'" + "x" * 39 + "..."
    assert shown("\x00" * 1_000) == "'" + "\\x00" * 9 + "\\x0..."
    assert shown([1, 2]) == "[1, 2]"


@PROPERTY
@given(st.text(max_size=30), st.integers(-(10**6), 10**6), st.integers(0, 10**6))
def test_whole_returns_a_bounded_int_or_raises_its_own_error(text, low, span):
    try:
        value = whole(text, "n", low, low + span)
    except NumberError as error:
        assert str(error).startswith("n must be ")
    else:
        assert text.isascii() and int(text) == value and low <= value <= low + span


@PROPERTY
@given(st.text(max_size=30))
def test_decimal_returns_a_finite_bounded_float_or_raises_its_own_error(text):
    try:
        value = decimal(text, "x", -1_000.0, 1_000.0)
    except NumberError as error:
        assert str(error).startswith("x must be ")
    else:
        assert text.isascii() and math.isfinite(value) and -1_000 <= value <= 1_000
