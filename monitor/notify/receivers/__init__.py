"""Receiver kinds: what a receiver of each `kind` in the rules file is posted.

A kind is a :class:`ReceiverKind`: its name, the message it makes of a delivery, where that
is posted, and whether a firing alert is posted again while it fires. The rules file accepts
exactly the registered kinds, and delivery asks the registry for the rest. A new kind is a
module here, and its entry in :data:`BUILT_IN` below.
"""

from __future__ import annotations

from typing import Protocol

from monitor.notify.receivers import alertmanager, slack, webhook
from monitor.notify.transport import Message
from monitor.store.schema.models import AlertEvent, AlertRow, Delivery, Query


class ReceiverKind(Protocol):
    """A kind of receiver: its name in the rules file, the message it is posted, and where."""

    @property
    def kind(self) -> str:
        """The name a receiver's `kind` in the rules file gives it."""

    @property
    def resend_ms(self) -> int | None:
        """How often a firing alert is posted again while it fires, for a receiver that
        forgets an alert it has not heard of for a while; None: never."""

    def endpoint(self, url: str) -> str:
        """Where messages go, for a receiver whose `url` in the rules file is `url`."""

    def message(
        self,
        delivery: Delivery,
        event: AlertEvent,
        alert: AlertRow,
        query: Query,
        description: str,
        now_ms: int,
    ) -> Message:
        """The JSON body that tells a receiver of `event`, a transition of `alert` (whose rule
        `description` describes), sent at `now_ms`."""


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
BUILT_IN: tuple[ReceiverKind, ...] = (
    webhook.Webhook(),
    slack.Slack(),
    alertmanager.Alertmanager(),
)
for _built_in in BUILT_IN:
    register(_built_in)
