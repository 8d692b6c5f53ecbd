"""Health as small pure predicates: over a partition's state carried batch to batch (applied as
a batch is stored), and over the facts about a query (applied by its status and the alert rules).

A partition is *idle* when no new records have become available in it for the idle timeout and
it has no backlog; *stalled* when it has a backlog or keeps receiving records yet has not
advanced for the stall timeout; *rewound* when its offset went backwards. The query watermark
is stalled or rewound by the same rules. A running query is *silent* when it has reported
nothing (no progress, no idle event) for the silence threshold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from monitor.config import DEFAULT_IDLE_TIMEOUT_S, DEFAULT_STALL_TIMEOUT_S
from monitor.health.facts import PartitionFacts, QueryFacts, StoredStatus, Thresholds


@dataclass(frozen=True)
class Timeouts:
    """How long a condition must last before it counts, in milliseconds; by default, the
    WMON_IDLE_TIMEOUT and WMON_STALL_TIMEOUT defaults."""

    idle_ms: int = DEFAULT_IDLE_TIMEOUT_S * 1000
    stall_ms: int = DEFAULT_STALL_TIMEOUT_S * 1000


@dataclass(frozen=True, slots=True)
class Progress:
    """Where a partition (or a query's watermark) stands after a batch, and since when."""

    position: int | None
    available: int | None
    last_arrival_ms: int
    last_advance_ms: int


def advance(
    before: Progress | None, position: int | None, available: int | None, now_ms: int
) -> Progress:
    """The state after a batch: arrival is new data becoming available, advance is progress."""
    if before is None:
        return Progress(position, available, now_ms, now_ms)
    advanced = _grew(before.position, position)
    # A source that reports no latest offset shows new data only by being read.
    arrived = _grew(before.available, available) or (available is None and advanced)
    return Progress(
        position=position,
        available=available,
        last_arrival_ms=now_ms if arrived else before.last_arrival_ms,
        last_advance_ms=now_ms if advanced else before.last_advance_ms,
    )


def _grew(before: int | None, after: int | None) -> bool:
    return after is not None and (before is None or after > before)


def backlog(state: Progress) -> int:
    """Records available but not yet processed (0 when unknown)."""
    if state.available is None or state.position is None:
        return 0
    return max(state.available - state.position, 0)


def is_idle(state: Progress, now_ms: int, timeouts: Timeouts) -> bool:
    """No new records available for the idle timeout, and nothing waiting in a backlog."""
    return backlog(state) == 0 and now_ms - state.last_arrival_ms >= timeouts.idle_ms


def is_stalled(state: Progress, now_ms: int, timeouts: Timeouts) -> bool:
    """Work is waiting or still arriving, yet the position has not moved for the stall timeout."""
    waiting = backlog(state) > 0 or state.last_arrival_ms > state.last_advance_ms
    return waiting and now_ms - state.last_advance_ms >= timeouts.stall_ms


def is_rewound(before: Progress | None, position: int | None) -> bool:
    """The position went backwards, as after a restore from an older checkpoint."""
    return (
        before is not None
        and before.position is not None
        and position is not None
        and position < before.position
    )


def _active(watermarks: Mapping[str, int | None], idle: set[str]) -> list[int]:
    return [w for p, w in watermarks.items() if w is not None and p not in idle]


def skew_between(
    watermarks: Mapping[str, int | None], idle: set[str], driver: str | None = None
) -> int | None:
    """max W_p - min W_p over the partitions that are not idle and the partition that drives
    the query's watermark, idle or not: a fast partition that has caught up and gone idle
    still holds Spark's watermark where it left it, ahead of the others."""
    active = _active(watermarks, idle - {driver})
    return max(active) - min(active) if active else None


def flink_watermark(watermarks: Mapping[str, int | None], idle: set[str]) -> int | None:
    """The watermark Flink would have: the minimum of the non-idle partition watermarks."""
    return min(_active(watermarks, idle), default=None)


def is_silent(facts: QueryFacts, now_ms: int) -> bool:
    """A running query has reported nothing for longer than the silence threshold (Spark sends
    idle events while a query waits for data, so a quiet query is not silent)."""
    return facts.active and now_ms - facts.last_progress_ms > facts.thresholds.silence_ms


def has_stalled_work(facts: QueryFacts) -> bool:
    """The latest batch's watermark, or one of its partitions, is marked stalled."""
    return facts.watermark_stalled or any(p.stalled for p in facts.latest_partitions)


def is_losing_late(partition: PartitionFacts, thresholds: Thresholds) -> bool:
    """The partition dropped more than the late count of records as late within the late
    window, and more than the late share of what it read in it: a trickle of late records on
    a busy partition is not losing records."""
    late, read = partition.late_records, partition.records
    return late > thresholds.late_count and late * 10_000 > thresholds.late_share * read


def losing_late(facts: QueryFacts) -> list[PartitionFacts]:
    """The partitions that lose records as late (:func:`is_losing_late`)."""
    return [p for p in facts.partitions if is_losing_late(p, facts.thresholds)]


def has_future_dated(facts: QueryFacts) -> bool:
    """A partition read records more than the tolerance ahead of the clock within the
    window: one of them can drag the watermark ahead and every record after it is late."""
    return any(p.future is not None for p in facts.partitions)


def is_all_idle(facts: QueryFacts) -> bool:
    """Spark called the query idle, or every partition of its latest batch is idle."""
    latest = facts.latest_partitions
    return facts.status == StoredStatus.IDLE or (bool(latest) and all(p.idle for p in latest))
