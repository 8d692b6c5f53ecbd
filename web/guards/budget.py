"""How many new queries each sender may create through the collector, per hour.

A sender that posts events of ever new query ids (a bug, or a hostile client with the token)
would fill the store with queries that the overview, the scrape and the alert rules then all
read. Each sender may create at most the budget's queries in each hour; the events of further
new queries are refused and set aside (`wmon rejected --replay` stores them later), while its
known queries, and every other sender's, go on being stored. The count is kept per server
process.

A sender is counted twice: by the name it gives itself (Wmon-Sender; those without one share
a budget) and by where it posts from. The name alone is the sender's to choose, so a sender
that had spent its budget would get a fresh one by renaming itself; its address it cannot
change at will. A post creates new queries only within what both its name and its address
have left, and counts against both. The token would be the other thing a sender cannot choose,
but every sender holds the same one (WMON_INGEST_TOKEN), so counted by token and address the
identity is the address. The address is the one the connection comes from (the WSGI
REMOTE_ADDR): the app trusts no X-Forwarded-For, which any client can write. Behind a proxy
every sender posts from the proxy's address and they share one budget: set
WMON_NEW_QUERIES_PER_HOUR to what the whole fleet behind it may create in an hour.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from flask import Flask

HOUR_MS = 3_600_000

# What is counted: a sender's name (None: the senders without one), or an address.
Counted = tuple[str, str | None]


class NewQueryBudget:
    """The new queries of each sender's name and of each address in the current hour,
    against `per_hour` each."""

    def __init__(self, per_hour: int, clock: Callable[[], int]) -> None:
        self.per_hour, self._clock = per_hour, clock
        self._hour = 0
        self._used: dict[Counted, int] = {}
        self._lock = threading.Lock()

    def admit(self, sender: str | None, address: str | None, wanted: int) -> int:
        """How many of `wanted` new queries a post from `sender` at `address` may create
        now: no more than either has left this hour; counts them against both."""
        hour = self._clock() // HOUR_MS
        counted = [("sender", sender), ("address", address)]
        with self._lock:
            if hour != self._hour:
                self._hour, self._used = hour, {}
            left = min(self.per_hour - self._used.get(key, 0) for key in counted)
            admitted = max(min(wanted, left), 0)
            for key in counted:
                self._used[key] = self._used.get(key, 0) + admitted
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
