"""How many new queries each sender may create through the collector, per hour.

A sender that posts events of ever new query ids (a bug, or a hostile client with the token)
would fill the store with queries that the overview, the scrape and the alert rules then all
read. Each sender (by Wmon-Sender; those without one share a budget) may create at most the
budget's queries in each hour; the events of further new queries are refused and set aside
(`wmon rejected --replay` stores them later), while its known queries, and every other
sender's, go on being stored. The count is kept per server process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from flask import Flask

HOUR_MS = 3_600_000


class NewQueryBudget:
    """Each sender's new queries in the current hour, against `per_hour`."""

    def __init__(self, per_hour: int, clock: Callable[[], int]) -> None:
        self.per_hour, self._clock = per_hour, clock
        self._windows: dict[str | None, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def admit(self, sender: str | None, wanted: int) -> int:
        """How many of `wanted` new queries `sender` may create now; counts them."""
        hour = self._clock() // HOUR_MS
        with self._lock:
            start, used = self._windows.get(sender, (hour, 0))
            used = used if start == hour else 0
            admitted = max(min(wanted, self.per_hour - used), 0)
            self._windows[sender] = (hour, used + admitted)
            return admitted


def init_app(app: Flask) -> None:
    """Give the app its budget, from NEW_QUERIES_PER_HOUR and CLOCK."""
    config = app.config
    app.extensions["wmon.new_queries"] = NewQueryBudget(
        config["NEW_QUERIES_PER_HOUR"], config["CLOCK"]
    )


def new_queries(app: Flask) -> NewQueryBudget:
    """The app's budget of new queries."""
    found: NewQueryBudget = app.extensions["wmon.new_queries"]
    return found
