"""Receiver kinds: what a receiver of each `kind` in the rules file is posted.

A kind is a :class:`ReceiverKind`: its name and the message it makes of a delivery. The rules
file accepts exactly the registered kinds, and delivery asks the registry for the message.
A new kind is a module here, and its entry in :data:`BUILT_IN` below.
"""

from __future__ import annotations

from typing import Any, Protocol

from monitor.alerts.receivers import slack, webhook
from monitor.store.models import AlertEvent, AlertRow, Delivery, Query


class ReceiverKind(Protocol):
    """A kind of receiver: its name in the rules file, and the message it is posted."""

    @property
    def kind(self) -> str:
        """The name a receiver's `kind` in the rules file gives it."""

    def message(
        self, delivery: Delivery, event: AlertEvent, alert: AlertRow, query: Query
    ) -> dict[str, Any]:
        """The JSON body that tells a receiver of `event`, a transition of `alert`."""


# By name, in the order registered: the order the rules file's error message lists them in.
_REGISTRY: dict[str, ReceiverKind] = {}


def register(receiver_kind: ReceiverKind) -> ReceiverKind:
    """Make a kind usable in the rules file and by delivery; ValueError if its name is taken."""
    if receiver_kind.kind in _REGISTRY:
        raise ValueError(f"a receiver kind called {receiver_kind.kind!r} is registered already")
    _REGISTRY[receiver_kind.kind] = receiver_kind
    return receiver_kind


def unregister(kind: str) -> None:
    """Forget the kind called `kind`, as a test does with a throwaway one."""
    _REGISTRY.pop(kind, None)


def lookup(kind: str) -> ReceiverKind:
    """The kind called `kind`; KeyError if none is registered."""
    return _REGISTRY[kind]


def kinds() -> tuple[str, ...]:
    """The names of the registered kinds, in the order they were registered."""
    return tuple(_REGISTRY)


# Registered here rather than by each module on import, so that this list, not the
# alphabetical order of the imports above, decides the order the rules file names them in.
BUILT_IN: tuple[ReceiverKind, ...] = (webhook.Webhook(), slack.Slack())
for _built_in in BUILT_IN:
    register(_built_in)
