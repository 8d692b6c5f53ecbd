"""A query's backlog read from its stored batches' offsets (health.backlog judges it): each
partition's points over the window, and where its backlog's head became available.

The window's points are every n-th of its batches from its first, at most
:data:`WINDOW_POINTS`, and its newest (a window of at least the last :data:`MIN_POINTS`
batches, however old), read for many queries in one statement. The head's arrival
is found by bisection over the query's stored batch ids: a partition's latest offset only grows,
so the last batch whose latest offset did not yet include the head, and the next one, are found
in as many look-ups of a batch as the ids' span has binary digits (a look-up read once for every
partition that needs it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.health.backlog import (
    WINDOW_MS,
    Arrival,
    Backlog,
    Point,
    QueryBacklog,
    assess,
    head_arrival,
    of_query,
)
from monitor.health.facts import DEFAULT_WINDOW_MS, RUNNING
from monitor.store import batch_offsets
from monitor.store.models import BatchOffsets
from monitor.store.sql import per_query
from monitor.store.windows import first_since

WINDOW_POINTS = 12
MIN_POINTS = 3

# A partition of a source: its source's index and its name.
Key = tuple[int, str]


@dataclass(frozen=True)
class PartitionBacklog:
    """One source partition's backlog."""

    source_index: int
    partition: str
    backlog: Backlog


@dataclass(frozen=True)
class Backlogs:
    """A query's backlog as of a batch, and its partitions', in source and name order."""

    query: QueryBacklog
    partitions: tuple[PartitionBacklog, ...]

    def by_partition(self) -> dict[str, Backlog]:
        """The partitions' backlogs by name (of two sources' partitions of one name, the
        first source's)."""
        found: dict[str, Backlog] = {}
        for p in self.partitions:
            found.setdefault(p.partition, p.backlog)
        return found


class _Offsets:
    """The query's stored batches' partition points, read a batch at a time and kept."""

    def __init__(self, session: so.Session, query_id: str) -> None:
        self.session, self.query_id = session, query_id
        self.read: dict[int, dict[Key, Point]] = {}
        self.oldest: int | None = None

    def of(self, batch_ids: list[int]) -> None:
        """Read the batches of `batch_ids` not read yet (ids without a batch are left out)."""
        wanted = [batch_id for batch_id in batch_ids if batch_id not in self.read]
        for batch_id in wanted:
            self.read[batch_id] = {}
        for row in batch_offsets.of_batches(self.session, self.query_id, wanted):
            self.read[row.batch_id][row.source_index, row.partition] = Point(
                row.batch_time_ms, row.end_offset, row.latest_offset
            )

    def oldest_id(self) -> int:
        """The id of the query's oldest stored batch."""
        if self.oldest is None:
            self.oldest = self.at_or_after(0)
        return self.oldest

    def at_or_after(self, batch_id: int) -> int:
        """The id of the first stored batch at or after `batch_id` (there is one: the newest)."""
        found = self.session.scalar(
            sa.select(sa.func.min(BatchOffsets.batch_id)).where(
                BatchOffsets.query_id == self.query_id, BatchOffsets.batch_id >= batch_id
            )
        )
        assert found is not None
        self.of([found])
        return int(found)


class QueryRow(Protocol):
    """A query's stored row (an ORM object or a plain row) as a backlog reads it."""

    status: str
    updated_at_ms: int


class BatchRow(Protocol):
    """A batch's stored row (an ORM object or a plain row) as a backlog reads it."""

    query_id: str
    batch_id: int
    batch_time_ms: int


def query_runs(query: QueryRow, as_of_ms: int, silence_ms: int = DEFAULT_WINDOW_MS) -> bool:
    """Whether the query runs and has told something (a batch, an idle event) within the
    silence threshold: a partition's backlog is stopped otherwise."""
    return query.status in RUNNING and as_of_ms - query.updated_at_ms <= silence_ms


def window_points(
    session: so.Session, newest: Mapping[str, BatchRow], window_ms: int = WINDOW_MS
) -> dict[str, dict[int, dict[Key, Point]]]:
    """Each query's partitions at the batches of its window (the `window_ms` up to its batch in
    `newest`, and at least its last MIN_POINTS batches; of them every n-th batch id from the
    window's first, at most WINDOW_POINTS, and the newest), by query id and batch id; in one
    statement for at most IN_CHUNK queries."""
    if not newest:
        return {}
    first = first_since(
        {query_id: batch.batch_time_ms - window_ms for query_id, batch in newest.items()}
    )
    last = per_query(BatchOffsets.query_id, {q: batch.batch_id for q, batch in newest.items()})
    start = sa.case(
        (first.c.first_batch.is_(None), last - (MIN_POINTS - 1)),
        (first.c.first_batch > last - (MIN_POINTS - 1), last - (MIN_POINTS - 1)),
        else_=first.c.first_batch,
    )
    # Every step-th batch id from the start: at most WINDOW_POINTS - 1 of them before the newest.
    step = (last - start + WINDOW_POINTS - 2) // (WINDOW_POINTS - 1)
    spread = sa.case((step < 1, 1), else_=step)
    table = batch_offsets.TABLE
    statement = (
        sa.select(table)
        .join(first, first.c.query_id == table.c.query_id)
        .where(
            table.c.batch_id >= start,
            table.c.batch_id <= last,
            sa.or_((table.c.batch_id - start) % spread == 0, table.c.batch_id == last),
        )
        .order_by(table.c.query_id, table.c.batch_id)
    )
    found: dict[str, dict[int, dict[Key, Point]]] = {}
    for row in batch_offsets.partitions_in(session, statement):
        batch = found.setdefault(row.query_id, {}).setdefault(row.batch_id, {})
        batch[row.source_index, row.partition] = Point(
            row.batch_time_ms, row.end_offset, row.latest_offset
        )
    return found


def partition_backlogs(
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
    offsets = _Offsets(session, batch.query_id)
    window = window_points(session, {batch.query_id: batch}, window_ms).get(batch.query_id, {})
    offsets.read.update(window)
    arrivals: dict[Key, Arrival] = {}
    for key, head in window.get(batch.batch_id, {}).items():
        if head.backlog and head.end_offset is not None:
            arrivals[key] = _arrival(
                offsets, key, head.end_offset, offsets.oldest_id(), batch.batch_id
            )
    found = partition_backlogs(window, batch.batch_id, as_of_ms, running, arrivals)
    return Backlogs(of_query([p.backlog for p in found]), found)


def _arrival(offsets: _Offsets, key: Key, head: int, oldest_id: int, newest_id: int) -> Arrival:
    """When the record at offset `head` of partition `key` became available: bisection over
    the stored batches from `oldest_id` to `newest_id`, whose latest offset includes it."""

    def available(batch_id: int) -> bool:
        return _latest(offsets, batch_id, key) > head

    if available(oldest_id):
        return head_arrival(head, None, offsets.read[oldest_id][key])
    # `before` is a stored batch without the head, `after` the next stored batch with it or a
    # later one; no batch is stored from `limit` up to `after`.
    before, after = oldest_id, newest_id
    for batch_id in sorted(offsets.read):
        if before < batch_id < after and offsets.read[batch_id]:
            if available(batch_id):
                after = batch_id
                break
            before = batch_id
    limit = after
    while limit - before > 1:
        middle = (before + limit) // 2
        stored = offsets.at_or_after(middle)
        if stored >= limit:
            limit = middle
        elif available(stored):
            after = limit = stored
        else:
            before = stored
    return head_arrival(head, _point(offsets, before, key), offsets.read[after][key])


def _latest(offsets: _Offsets, batch_id: int, key: Key) -> int:
    """The partition's latest offset at a read batch: 0 when the batch does not have it (the
    partition was not there yet) or its source did not say."""
    point = offsets.read[batch_id].get(key)
    return 0 if point is None or point.latest_offset is None else point.latest_offset


def _point(offsets: _Offsets, batch_id: int, key: Key) -> Point:
    """The partition at a read batch, with nothing available when the batch does not have it."""
    point = offsets.read[batch_id].get(key)
    if point is None:
        return Point(next(iter(offsets.read[batch_id].values())).time_ms, None, 0)
    return point
