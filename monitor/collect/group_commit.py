"""Senders that post at once are written together: one transaction for all that wait.

Each post in a transaction of its own, fifty senders posting at once spent the collector's
time waiting rather than writing: a post waits for its queries' locks
(store.write.query_locks; SQLite has one writer) holding a pooled connection, so that the
pool's 15 were taken by posts waiting for each other and the overview queued behind them for
one (44 s of its 51 s, profiled), and every post paid a transaction's fixed statements for
its few events, then a second one for its sender's count. Measured on 2026-12-07
(`python -m benchmarks --senders 50`, docs/benchmarks.md): POST p95 2.3-4.3 s, max 4.5-9.5 s;
the overview's p95 1.1-6.0 s. Written together: POST p95 0.55-1.04 s, the overview's
0.46-1.17 s.

So a post is read (its unreadable events refused) in its own thread, then waits in line. The
first in line writes for every post waiting, up to MOST_EVENTS events, in one transaction
(group commit, as databases do with their logs), then hands the line to the first post that
came meanwhile, which writes for those waiting then. A post is answered once the transaction
with its events commits: its events stored, repeats found, refusals set aside and its
sender's count, as it would have been alone (collect.accept); its events are heard
(store.writes) when the group's last post arrived, at most a write's time later. If the store
refuses something in the group (not an outage), each post of it is written again on its own,
as alone. An outage fails every post of the group alike: none is stored, each is answered
503. The budgets of new queries are counted in line, post by post, a query that an earlier
post of the group creates counting as known.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.collect.accept import Accepted, Admit, Post, kept_with, read, within_budget
from monitor.collect.accept import write as write_alone
from monitor.collect.writer import TRANSIENT_ERRORS
from monitor.health.predicates import Timeouts
from monitor.store.read.queries import stored_query_ids
from monitor.store.write.writes import write_events

# At most this many events in one transaction (a post larger than this is written alone):
# enough for every post of fifty senders, small enough to commit well within a second.
MOST_EVENTS = 1_000


@dataclasses.dataclass
class _Waiting:
    """A post in line, and what became of it: woken when its transaction ended (failed with
    an error, or to be written again alone), or to write for the line itself."""

    post: Post
    woken: threading.Event = dataclasses.field(default_factory=threading.Event)
    leads: bool = False
    failed: BaseException | None = None
    alone: bool = False


class GroupCommit:
    """Accepts posts of events, writing those that wait at once in one transaction."""

    def __init__(self, engine: Callable[[], sa.Engine], timeouts: Timeouts) -> None:
        self._engine, self._timeouts = engine, timeouts
        self._line: deque[_Waiting] = deque()
        self._writing = False
        self._lock = threading.Lock()

    def accept(
        self,
        documents: Sequence[Any],
        now_ms: int,
        origin: str | None = None,
        dropped: int | None = None,
        admit: Admit | None = None,
    ) -> Accepted:
        """As collect.accept, but written with the posts that wait beside it. Raises one of
        TRANSIENT_ERRORS, having stored and set aside nothing, while the store cannot be
        reached."""
        waiting = _Waiting(read(documents, now_ms, origin, dropped, admit))
        with self._lock:
            self._line.append(waiting)
            waiting.leads, self._writing = not self._writing, True
        if not waiting.leads:
            waiting.woken.wait()
        if waiting.leads:
            self._lead(waiting)
        if waiting.failed is not None:
            raise waiting.failed
        if waiting.alone:
            write_alone(self._engine(), waiting.post, self._timeouts)
        return waiting.post.accepted

    def _lead(self, own: _Waiting) -> None:
        """Write group after group from the line until `own` is written; then hand the line
        to the first post left in it, if any."""
        try:
            written = False
            while not written:
                with self._lock:
                    group = self._take()
                try:
                    self._commit(group)
                finally:
                    for waiting in group:
                        waiting.woken.set()
                written = any(waiting is own for waiting in group)
        finally:
            with self._lock:
                self._writing = bool(self._line)
                if self._line:
                    self._line[0].leads = True
                    self._line[0].woken.set()

    def _take(self) -> list[_Waiting]:
        """The first posts in line, up to MOST_EVENTS events (at least one post)."""
        group = [self._line.popleft()]
        events = len(group[0].post.readable)
        while self._line and events + len(self._line[0].post.readable) <= MOST_EVENTS:
            events += len(self._line[0].post.readable)
            group.append(self._line.popleft())
        return group

    def _commit(self, group: list[_Waiting]) -> None:
        """Admit the group's new queries, then write its posts in one transaction. Each post
        fails with the error of an outage, or of a store that could not tell which queries
        are new (as a post alone would); it is written again alone if the store refused
        something in the group."""
        posts = [waiting.post for waiting in group]
        admitted = False
        try:
            engine = self._engine()
            _admit(engine, posts)
            admitted = True
            _write_together(engine, posts, self._timeouts)
        except Exception as error:
            for waiting in group:
                if admitted and not isinstance(error, TRANSIENT_ERRORS):
                    waiting.alone = True
                else:
                    waiting.failed = error
        except BaseException as error:
            for waiting in group:
                waiting.failed = error
            raise


def _admit(engine: sa.Engine, posts: list[Post]) -> None:
    """Keep each post's events of known queries and of the new ones its budget lets it
    create, in line: a query that an earlier post creates is known to the later ones."""
    with so.Session(engine) as session:
        ids = [event.query_id for post in posts for _, event in post.readable]
        known = stored_query_ids(session, ids)
    for post in posts:
        known |= within_budget(post, known)


def _write_together(engine: sa.Engine, posts: list[Post], timeouts: Timeouts) -> None:
    """Write every post's readable events in one transaction, with what each refused and
    its sender's count."""
    events = [event for post in posts for _, event in post.readable]
    arrived_at_ms = max(post.now_ms for post in posts)
    write_events(engine, events, timeouts, also=kept_with(posts), arrived_at_ms=arrived_at_ms)
