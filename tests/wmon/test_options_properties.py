"""The command line's number types, fed any text: a number within the bounds, or argparse's
own error with a one-line message; never another exception."""

import argparse
import contextlib
import io
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.config import DAY_S
from monitor.numbers import INT64_MAX
from wmon.commands import MIN_INTERVAL_S
from wmon.main import build_parser
from wmon.options import (
    MAX_DECIMAL,
    MAX_ROWS,
    MIN_POSITIVE,
    at_least,
    decimal_number,
    port_number,
    positive_float,
    whole_number,
)

# What a number on the command line may look like: ASCII digits, a minus sign, a decimal point.
WHOLE = re.compile(r"-?[0-9]+")
DECIMAL = re.compile(r"-?[0-9]+(\.[0-9]+)?")
SETTINGS = settings(max_examples=200, deadline=None, derandomize=True)
# Any text, and text that nearly is a number: signs, spaces, underscores, exponents, other
# scripts' digits, numbers past the bounds.
TEXTS = (
    st.text(max_size=30)
    | st.from_regex(r"[-+ _0-9٣².eE]{0,25}", fullmatch=True)
    | st.integers().map(str)
    | st.floats().map(str)
    | st.sampled_from(
        ["inf", "nan", "1e3", "0x10", "1_000", " 5", "5 ", "٥", "99999999999999999999"]
    )
)
WHOLE_TYPES = [
    (whole_number(1, MAX_ROWS), 1, MAX_ROWS),
    (at_least(0), 0, INT64_MAX),
    (port_number, 1, 65_535),
]
DECIMAL_TYPES = [
    (decimal_number(MIN_INTERVAL_S, DAY_S), MIN_INTERVAL_S, DAY_S),
    (positive_float, MIN_POSITIVE, MAX_DECIMAL),
]
COMMANDS = [
    (["batches", "q", "--limit={}"], WHOLE),
    (["partitions", "q", "--batch={}"], WHOLE),
    (["alerts", "--limit={}"], WHOLE),
    (["alerts", "run", "--interval={}"], DECIMAL),
    (["prune", "--days={}"], WHOLE),
    (["serve", "--port={}"], WHOLE),
]
PARSER = build_parser()


def read(kind, text):
    """What the argparse type `kind` makes of `text`: its value, or None for its error."""
    try:
        return kind(text)
    except argparse.ArgumentTypeError as error:
        # One line; monitor.numbers quotes at most 40 characters of the text.
        message = str(error)
        assert message and "\n" not in message and len(message) < 500, message
        return None


@SETTINGS
@given(text=TEXTS)
def test_a_number_type_reads_a_number_within_its_bounds_or_says_why_not(text):
    for kind, low, high in WHOLE_TYPES:
        value = read(kind, text)
        assert value is None or (WHOLE.fullmatch(text) and low <= int(text) == value <= high)
    for kind, low, high in DECIMAL_TYPES:
        value = read(kind, text)
        assert value is None or (DECIMAL.fullmatch(text) and low <= float(text) == value <= high)


@SETTINGS
@given(number=st.integers(-(2**70), 2**70))
def test_every_whole_number_within_the_bounds_is_read_and_none_outside(number):
    value = read(whole_number(1, MAX_ROWS), str(number))
    assert value == (number if 1 <= number <= MAX_ROWS else None)


@SETTINGS
@given(text=TEXTS)
def test_a_command_line_number_is_parsed_or_one_usage_line_and_status_2(text):
    for argv, form in COMMANDS:
        errors = io.StringIO()
        with contextlib.redirect_stderr(errors):
            try:
                PARSER.parse_args([arg.format(text) for arg in argv])
            except SystemExit as exit_:
                assert exit_.code == 2
                [line] = errors.getvalue().splitlines()
                assert line.startswith("wmon") and ": error: argument --" in line, line
            else:
                assert form.fullmatch(text)
