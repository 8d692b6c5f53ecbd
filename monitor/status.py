"""A query's status at a glance: one small pure rule over facts read from the store.

The first rule that matches wins:

1. `failed` — the run ended with an exception;
2. `terminated` — the run ended without one;
3. `stalled` — the latest batch's watermark is stalled, one of its partitions is stalled, or an
   active query has reported no progress for the stall timeout (a hung or killed driver);
4. `lagging` — records were dropped as late within the late window, or the total offset lag
   of the recent batches grew (Burrow's rule: work arrives faster than it is done);
5. `idle` — Spark reported the query idle, or every partition of its latest batch is idle;
6. `healthy` otherwise.

Statuses sort by urgency: failed, stalled, lagging, idle, healthy, then terminated (a query
that ended cleanly needs no one's attention).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass


class Status(enum.IntEnum):
    """A query's status; a smaller value is more urgent and sorts first."""

    FAILED = 0
    STALLED = 1
    LAGGING = 2
    IDLE = 3
    HEALTHY = 4
    TERMINATED = 5

    @property
    def label(self) -> str:
        """The status as the API and the pages name it."""
        return self.name.lower()


@dataclass(frozen=True)
class Facts:
    """What the status rule needs to know about a query, as stored."""

    stored_status: str
    last_progress_ms: int
    watermark_stalled: bool = False
    partitions: int = 0
    stalled_partitions: int = 0
    idle_partitions: int = 0
    late_records: int = 0
    offset_lag_trend: Sequence[int | None] = ()


def _stalled(facts: Facts, now_ms: int, stall_timeout_ms: int) -> bool:
    silent = facts.stored_status == "active" and now_ms - facts.last_progress_ms >= stall_timeout_ms
    return facts.watermark_stalled or facts.stalled_partitions > 0 or silent


def _lag_grew(trend: Sequence[int | None]) -> bool:
    known = [lag for lag in trend if lag is not None]
    return len(known) >= 2 and known[-1] > known[0]


def _idle(facts: Facts) -> bool:
    every_partition = facts.partitions > 0 and facts.idle_partitions == facts.partitions
    return facts.stored_status == "idle" or every_partition


def query_status(facts: Facts, now_ms: int, stall_timeout_ms: int) -> Status:
    """The status of a query at `now_ms`, by the rules of this module's docstring."""
    if facts.stored_status == "failed":
        return Status.FAILED
    if facts.stored_status == "terminated":
        return Status.TERMINATED
    if _stalled(facts, now_ms, stall_timeout_ms):
        return Status.STALLED
    if facts.late_records > 0 or _lag_grew(facts.offset_lag_trend):
        return Status.LAGGING
    return Status.IDLE if _idle(facts) else Status.HEALTHY
