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

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _escaped(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]


def storable(text: str) -> str:
    """`text` with NUL and lone surrogates written as their escapes."""
    return _UNSTORABLE.sub(_escaped, text)


def storable_document(value: Any) -> Any:
    """A decoded JSON document with every string in it, keys too, made storable."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {storable(key): storable_document(item) for key, item in value.items()}
    if isinstance(value, list):
        return [storable_document(item) for item in value]
    return value


# Ids are Spark's UUIDs. Names and partitions are indexed, and an index entry has a size
# limit (PostgreSQL's B-tree: 2,704 bytes): 500 characters of up to 4 bytes stay under it.
MAX_ID = 36
MAX_NAME = 500
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
