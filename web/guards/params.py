"""Read and check what a request carries: query-string parameters, ids in paths and JSON
bodies. A bad one raises BadParameter (400), a body of the wrong type 415; numbers go through
:mod:`monitor.numbers` and texts through `text_field`, so nothing the store cannot hold
reaches it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from flask import request
from werkzeug.exceptions import UnsupportedMediaType
from werkzeug.routing import BaseConverter, ValidationError

from monitor.numbers import INT64_MAX, NumberError, shown, whole
from monitor.store.read.history import MAX_POINTS, Window

DEFAULT_POINTS = 500
DEFAULT_RANGE_MS = 3_600_000
MAX_LIMIT = 5_000
# 9999-12-31T23:59:59.999Z, the last moment ISO 8601 writes with four digits.
MAX_EPOCH_MS = 253_402_300_799_999
MAX_BODY_BYTES = 64 * 1024
NAME_LENGTH = 255
COMMENT_LENGTH = 1_000
_ALLOWED_CONTROLS = frozenset("\t\n\r")
_DIGITS = re.compile(r"-?[0-9]+")


class BadParameter(ValueError):
    """A parameter or field is malformed or out of range; the message names it."""


class IdConverter(BaseConverter):
    """`<id:name>` in a route: a row id of ASCII digits that fits a 64-bit column; anything
    else does not match the route (404)."""

    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        """The id as a number."""
        try:
            return whole(value, "id", 1, INT64_MAX)
        except NumberError:
            raise ValidationError() from None

    def to_url(self, value: Any) -> str:
        """The id as written in a path."""
        return str(value)


def bounded(args: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """A whole number between `low` and `high`, `default` when absent."""
    text = args.get(name)
    if text is None:
        return default
    try:
        return whole(text, name, low, high)
    except NumberError as error:
        raise BadParameter(str(error)) from None


def choices(args: Mapping[str, str], name: str, known: Sequence[str]) -> frozenset[str] | None:
    """One or more of `known`, comma-separated; None when absent."""
    text = args.get(name)
    if text is None:
        return None
    wanted = text.split(",")
    for choice in wanted:
        if choice not in known:
            raise BadParameter(
                f"{name} must be one or more of {', '.join(known)}, comma-separated, "
                f"not {shown(choice)}"
            )
    return frozenset(wanted)


def one_of(args: Mapping[str, str], name: str, known: Sequence[str]) -> str | None:
    """One of `known`; None when absent."""
    text = args.get(name)
    if text is not None and text not in known:
        raise BadParameter(f"{name} must be one of {', '.join(known)}, not {shown(text)}")
    return text


def epoch_ms(name: str, text: str) -> int:
    """A time given as epoch milliseconds or as ISO 8601 (UTC unless it says otherwise),
    from 1970 to the end of year 9999."""
    if _DIGITS.fullmatch(text):
        try:
            return whole(text, name, 0, MAX_EPOCH_MS)
        except NumberError as error:
            raise BadParameter(str(error)) from None
    try:
        if not text.isascii():
            raise ValueError(text)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        value = int(moment.timestamp() * 1000)
    except (ValueError, OverflowError):
        raise BadParameter(
            f"{name} must be epoch milliseconds or an ISO 8601 time, not {shown(text)}"
        ) from None
    if not 0 <= value <= MAX_EPOCH_MS:
        raise BadParameter(f"{name} must be between 1970 and the end of 9999, not {shown(text)}")
    return value


def time_range(args: Mapping[str, str], default_to_ms: int) -> tuple[int, int]:
    """`from` and `to` as a half-open range; by default the hour up to `default_to_ms` (before
    1970 if a query's clock put its newest batch there: what was stored is read back)."""
    to_ms = epoch_ms("to", args["to"]) if "to" in args else default_to_ms
    from_ms = epoch_ms("from", args["from"]) if "from" in args else to_ms - DEFAULT_RANGE_MS
    if from_ms >= to_ms:
        raise BadParameter(f"from ({from_ms}) must be before to ({to_ms})")
    return from_ms, to_ms


def window(args: Mapping[str, str], default_to_ms: int) -> Window:
    """The time range and the number of points of a downsampled series."""
    from_ms, to_ms = time_range(args, default_to_ms)
    return Window(from_ms, to_ms, bounded(args, "points", DEFAULT_POINTS, 1, MAX_POINTS))


def json_body() -> dict[str, Any]:
    """The request's JSON object, {} when it has no body. Anything but JSON is 415; a body
    over MAX_BODY_BYTES has been refused with 413 before it is read."""
    data = request.get_data(cache=True)
    if not data:
        return {}
    if request.mimetype != "application/json":
        raise UnsupportedMediaType("the body must be JSON, sent as Content-Type: application/json")
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):
        raise BadParameter("the body is not valid JSON (or is nested too deeply)") from None
    if not isinstance(body, dict):
        raise BadParameter("the body must be a JSON object")
    return body


def text_field(
    body: Mapping[str, Any], name: str, max_length: int, default: str | None = None
) -> str | None:
    """A field that must be non-blank text of at most `max_length` characters, without control
    characters (tabs and line breaks aside) or anything UTF-8 cannot encode."""
    value = body.get(name, default)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise BadParameter(f"{name} must be a non-empty text")
    if len(value) > max_length:
        raise BadParameter(f"{name} must be at most {max_length} characters, not {len(value)}")
    if any(ord(c) < 32 and c not in _ALLOWED_CONTROLS or ord(c) == 127 for c in value):
        raise BadParameter(f"{name} must not contain control characters")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise BadParameter(f"{name} must be valid Unicode text") from None
    return value
