"""A posted body's events as decoded JSON, each on its own: one nested too deeply to decode
does not cost the others theirs.

Python's JSON decoder gives up on a value nested about a thousand levels deep, and with it on
the whole body. The body is then split into its top-level elements by its structure alone
(strings skipped, brackets counted, commas at the top level), without nesting a call per
level, and each element is decoded alone: those that decode are read as usual, and one that
does not is kept as its text, Undecodable, to be refused and set aside by itself.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},]')


@dataclasses.dataclass(frozen=True)
class Undecodable:
    """A posted element that JSON's decoder could not take, as it was sent, and why."""

    text: str
    reason: str


def decode_events(text: str) -> list[Any]:
    """The posted event, or each of the posted list's, decoded; an element nested too deeply
    to decode is Undecodable. ValueError if the body is not JSON."""
    try:
        body = json.loads(text)
    except RecursionError:
        return [_decoded(element) for element in _elements(text)]
    return body if isinstance(body, list) else [body]


def _decoded(element: str) -> Any:
    try:
        return json.loads(element)
    except RecursionError:
        return Undecodable(element, "the event is nested too deeply to decode as JSON")
    except ValueError as error:
        return Undecodable(element, f"the event is not valid JSON: {error}")


def _elements(text: str) -> list[str]:
    """The text of each top-level element of a JSON array (the whole text if it is not one).
    ValueError if its brackets do not balance or text follows it."""
    if not text.lstrip().startswith("["):
        return [text]
    elements: list[str] = []
    depth, start = 0, 0
    for match in _STRUCTURE.finditer(text):
        mark = match.group()
        if mark in ("[", "{"):
            depth += 1
            if depth == 1:
                start = match.end()
        elif mark in ("]", "}"):
            depth -= 1
            if depth == 0:
                if text[match.end() :].strip():
                    raise ValueError("the body goes on after its list of events")
                return [*elements, text[start : match.start()]]
        elif mark == "," and depth == 1:
            elements.append(text[start : match.start()])
            start = match.end()
    raise ValueError("the body's brackets do not balance")
