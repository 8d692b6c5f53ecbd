"""Who is in which room in this process, and the connections on their way into one.

The Socket.IO server keeps its own rooms, to send to; :class:`Rooms` keeps the same beside it
(every entry and exit goes through it, and an ended connection is forgotten), so that the live
push can tell which rooms anyone is in through the server's public API alone.

A connection joins a room in three steps (web.live.watching): it is registered as joining, it
is sent its catch-up, and it is then sent what the room was sent meanwhile, less what its
catch-up had, and enters. Every method is called with the watcher's lock held.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

from web.live.socket_events import BatchKey, Event
from web.sockets import socketio

NAMESPACE = "/"


def emit(event: Event) -> None:
    """Send `event` to its rooms, or connections, here."""
    socketio.emit(event.name, event.payload, to=event.to, namespace=NAMESPACE)


class Joining:
    """A connection on its way into a room: what it was sent on the way (its catch-up's
    batches, by key), what the room was sent meanwhile, and its catch-up's answer."""

    def __init__(self, sid: str) -> None:
        self.sid = sid
        self.ended = False
        self.sent: set[BatchKey] = set()
        self.missed: list[Event] = []
        self.id = uuid.uuid4().hex
        self.answered = threading.Event()
        self.caught_up: tuple[int, bool] = (0, True)
        self.error: str | None = None
        # The catch-up asked for, once it is, to ask again of a new watcher.
        self.request: dict[str, Any] | None = None


class Rooms:
    """The rooms of this process's connections, and who is joining which."""

    def __init__(self) -> None:
        self._members: dict[str, set[str]] = {}
        self._rooms_of: dict[str, set[str]] = {}
        self._joining: dict[str, list[Joining]] = {}

    def here(self) -> set[str]:
        """The rooms someone here is in, or on the way into."""
        return set(self._members) | set(self._joining)

    def of(self, sid: str) -> set[str]:
        """The rooms connection `sid` is in."""
        return set(self._rooms_of.get(sid, ()))

    def send(self, event: Event) -> None:
        """Send `event` to its rooms here, and keep it for each connection on its way into
        one of them that is in none of them yet."""
        emit(event)
        found: dict[str, Joining] = {}
        for name in event.to:
            for joining in self._joining.get(name, ()):
                if not self.of(joining.sid) & set(event.to):
                    found.setdefault(joining.sid, joining)
        for joining in found.values():
            joining.missed.append(event)

    def enter(self, sid: str, name: str) -> None:
        """Put connection `sid` in room `name`."""
        socketio.server.enter_room(sid, name, namespace=NAMESPACE)
        self._members.setdefault(name, set()).add(sid)
        self._rooms_of.setdefault(sid, set()).add(name)

    def leave(self, sid: str, name: str) -> None:
        """Take connection `sid` out of room `name`, if it is in it."""
        socketio.server.leave_room(sid, name, namespace=NAMESPACE)
        _discard(self._members, name, sid)
        _discard(self._rooms_of, sid, name)

    def begin(self, sid: str, name: str) -> Joining:
        """Connection `sid` starts joining room `name`: out of it until it has caught up
        (joining a room again starts afresh: catch-up, then live)."""
        self.leave(sid, name)
        joining = Joining(sid)
        self._joining.setdefault(name, []).append(joining)
        return joining

    def end(self, joining: Joining, name: str, enter: bool) -> None:
        """The joining connection has caught up (`enter`) or failed to: if it caught up and
        has not ended, send it what it missed and put it in the room."""
        joinings = self._joining[name]
        joinings.remove(joining)
        if not joinings:
            del self._joining[name]
        if not enter or joining.ended:
            return
        for event in joining.missed:
            if event.key is None or event.key not in joining.sent:
                emit(Event(event.name, event.payload, [joining.sid]))
        self.enter(joining.sid, name)

    def joining(self, join_id: str) -> Joining | None:
        """The joining connection with this id, if it is still on its way."""
        for joinings in self._joining.values():
            for joining in joinings:
                if joining.id == join_id:
                    return joining
        return None

    def unanswered(self) -> list[dict[str, Any]]:
        """The catch-ups asked for by the connections on their way into a room that have not
        been answered."""
        return [
            joining.request
            for joinings in self._joining.values()
            for joining in joinings
            if joining.request is not None and not joining.answered.is_set()
        ]

    def forget(self, sid: str) -> None:
        """Connection `sid` has ended (the server took it out of its rooms): whatever room it
        was joining, it is not put in."""
        for name in self._rooms_of.pop(sid, set()):
            _discard(self._members, name, sid)
        for joinings in self._joining.values():
            for joining in joinings:
                joining.ended = joining.ended or joining.sid == sid


def _discard(sets: dict[str, set[str]], key: str, value: str) -> None:
    members = sets.get(key)
    if members is not None:
        members.discard(value)
        if not members:
            del sets[key]
