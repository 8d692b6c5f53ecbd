"""Text from jobs as every store can hold it, translated once where events come in.

Spark may name a query or a partition with any string JSON can carry. Two kinds of character
cannot be stored as they are: NUL, which PostgreSQL's text refuses, and a lone surrogate
(`"\\ud800"` in JSON), which is no character at all and cannot be written as UTF-8. Each is
kept as the escape Python writes for it (`\\x00`, `\\ud800`), so that what it was stays
visible; nothing else changes.
"""

from __future__ import annotations

import re
from typing import Any

from monitor.events import MAX_NAME

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _escaped(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]


def storable(text: str) -> str:
    """`text` with NUL and lone surrogates written as their escapes."""
    return _UNSTORABLE.sub(_escaped, text)


def storable_document(value: Any) -> Any:
    """A decoded JSON document with every string in it, keys too, made storable (one no
    deeper than MAX_DEPTH: each level is a call)."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {storable(key): storable_document(item) for key, item in value.items()}
    if isinstance(value, list):
        return [storable_document(item) for item in value]
    return value


# How deeply an event's arrays and objects may nest. Spark's deepest (a progress event's source
# offsets, an observed metric's nested structs) are a few levels; a document past this is
# refused alone, before reading it costs a call per level.
MAX_DEPTH = 64


def deeper_than(value: Any, levels: int) -> bool:
    """Whether `value` nests arrays and objects more than `levels` deep (looked at no deeper)."""
    if not isinstance(value, (dict, list)):
        return False
    if levels == 0:
        return True
    items = value.values() if isinstance(value, dict) else value
    return any(deeper_than(item, levels - 1) for item in items)


ELLIPSIS = "…"


def short_name(name: str | None) -> str | None:
    """A query's name, cut to MAX_NAME characters (the cut marked) if it is longer: a name
    only labels a query, so a long one still lets the query be recorded."""
    if name is None or len(name) <= MAX_NAME:
        return name
    return name[: MAX_NAME - 1] + ELLIPSIS


def too_long(value: str, limit: int) -> bool:
    """Whether an id or key is longer than the store keeps."""
    return len(value) > limit
