"""What the live push sends: an event and its payload, to rooms, and the rooms' names.

A connection's id is a room of its own, so an event to one connection is an event to its room.
The events and their payloads are the live protocol of docs/live.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from monitor.store.signals.row_watch import BATCH_CONTENT

QUERY_ROOM_PREFIX = "query:"
OVERVIEW_ROOM = "overview"
ALERTS_ROOM = "alerts"

# A `batch` event's batch as every process tells it from the payload: its query and the
# fields that tell a replay apart.
BatchKey = tuple[Any, ...]


def room(query_id: str) -> str:
    """The room of one query."""
    return QUERY_ROOM_PREFIX + query_id


def is_room(name: str) -> bool:
    """Whether `name` is one of the live push's rooms, rather than a connection's own."""
    return name in (OVERVIEW_ROOM, ALERTS_ROOM) or name.startswith(QUERY_ROOM_PREFIX)


@dataclass(frozen=True)
class Event:
    """One Socket.IO event, its payload and the rooms it goes to."""

    name: str
    payload: Any
    to: list[str]

    @property
    def to_rooms(self) -> bool:
        """Whether the event goes to rooms, rather than to connections alone."""
        return any(is_room(name) for name in self.to)

    @property
    def key(self) -> BatchKey | None:
        """A `batch` event's batch, as every process can tell it; None for other events."""
        if self.name != "batch":
            return None
        batch = self.payload["batch"]
        return (self.payload["query"], *(batch[name] for name in BATCH_CONTENT))
