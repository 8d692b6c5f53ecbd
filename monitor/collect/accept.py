"""Store what a sender's events can give, and set aside what they cannot.

One event that cannot be read, or that the store refuses, must not cost the events beside it
their place: it is set aside with its error (store.rejected) and the rest are stored. Only a
store that cannot be reached now fails the whole group, to be retried. What is set aside and
the sender's counts (store.senders) are written in the transaction that stores the events:
an outage that fails it leaves none of them, so the retry is counted once. A post goes
through three steps, which the collector's group commit (collect.group_commit) takes for
several posts at once: read, admitted within its budget of new queries, written.
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
from monitor.store.read.queries import stored_query_ids
from monitor.store.schema.engine import error_reason
from monitor.store.write.rejected import set_aside
from monitor.store.write.senders import SenderPost, count_posts
from monitor.store.write.writes import Written, write_events


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


# How many of so many new queries (the first the events name) may be created now.
Admit = Callable[[int], int]


@dataclasses.dataclass
class Post:
    """One sender's events on their way in: what it sent, when and from where (`origin`),
    how many events it says it dropped so far (given, the sender `origin` is counted in the
    store), and how many new queries it may create; what became of its events so far, and
    the readable ones still to be written, by their place."""

    documents: Sequence[Any]
    now_ms: int
    origin: str | None = None
    dropped: int | None = None
    admit: Admit | None = None
    accepted: Accepted = dataclasses.field(default_factory=Accepted)
    readable: list[tuple[int, Event]] = dataclasses.field(default_factory=list)


def accept(
    engine: sa.Engine,
    documents: Sequence[Any],
    now_ms: int,
    timeouts: Timeouts,
    origin: str | None = None,
    dropped: int | None = None,
    admit: Admit | None = None,
) -> Accepted:
    """Store the events of Spark's JSON `documents`, arrived at `now_ms` from a job that sends
    them as they happen; set aside (from `origin`) any that cannot be read or stored, and those
    of new queries past what `admit` lets be created; count them for the sender `origin` if it
    reported how many it `dropped`. Raises one of TRANSIENT_ERRORS, having set nothing aside,
    while the store cannot be reached."""
    post = read(documents, now_ms, origin, dropped, admit)
    if admit is not None:
        with so.Session(engine) as session:
            known = stored_query_ids(session, [event.query_id for _, event in post.readable])
        within_budget(post, known)
    write(engine, post, timeouts)
    return post.accepted


def read(
    documents: Sequence[Any],
    now_ms: int,
    origin: str | None = None,
    dropped: int | None = None,
    admit: Admit | None = None,
) -> Post:
    """The post of `documents`, read: the events in them, those that cannot be read refused,
    Spark's events about other things ignored."""
    post = Post(documents, now_ms, origin, dropped, admit)
    for index, document in enumerate(documents):
        if isinstance(document, Undecodable):
            post.accepted.refused.append((index, document.reason))
            continue
        try:
            event = spark_event(document, now_ms)
        except ProgressError as error:
            post.accepted.refused.append((index, str(error)))
            continue
        if event is None:
            post.accepted.ignored += 1
        else:
            post.readable.append((index, event))
    return post


def within_budget(post: Post, known: set[str]) -> set[str]:
    """Keep the post's events of `known` queries, and of as many new ones as its budget lets
    be created; refuse the others. The new queries admitted."""
    if post.admit is None:
        return set()
    readable = post.readable
    new = list(dict.fromkeys(e.query_id for _, e in readable if e.query_id not in known))
    admitted = set(new[: post.admit(len(new))])
    post.readable = []
    for index, event in readable:
        if event.query_id in known or event.query_id in admitted:
            post.readable.append((index, event))
        else:
            post.accepted.refused.append((index, TOO_MANY_NEW_QUERIES))
    return admitted


TOO_MANY_NEW_QUERIES = (
    "this sender, or another from its address, created as many new queries this hour as "
    "it may (WMON_NEW_QUERIES_PER_HOUR); replay later with `wmon rejected --replay`"
)


def write(engine: sa.Engine, post: Post, timeouts: Timeouts) -> None:
    """Write the post's readable events in one transaction with what it refused and its
    sender's count; or, if the store refuses something in them, each event alone to find
    which, then what was refused."""
    events = [event for _, event in post.readable]
    try:
        write_events(engine, events, timeouts, also=kept_with([post]), arrived_at_ms=post.now_ms)
        return
    except TRANSIENT_ERRORS:
        raise
    except Exception:  # something in the group was refused: each event alone finds which
        post.accepted.stored = post.accepted.unchanged = 0
    for index, event in post.readable:
        reason = _write_alone(engine, event, timeouts, post.now_ms, post.accepted)
        if reason is not None:
            post.accepted.refused.append((index, reason))
    with so.Session(engine) as session, session.begin():
        keep(session, [post])


def kept_with(posts: Sequence[Post]) -> Callable[[so.Session, Written], None]:
    """What is written in the transaction of the posts' events, once they are: how many of
    each post's were stored, then what each refused and its sender's count."""

    def also(session: so.Session, written: Written) -> None:
        at = 0
        for post in posts:
            stored = sum(written.each_stored[at : at + len(post.readable)])
            at += len(post.readable)
            post.accepted.stored, post.accepted.unchanged = stored, len(post.readable) - stored
        keep(session, posts)

    return also


def keep(session: so.Session, posts: Sequence[Post]) -> None:
    """In the session's transaction: set the posts' refused documents aside, and count each
    post for its sender."""
    for post in posts:
        post.accepted.refused.sort()
        refused = [(_kept(post.documents[i]), reason) for i, reason in post.accepted.refused]
        set_aside(session, post.now_ms, post.origin, refused)
    count_posts(
        session,
        [
            SenderPost(p.origin, p.now_ms, p.accepted.stored, len(p.accepted.refused), p.dropped)
            for p in posts
            if p.origin is not None and p.dropped is not None
        ],
    )


def _kept(document: Any) -> Any:
    """What is set aside of a refused document: itself, or the text of one not decoded."""
    return document.text if isinstance(document, Undecodable) else document


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
