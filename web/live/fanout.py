"""How the live push's events and messages reach the processes that serve the dashboard: one
interface, chosen once when the app is made.

- :class:`LocalFanout`: one process, which watches the store itself; what it sends reaches its
  own connections at once.
- :class:`web.live.relay.Relay`: several processes serving one store (WMON_MESSAGE_QUEUE), one
  of which watches it for all; what it sends reaches every process through Redis.

Both hand every event to each process's :class:`FanoutEnd` (web.live.watching), which sends it
to the connections there, and every message (a catch-up asked for, a catch-up sent) to the same.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Protocol

from web.live.socket_events import Event


class LiveUnavailable(ValueError):
    """No process answered for the store's live updates; the message says what to do."""


class FanoutEnd(Protocol):
    """A process's end of the fan-out: web.live.watching's watcher."""

    def deliver(self, event: Event) -> None:
        """Send `event` to the connections here in its rooms."""

    def told(self, message: str, payload: dict[str, Any]) -> None:
        """Handle a message that a process (maybe this one) sent to all, soon: the next is
        handed over once it returns."""


class Fanout(Protocol):
    """Events and messages from one process to every process, each in the order sent."""

    shared: bool
    """Whether several processes share the store's live push (and one of them watches it)."""

    host_id: str
    """This process, as its messages name it."""

    def start(self) -> None:
        """Start hearing the other processes."""

    def stop(self) -> None:
        """Stop hearing them."""

    def send(self, event: Event) -> None:
        """Send `event` to its rooms in every process."""

    def tell(self, message: str, payload: dict[str, Any]) -> None:
        """Send a message to every process."""

    def share_rooms(self, here: Callable[[], set[str]], now: bool = False) -> None:
        """Tell the other processes which rooms someone here is in (`here()`), now and then,
        or `now`."""

    def heard(self, here: set[str]) -> set[str]:
        """The rooms someone is in, or on the way into, in any process; `here` in this one."""


class LocalFanout:
    """One process: what it sends reaches its own connections at once."""

    shared = False

    def __init__(self, end: FanoutEnd) -> None:
        self.host_id = uuid.uuid4().hex
        self._end = end

    def start(self) -> None:
        """Nothing to hear: there are no other processes."""

    def stop(self) -> None:
        """Nothing to stop."""

    def send(self, event: Event) -> None:
        """Send `event` to its rooms here."""
        self._end.deliver(event)

    def tell(self, message: str, payload: dict[str, Any]) -> None:
        """Hand a message to this process at once."""
        self._end.told(message, payload)

    def share_rooms(self, here: Callable[[], set[str]], now: bool = False) -> None:
        """No one else to tell."""

    def heard(self, here: set[str]) -> set[str]:
        """The rooms heard here are all there are."""
        return here
