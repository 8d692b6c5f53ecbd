"""A query's backlog read from its stored batches' offsets (health.backlog judges it): each
partition's points over the window, and where its backlog's head became available.

The window's points are every n-th of its batches from its first, at most
:data:`WINDOW_POINTS`, and its newest (a window of at least the last :data:`MIN_POINTS`
batches, however old), read for many queries in two statements (store.windows.sampled_rows).
The head's arrival is found by bisection over the query's stored batch ids: a partition's
latest offset only grows, so the last batch whose latest offset did not yet include the head,
and the next one, are found in as many steps as the ids' span has binary digits. Every
backlogged partition of every query asked takes its step in each round, and a round reads the
batches its steps need in one statement (a query's partitions mostly need the same ones): 19
statements for heads three hours back in 1-second batches, however many queries
(docs/benchmarks.md, Backlog reads).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.health.backlog import (
    WINDOW_MS,
    Arrival,
    Backlogs,
    PartitionBacklog,
    Point,
    assess,
    head_arrival,
    of_query,
)
from monitor.health.facts import DEFAULT_WINDOW_MS, RUNNING
from monitor.store.packed import batch_offsets
from monitor.store.read.windows import BatchRow, sampled_rows
from monitor.store.schema.sql import among, chunks

WINDOW_POINTS = 12
MIN_POINTS = 3

# A partition of a source: its source's index and its name.
Key = tuple[int, str]


class QueryRow(Protocol):
    """A query's stored row (an ORM object or a plain row) as a backlog reads it."""

    status: str
    updated_at_ms: int


def query_runs(query: QueryRow, as_of_ms: int, silence_ms: int = DEFAULT_WINDOW_MS) -> bool:
    """Whether the query runs and has told something (a batch, an idle event) within the
    silence threshold: a partition's backlog is stopped otherwise."""
    return query.status in RUNNING and as_of_ms - query.updated_at_ms <= silence_ms


def window_points(
    session: so.Session, newest: Mapping[str, BatchRow], window_ms: int = WINDOW_MS
) -> dict[str, dict[int, dict[Key, Point]]]:
    """Each query's partitions at the batches of its window (store.windows.sampled_rows), by
    query id and batch id; in two statements for at most IN_CHUNK queries."""
    if not newest:
        return {}
    statement = sampled_rows(
        session, batch_offsets.TABLE, newest, window_ms, WINDOW_POINTS, MIN_POINTS
    )
    found: dict[str, dict[int, dict[Key, Point]]] = {}
    for row in session.execute(statement):
        found.setdefault(row.query_id, {})[row.batch_id] = _points(row)
    return found


def _points(row: Any) -> dict[Key, Point]:
    """A batch_offsets row's partitions as points."""
    at = row.batch_time_ms
    return {
        (index, name): Point(at, end, latest)
        for index, name, end, latest in batch_offsets.offsets_of(row)
    }


def _partition_backlogs(
    window: Mapping[int, Mapping[Key, Point]],
    newest_id: int,
    as_of_ms: int,
    running: bool,
    arrivals: Mapping[Key, Arrival],
) -> tuple[PartitionBacklog, ...]:
    """The backlog of each partition of a query's batch `newest_id` from its points at the
    window's batches (window_points) and its head's arrival where found (else its age is
    not known), in source and name order."""
    in_order = [window[batch_id] for batch_id in sorted(window)]
    return tuple(
        PartitionBacklog(
            *key,
            assess(
                [batch[key] for batch in in_order if key in batch],
                arrivals.get(key),
                as_of_ms,
                running,
            ),
        )
        for key in sorted(window.get(newest_id, {}))
    )


def backlogs(
    session: so.Session,
    batch: BatchRow,
    as_of_ms: int,
    running: bool,
    window_ms: int = WINDOW_MS,
) -> Backlogs:
    """The backlog of `batch`'s query as of `batch` (and of `as_of_ms`, for the ages), over
    the window of `window_ms` before it; `running`, whether its query runs and tells."""
    newest = {batch.query_id: batch}
    return fleet_backlogs(session, newest, as_of_ms, {batch.query_id: running}, True, window_ms)[
        batch.query_id
    ]


def fleet_backlogs(
    session: so.Session,
    newest: Mapping[str, BatchRow],
    as_of_ms: int,
    running: Mapping[str, bool],
    ages: bool = True,
    window_ms: int = WINDOW_MS,
) -> dict[str, Backlogs]:
    """The backlog of each query as of its batch in `newest` (at most IN_CHUNK queries), by
    query id: their windows in two statements and, only with `ages`, their heads' arrivals in
    a statement per step of the bisection, however many queries."""
    windows = window_points(session, newest, window_ms)
    arrivals = _Arrivals(session, newest, windows).found() if ages else {}
    found = {}
    for query_id, batch in newest.items():
        partitions = _partition_backlogs(
            windows.get(query_id, {}),
            batch.batch_id,
            as_of_ms,
            running[query_id],
            arrivals.get(query_id, {}),
        )
        found[query_id] = Backlogs(of_query([p.backlog for p in partitions]), partitions)
    return found


# Batches read at once by the bisection: (query id, batch id) pairs in one statement.
PAIRS_AT_ONCE = 2_000


@dataclass
class _Search:
    """The bisection for one partition's head: `before` is a stored batch whose latest offset
    does not include it, `after` one whose does; no batch is read from `limit` up to
    `after` (a batch id not stored there, as after a gap, narrows the range to below it)."""

    query_id: str
    key: Key
    head: int
    before: int
    after: int
    limit: int

    @property
    def done(self) -> bool:
        return self.limit - self.before <= 1

    @property
    def middle(self) -> tuple[str, int]:
        return self.query_id, (self.before + self.limit) // 2


class _Arrivals:
    """Where each backlogged partition's head became available, for many queries at once:
    every partition's bisection takes a step in each round, and a round reads the batches its
    steps need in one statement (a query's partitions mostly need the same ones)."""

    def __init__(
        self,
        session: so.Session,
        newest: Mapping[str, BatchRow],
        windows: Mapping[str, Mapping[int, Mapping[Key, Point]]],
    ) -> None:
        self.session = session
        self.read: dict[tuple[str, int], dict[Key, Point]] = {
            (query_id, batch_id): dict(points)
            for query_id, window in windows.items()
            for batch_id, points in window.items()
        }
        self.heads = {
            (query_id, key): head.end_offset
            for query_id, batch in newest.items()
            for key, head in windows.get(query_id, {}).get(batch.batch_id, {}).items()
            if head.backlog and head.end_offset is not None
        }
        self.newest = {query_id: batch.batch_id for query_id, batch in newest.items()}
        self.window_ids = {query_id: sorted(window) for query_id, window in windows.items()}

    def found(self) -> dict[str, dict[Key, Arrival]]:
        """Each backlogged partition's head's arrival, by query id and partition."""
        if not self.heads:
            return {}
        oldest = self._oldest({query_id for query_id, _ in self.heads})
        self._read(list(oldest.items()))
        searches = []
        found: dict[str, dict[Key, Arrival]] = {}
        for (query_id, key), head in self.heads.items():
            first = (query_id, oldest[query_id])
            if self._latest(first, key) > head:
                # There at the first batch stored: it arrived before it.
                found.setdefault(query_id, {})[key] = head_arrival(
                    head, None, self.read[first][key]
                )
            else:
                searches.append(self._narrowed(query_id, key, head, oldest[query_id]))
        while pending := [search for search in searches if not search.done]:
            self._read([search.middle for search in pending])
            for search in pending:
                self._step(search)
        for search in searches:
            before = self._point((search.query_id, search.before), search.key)
            after = self.read[search.query_id, search.after][search.key]
            arrival = head_arrival(search.head, before, after)
            found.setdefault(search.query_id, {})[search.key] = arrival
        return found

    def _narrowed(self, query_id: str, key: Key, head: int, oldest_id: int) -> _Search:
        """A partition's bisection, between the batches already read (its window's) that
        bracket its head."""
        newest_id = self.newest[query_id]
        before, after = oldest_id, newest_id
        for batch_id in self.window_ids.get(query_id, ()):
            if before < batch_id < after:
                if self._latest((query_id, batch_id), key) > head:
                    after = batch_id
                    break
                before = batch_id
        return _Search(query_id, key, head, before, after, after)

    def _step(self, search: _Search) -> None:
        query_id, middle = search.middle
        if not self.read[query_id, middle]:
            search.limit = middle
        elif self._latest((query_id, middle), search.key) > search.head:
            search.after = search.limit = middle
        else:
            search.before = middle

    def _oldest(self, query_ids: set[str]) -> dict[str, int]:
        """The id of each query's oldest stored batch."""
        table = batch_offsets.TABLE
        statement = (
            sa.select(table.c.query_id, sa.func.min(table.c.batch_id))
            .where(among(table.c.query_id, sorted(query_ids)))
            .group_by(table.c.query_id)
        )
        return {query_id: int(oldest) for query_id, oldest in self.session.execute(statement)}

    def _read(self, pairs: list[tuple[str, int]]) -> None:
        """Read the batches of (query id, batch id) `pairs` not read yet; one not stored reads
        as no partitions."""
        wanted = sorted(set(pairs) - set(self.read))
        table = batch_offsets.TABLE
        for chunk in chunks(wanted, PAIRS_AT_ONCE):
            for pair in chunk:
                self.read[pair] = {}
            by_query: dict[str, list[int]] = {}
            for query_id, batch_id in chunk:
                by_query.setdefault(query_id, []).append(batch_id)
            # A query's ids together: each store looks them up in its (query_id, batch_id)
            # index (SQLite scans the table for a list of row values).
            statement = sa.select(table).where(
                sa.or_(
                    *(
                        sa.and_(table.c.query_id == query_id, among(table.c.batch_id, ids))
                        for query_id, ids in by_query.items()
                    )
                )
            )
            for row in self.session.execute(statement):
                self.read[row.query_id, row.batch_id] = _points(row)

    def _latest(self, pair: tuple[str, int], key: Key) -> int:
        """The partition's latest offset at a read batch: 0 when the batch does not have it
        (the partition was not there yet) or its source did not say."""
        point = self.read[pair].get(key)
        return 0 if point is None or point.latest_offset is None else point.latest_offset

    def _point(self, pair: tuple[str, int], key: Key) -> Point:
        """The partition at a read batch, nothing available when the batch does not have it."""
        point = self.read[pair].get(key)
        if point is None:
            return Point(next(iter(self.read[pair].values())).time_ms, None, 0)
        return point
