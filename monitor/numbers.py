"""The one strict reader of numbers that come from outside: query strings, URL paths, Socket.IO
events, JSON bodies, command lines, the environment and the rules file.

Only ASCII digits with an optional leading minus sign are whole numbers: no spaces, no `_`,
no `+`, no digits of other scripts, all of which Python's `int()` would take. Every number
has explicit bounds, so nothing past a 64-bit column ever reaches the store.
"""

from __future__ import annotations

import math
import re

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

_WHOLE = re.compile(r"-?[0-9]+")
_MAX_DIGITS = 20
_DECIMAL = re.compile(r"-?[0-9]{1,20}(\.[0-9]{1,20})?")
_SHOWN = 40


class NumberError(ValueError):
    """A number that is malformed or out of bounds; the message names what it was for."""


def shown(value: object) -> str:
    """`value` as Python writes it, for an error message, cut short: hostile input is never
    echoed whole, however many escapes it needs."""
    text = repr(value)
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}..."


def _plain(value: int | float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _bounds(low: int | float, high: int | float, too_low: bool) -> str:
    """The bounds as the broken one is best said: "at least" a floor when there is no real
    ceiling, "at most" a ceiling when there is no real floor, else both."""
    if too_low and high >= INT64_MAX:
        return f"at least {_plain(low)}"
    if not too_low and low <= INT64_MIN:
        return f"at most {_plain(high)}"
    return f"between {_plain(low)} and {_plain(high)}"


def _within(name: str, value: int | float, low: int | float, high: int | float) -> None:
    if not low <= value <= high:
        bounds = _bounds(low, high, value < low)
        raise NumberError(f"{name} must be {bounds}, not {_plain(value)}")


def whole(text: str, name: str, low: int = INT64_MIN, high: int = INT64_MAX) -> int:
    """`text` as a whole number between `low` and `high`."""
    if not _WHOLE.fullmatch(text):
        raise NumberError(f"{name} must be a whole number, not {shown(text)}")
    if len(text.lstrip("-")) > _MAX_DIGITS:
        # Beyond any bound, and not worth converting: int() of a long enough text is slow.
        raise NumberError(f"{name} must be {_bounds(low, high, text[0] == '-')}, not {shown(text)}")
    value = int(text)
    _within(name, value, low, high)
    return value


def decimal(text: str, name: str, low: float, high: float) -> float:
    """`text` as a finite decimal number (`2`, `0.25`) between `low` and `high`."""
    if not _DECIMAL.fullmatch(text):
        raise NumberError(f"{name} must be a number such as 2 or 0.25, not {shown(text)}")
    value = float(text)
    _within(name, value, low, high)
    return value


def json_whole(value: object, name: str, low: int = INT64_MIN, high: int = INT64_MAX) -> int:
    """A JSON value that must be a whole number between `low` and `high` (not a bool or a
    float, however round)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise NumberError(f"{name} must be a whole number, not {shown(value)}")
    _within(name, value, low, high)
    return value


def json_number(value: object, name: str, low: float, high: float) -> float:
    """A JSON value that must be a finite number between `low` and `high`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NumberError(f"{name} must be a number, not {shown(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise NumberError(f"{name} must be a finite number, not {value}")
    _within(name, value, low, high)
    return float(value)
