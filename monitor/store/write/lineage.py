"""Where a batch belongs in its query's lineage, whatever order batches arrive in.

A query's batch ids form one lineage. Within a run they only grow, but senders may deliver
them late, twice, or from several processes at once; none of that is a restart. A run that
begins later (Spark restarting from the checkpoint) takes over the lineage from its first
batch on: what older runs stored from that batch id up is superseded, and an older run's
batch that arrives afterwards at or above it is stale.

Runs are ordered by when they began, by their drivers' clocks. Two runs that began within
CLOCK_SKEW_MS of each other (a job crash-looping across hosts whose clocks disagree) are
ordered by when the store first heard of them instead: a run cannot report before the run it
restarted from has stopped reporting.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

CLOCK_SKEW_MS = 60_000


@dataclass(frozen=True)
class RunSpan:
    """A run of one query: when it began, when the store first heard of it, and the first and
    last batch ids stored from it."""

    run_id: str
    began_at_ms: int | None
    first_stored_ms: int | None
    first_batch_id: int | None
    last_batch_id: int | None

    def is_newer_than(self, other: RunSpan) -> bool:
        """Whether this run began after `other`: by the drivers' clocks, or by when the store
        first heard of each if those are too close to tell (the run id breaks a tie)."""
        began, other_began = _known(self.began_at_ms), _known(other.began_at_ms)
        if abs(began - other_began) > CLOCK_SKEW_MS:
            return began > other_began
        heard, other_heard = _known(self.first_stored_ms), _known(other.first_stored_ms)
        return (heard, began, self.run_id) > (other_heard, other_began, other.run_id)


def _known(ms: int | None) -> int:
    return -1 if ms is None else ms


class Admission(enum.Enum):
    """What to do with an arriving batch."""

    STORE = "store"
    # Its run has stored batches around it: it may have been stored already.
    STORE_UNLESS_STORED = "store unless stored"
    # A run that began later took over the lineage at or below it.
    STALE = "stale"


@dataclass(frozen=True)
class Placement:
    """A batch's admission, and the older runs whose batches from its id on it supersedes."""

    admission: Admission
    supersedes: tuple[str, ...] = ()


def place(run: RunSpan, others: Sequence[RunSpan], batch_id: int) -> Placement:
    """Where batch `batch_id` of `run` belongs among the query's `others` runs."""
    others = [other for other in others if other.run_id != run.run_id]
    newer_starts = [
        other.first_batch_id
        for other in others
        if other.first_batch_id is not None and other.is_newer_than(run)
    ]
    if any(start <= batch_id for start in newer_starts):
        return Placement(Admission.STALE)
    older = [other for other in others if not other.is_newer_than(run)]
    supersedes = tuple(
        other.run_id
        for other in older
        if other.last_batch_id is not None and other.last_batch_id >= batch_id
    )
    first, last = run.first_batch_id, run.last_batch_id
    if first is not None and last is not None and first <= batch_id <= last:
        return Placement(Admission.STORE_UNLESS_STORED, supersedes)
    return Placement(Admission.STORE, supersedes)
