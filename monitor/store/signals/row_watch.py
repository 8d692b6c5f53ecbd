"""Notice what anyone wrote to the store since the last look, with a few cheap reads.

A row counts as new when its key was not seen before or its content changed. Content matters:
SQLite gives a replayed latest batch the primary key of the row it replaced (the largest id
plus one, and the largest was just deleted), so a growing maximum id alone would miss it.
The rows a look reports are then read in full by their entity's reader (`batches_by_id`,
`timer_snapshots_by_id`, `alert_events_by_id`).

What a watch has seen can be handed to another process as JSON (`seen_rows`, `go_on_from`),
which then reports exactly what the first had not: the dashboard's watcher hands the live push
on this way when it stops.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.schema.models import AlertEvent, Batch, Query, TimerSnapshotRow

# The newest rows are read again at every look: a transaction that took an id early but
# committed after this many newer rows (another writer's) would go unnoticed.
KEEP_ROWS = 1_000

Fingerprint = tuple[Any, ...]


class RowWatch:
    """The rows of a table, by key: which appeared or changed since the last accepted look.

    A look counts once it is accepted, so that what a failed push did not send is reported
    again by the next look. With `keep`, only the rows among the newest `keep` integer keys
    are looked at again, which keeps each look small on history tables; without it the
    whole table is read.
    """

    def __init__(self, key: Any, columns: Sequence[Any], keep: int | None = None) -> None:
        self._key, self._columns, self._keep = key, tuple(columns), keep
        self._known: dict[Any, Fingerprint] = {}
        self._floor: int | None = None
        self._primed = False
        self._looked: tuple[dict[Any, Fingerprint], int | None] | None = None
        self._reported: dict[Any, Fingerprint] = {}

    @property
    def primed(self) -> bool:
        """Whether a first look has taken the store as it was."""
        return self._primed

    def prime(self, session: so.Session) -> None:
        """Take the store as it is now as seen: later looks report only what comes after."""
        if self._keep is not None:
            top = session.scalar(sa.select(sa.func.max(self._key)))
            self._floor = (top or 0) - self._keep
        self._known = dict(self._read(session))
        self._primed = True

    def look(self, session: so.Session) -> list[Any]:
        """The keys of the rows that appeared or changed since the last accepted look, oldest
        first; the first look only primes the watch."""
        if not self._primed:
            self.prime(session)
            return []
        rows = self._read(session)
        self._reported = {key: content for key, content in rows if self._known.get(key) != content}
        floor = self._floor
        if self._keep is not None and rows:
            floor = max(floor or 0, rows[-1][0] - self._keep)
        self._looked = ({k: v for k, v in rows if floor is None or k > floor}, floor)
        return list(self._reported)

    def reported(self, key: Any) -> Fingerprint:
        """The content of a row the last look reported, as read then."""
        return self._reported[key]

    def accept(self) -> None:
        """Count the last look as handled: its rows are seen from now on."""
        if self._looked is not None:
            self._known, self._floor = self._looked
            self._looked = None

    def seen(self, key: Any, fingerprint: Fingerprint) -> bool:
        """Whether a row with this content was already there at the last accepted look."""
        settled = self._floor is not None and key <= self._floor
        return settled or self._known.get(key) == fingerprint

    def seen_rows(self) -> dict[str, Any]:
        """What the accepted looks have seen, as JSON."""
        return {
            "primed": self._primed,
            "floor": self._floor,
            "known": [[key, list(content)] for key, content in self._known.items()],
        }

    def go_on_from(self, seen: dict[str, Any]) -> None:
        """Take what another watch of the same rows had seen (its `seen_rows`) as seen here:
        the next look reports what that one had not."""
        self._primed, self._floor = seen["primed"], seen["floor"]
        self._known = {key: tuple(content) for key, content in seen["known"]}
        self._looked = None

    def fingerprint(self, row: Any) -> Fingerprint:
        """The content of a mapped row, as the looks compare it."""
        return tuple(getattr(row, column.key) for column in self._columns)

    def _read(self, session: so.Session) -> list[tuple[Any, Fingerprint]]:
        statement = sa.select(self._key, *self._columns).order_by(self._key)
        if self._floor is not None:
            statement = statement.where(self._key > self._floor)
        return [(row[0], tuple(row[1:])) for row in session.execute(statement)]


# What tells two versions of a batch apart: a replay rewrites the run, time and figures. The
# live push's payloads carry the same fields, so every process can tell them apart too.
BATCH_CONTENT = ("batch_id", "run_id", "batch_time_ms", "watermark_ms", "num_input_rows")


class BatchWatch(RowWatch):
    """Watch new and replayed batches, by row id; each reported with its query's id."""

    def __init__(self, keep: int | None) -> None:
        columns = [Batch.query_id, *(getattr(Batch, name) for name in BATCH_CONTENT)]
        super().__init__(Batch.id, columns, keep)

    def query_of(self, key: int) -> str:
        """The query of a batch the last look reported."""
        query_id: str = self.reported(key)[0]
        return query_id


def batch_watch(keep: int = KEEP_ROWS) -> BatchWatch:
    """Watch new and replayed batches."""
    return BatchWatch(keep)


def timer_watch(keep: int = KEEP_ROWS) -> RowWatch:
    """Watch new pending-timer snapshots."""
    return RowWatch(TimerSnapshotRow.id, (TimerSnapshotRow.query_id,), keep)


def alert_event_watch(keep: int = KEEP_ROWS) -> RowWatch:
    """Watch new alert transitions and acknowledgements, whoever stored them."""
    return RowWatch(AlertEvent.id, (AlertEvent.alert_id, AlertEvent.transition), keep)


def query_watch() -> RowWatch:
    """Watch every query's row: status, run, progress, failure."""
    columns = (
        Query.name,
        Query.run_id,
        Query.status,
        Query.updated_at_ms,
        Query.last_batch_id,
        Query.terminated_at_ms,
        Query.error_class,
    )
    return RowWatch(Query.id, columns)
