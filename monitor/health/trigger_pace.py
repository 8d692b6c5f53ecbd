"""Batches slower than their trigger: a query's batch durations over a window against its
trigger's interval, and the stage of the batch that grew — small pure functions over what Spark
reports per batch.

A query with a processing-time trigger of interval I starts a batch every I; a batch that takes
longer than I delays the next, which then starts as soon as it ends (Spark logs "Current batch
is falling behind"). The query *falls behind its trigger* when its batches' median duration
(`durationMs.triggerExecution`) over the window is longer than I: from then on it reads less
often than it was meant to, and its backlog grows unless a batch catches up.

Which stage grew comes from the other parts of `durationMs` — `addBatch` (the sink's work, and
the query's own), `latestOffset` and `getBatch` (asking the sources), `queryPlanning`,
`walCommit` and `commitOffsets` (the checkpoint's writes), … —: the one whose mean rose most
from the window's earlier half to its later half; where none rose, the longest one.

The trigger is known where the way in read it from the running query (the listeners do;
Spark's event log does not tell): without it, or for a trigger without an interval (available
now, once), the durations and stages are shown and nothing is judged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean, median
from typing import Any

from monitor.events import PERIODIC_TRIGGERS

# The whole batch's duration among durationMs' parts; the others are its stages.
TOTAL = "triggerExecution"
# Batches of the window needed before anything is judged.
MIN_BATCHES = 3


@dataclass(frozen=True, slots=True)
class BatchTiming:
    """One batch's duration and its stages' (durationMs without its total), in ms."""

    time_ms: int
    duration_ms: int | None
    stages_ms: Mapping[str, int]


def timing(time_ms: int, durations_ms: Mapping[str, Any] | None) -> BatchTiming:
    """A batch's timing from its stored `durationMs`."""
    parts = {k: int(v) for k, v in (durations_ms or {}).items() if isinstance(v, int | float)}
    total = parts.pop(TOTAL, None)
    return BatchTiming(time_ms, total, parts)


@dataclass(frozen=True)
class TriggerPace:
    """A query's batches over the window against its trigger: the trigger (None: not known),
    how many batches, their median duration, how many took longer than the interval, whether
    the query falls behind its trigger (None: nothing to judge against), and the stage that
    grew (or the longest), with its mean in the window's earlier and later halves."""

    trigger: str | None
    interval_ms: int | None
    batches: int
    duration_ms: int | None
    slower: int
    behind: bool | None
    stage: str | None
    stage_from_ms: int | None
    stage_to_ms: int | None

    @property
    def stage_grew(self) -> bool:
        """Whether the stage named took longer in the window's later half."""
        return (self.stage_to_ms or 0) > (self.stage_from_ms or 0)


def assess(
    trigger: str | None, interval_ms: int | None, batches: Sequence[BatchTiming]
) -> TriggerPace:
    """The pace of a query's `batches` over the window (oldest first) against its trigger."""
    durations = [b.duration_ms for b in batches if b.duration_ms is not None]
    typical = round(median(durations)) if durations else None
    interval = interval_ms if trigger in PERIODIC_TRIGGERS and interval_ms else None
    behind = None
    if interval is not None and typical is not None and len(durations) >= MIN_BATCHES:
        behind = typical > interval
    stage, before, after = _stage(batches)
    return TriggerPace(
        trigger=trigger,
        interval_ms=interval_ms,
        batches=len(batches),
        duration_ms=typical,
        slower=0 if interval is None else sum(d > interval for d in durations),
        behind=behind,
        stage=stage,
        stage_from_ms=before,
        stage_to_ms=after,
    )


def _stage(batches: Sequence[BatchTiming]) -> tuple[str | None, int | None, int | None]:
    """The stage whose mean rose most from the earlier half of `batches` to the later (the
    middle one in both when their number is odd); where none rose, the longest in the later."""
    if not batches:
        return None, None, None
    half = (len(batches) + 1) // 2
    earlier, later = batches[:half], batches[len(batches) - half :]
    names = sorted({name for b in batches for name in b.stages_ms})
    if not names:
        return None, None, None
    means = {name: (_mean(earlier, name), _mean(later, name)) for name in names}
    grown = max(names, key=lambda name: means[name][1] - means[name][0])
    if means[grown][1] <= means[grown][0]:
        grown = max(names, key=lambda name: means[name][1])
    before, after = means[grown]
    return grown, round(before), round(after)


def _mean(batches: Sequence[BatchTiming], stage: str) -> float:
    """The stage's mean over the batches, 0 in a batch that does not report it."""
    return fmean(b.stages_ms.get(stage, 0) for b in batches)


def pace_fields(pace: TriggerPace) -> dict[str, Any]:
    """A query's trigger and its batches' pace against it, as the API gives them."""
    return {
        "kind": pace.trigger,
        "interval_ms": pace.interval_ms,
        "batches": pace.batches,
        "duration_ms": pace.duration_ms,
        "slower_batches": pace.slower,
        "behind": pace.behind,
        "stage": pace.stage,
        "stage_from_ms": pace.stage_from_ms,
        "stage_to_ms": pace.stage_to_ms,
        "stage_grew": pace.stage_grew,
    }
