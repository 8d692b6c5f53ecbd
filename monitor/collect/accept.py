"""Store what a sender's events can give, and set aside what they cannot.

One event that cannot be read, or that the store refuses, must not cost the events beside it
their place: it is set aside with its error (store.rejected) and the rest are stored. Only a
store that cannot be reached now fails the whole group, to be retried.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.collect.progress import ProgressError
from monitor.collect.spark_events import spark_event
from monitor.collect.writer import TRANSIENT_ERRORS
from monitor.events import Event
from monitor.health.predicates import Timeouts
from monitor.store.engine import error_reason
from monitor.store.rejected import set_aside
from monitor.store.writes import Written, write_events


@dataclasses.dataclass
class Accepted:
    """What became of a sender's events: stored, Spark events about other things (ignored),
    repeats and stale batches (unchanged), and the refused ones by their place, with why."""

    stored: int = 0
    ignored: int = 0
    unchanged: int = 0
    refused: list[tuple[int, str]] = dataclasses.field(default_factory=list)

    def add(self, written: Written) -> None:
        """Count a write's events."""
        self.stored += written.stored
        self.unchanged += written.repeated + written.stale


# A caller's own bookkeeping, written in the transaction that sets the refused events aside.
Bookkeeping = Callable[[so.Session, "Accepted"], None]


def accept(
    engine: sa.Engine,
    documents: Sequence[Any],
    now_ms: int,
    timeouts: Timeouts,
    origin: str | None = None,
    bookkeeping: Bookkeeping | None = None,
) -> Accepted:
    """Store the events of Spark's JSON `documents`; set aside (from `origin`) any that cannot
    be read or stored. Raises one of TRANSIENT_ERRORS, having set nothing aside, while the
    store cannot be reached."""
    accepted = Accepted()
    readable: list[tuple[int, Event]] = []
    refused: list[tuple[Any, str]] = []
    for index, document in enumerate(documents):
        try:
            event = spark_event(document, now_ms)
        except ProgressError as error:
            accepted.refused.append((index, str(error)))
            refused.append((document, str(error)))
            continue
        if event is None:
            accepted.ignored += 1
        else:
            readable.append((index, event))
    try:
        accepted.add(write_events(engine, [event for _, event in readable], timeouts))
    except TRANSIENT_ERRORS:
        raise
    except Exception:
        # Something in the group was refused: each event alone finds which.
        for index, event in readable:
            reason = _write_alone(engine, event, timeouts, accepted)
            if reason is not None:
                accepted.refused.append((index, reason))
                refused.append((documents[index], reason))
    with so.Session(engine) as session, session.begin():
        set_aside(session, now_ms, origin, refused)
        if bookkeeping is not None:
            bookkeeping(session, accepted)
    accepted.refused.sort()
    return accepted


def _write_alone(
    engine: sa.Engine, event: Event, timeouts: Timeouts, accepted: Accepted
) -> str | None:
    """Write one event, counting it; why the store refused it, if it did."""
    try:
        accepted.add(write_events(engine, [event], timeouts))
    except TRANSIENT_ERRORS:
        raise
    except Exception as error:
        return error_reason(error)
    return None
