"""Read and check the API's query-string parameters; a bad one raises BadParameter."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone

from monitor.store.history import MAX_POINTS, Window

DEFAULT_POINTS = 500
DEFAULT_RANGE_MS = 3_600_000
MAX_LIMIT = 5_000


class BadParameter(ValueError):
    """A query-string parameter is malformed or out of range; the message names it."""


def epoch_ms(name: str, text: str) -> int:
    """A time given as epoch milliseconds or as ISO 8601 (UTC unless it says otherwise)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise BadParameter(
            f"{name} must be epoch milliseconds or an ISO 8601 time, not {text!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def bounded(args: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """A whole number between `low` and `high`, `default` when absent."""
    text = args.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise BadParameter(f"{name} must be a whole number, not {text!r}") from None
    if not low <= value <= high:
        raise BadParameter(f"{name} must be between {low} and {high}, not {value}")
    return value


def time_range(args: Mapping[str, str], default_to_ms: int) -> tuple[int, int]:
    """`from` and `to` as a half-open range; by default the hour up to `default_to_ms`."""
    to_ms = epoch_ms("to", args["to"]) if "to" in args else default_to_ms
    from_ms = epoch_ms("from", args["from"]) if "from" in args else to_ms - DEFAULT_RANGE_MS
    if from_ms >= to_ms:
        raise BadParameter(f"from ({from_ms}) must be before to ({to_ms})")
    return from_ms, to_ms


def window(args: Mapping[str, str], default_to_ms: int) -> Window:
    """The time range and the number of points of a downsampled series."""
    from_ms, to_ms = time_range(args, default_to_ms)
    return Window(from_ms, to_ms, bounded(args, "points", DEFAULT_POINTS, 1, MAX_POINTS))
