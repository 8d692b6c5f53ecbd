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

from monitor.collect.documents import Undecodable
from monitor.collect.progress import ProgressError
from monitor.collect.spark_events import spark_event
from monitor.collect.writer import TRANSIENT_ERRORS
from monitor.events import Event
from monitor.health.predicates import Timeouts
from monitor.store.engine import error_reason
from monitor.store.queries import stored_query_ids
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
# How many of so many new queries (the first the events name) may be created now.
Admit = Callable[[int], int]


def accept(
    engine: sa.Engine,
    documents: Sequence[Any],
    now_ms: int,
    timeouts: Timeouts,
    origin: str | None = None,
    bookkeeping: Bookkeeping | None = None,
    admit: Admit | None = None,
) -> Accepted:
    """Store the events of Spark's JSON `documents`, arrived at `now_ms` from a job that sends
    them as they happen; set aside (from `origin`) any that cannot be read or stored, and those
    of new queries past what `admit` lets be created. Raises one of TRANSIENT_ERRORS, having
    set nothing aside, while the store cannot be reached."""
    accepted = Accepted()
    readable: list[tuple[int, Event]] = []
    for index, document in enumerate(documents):
        if isinstance(document, Undecodable):
            accepted.refused.append((index, document.reason))
            continue
        try:
            event = spark_event(document, now_ms)
        except ProgressError as error:
            accepted.refused.append((index, str(error)))
            continue
        if event is None:
            accepted.ignored += 1
        else:
            readable.append((index, event))
    if admit is not None:
        readable = _within_budget(engine, readable, admit, accepted)
    try:
        events = [event for _, event in readable]
        accepted.add(write_events(engine, events, timeouts, arrived_at_ms=now_ms))
    except TRANSIENT_ERRORS:
        raise
    except Exception:
        # Something in the group was refused: each event alone finds which.
        for index, event in readable:
            reason = _write_alone(engine, event, timeouts, now_ms, accepted)
            if reason is not None:
                accepted.refused.append((index, reason))
    accepted.refused.sort()
    _keep(engine, documents, accepted, now_ms, origin, bookkeeping)
    return accepted


def _keep(
    engine: sa.Engine,
    documents: Sequence[Any],
    accepted: Accepted,
    now_ms: int,
    origin: str | None,
    bookkeeping: Bookkeeping | None,
) -> None:
    """Set the refused documents aside with the caller's bookkeeping, in one transaction (none
    when there is neither)."""
    if not accepted.refused and bookkeeping is None:
        return
    with so.Session(engine) as session, session.begin():
        refused = [(_kept(documents[index]), reason) for index, reason in accepted.refused]
        set_aside(session, now_ms, origin, refused)
        if bookkeeping is not None:
            bookkeeping(session, accepted)


def _kept(document: Any) -> Any:
    """What is set aside of a refused document: itself, or the text of one not decoded."""
    return document.text if isinstance(document, Undecodable) else document


def _within_budget(
    engine: sa.Engine,
    readable: list[tuple[int, Event]],
    admit: Admit,
    accepted: Accepted,
) -> list[tuple[int, Event]]:
    """The events to write: those of known queries, and of as many new ones as `admit` lets
    be created; the others are refused."""
    with so.Session(engine) as session:
        known = stored_query_ids(session, [event.query_id for _, event in readable])
    new = list(dict.fromkeys(e.query_id for _, e in readable if e.query_id not in known))
    admitted = set(new[: admit(len(new))])
    kept = []
    for index, event in readable:
        if event.query_id in known or event.query_id in admitted:
            kept.append((index, event))
        else:
            accepted.refused.append((index, TOO_MANY_NEW_QUERIES))
    return kept


TOO_MANY_NEW_QUERIES = (
    "this sender, or another from its address, created as many new queries this hour as "
    "it may (WMON_NEW_QUERIES_PER_HOUR); replay later with `wmon rejected --replay`"
)


def _write_alone(
    engine: sa.Engine, event: Event, timeouts: Timeouts, now_ms: int, accepted: Accepted
) -> str | None:
    """Write one event that arrived at `now_ms`, counting it; why the store refused it, if it
    did."""
    try:
        accepted.add(write_events(engine, [event], timeouts, arrived_at_ms=now_ms))
    except TRANSIENT_ERRORS:
        raise
    except Exception as error:
        return error_reason(error)
    return None
