"""A receiver: where notifications go, as the rules file names it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Receiver:
    """Where notifications go: a name, a kind from monitor.notify.receivers, and a URL."""

    name: str
    kind: str
    url: str
