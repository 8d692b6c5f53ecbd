"""How far behind a partition is, whether that is getting better or worse, and when it will be
caught up: small pure functions over a partition's offsets at a few recent batches.

A partition's *backlog* is the records available in it but not yet read: its latest offset less
its end offset (Kafka's offsets count records; the end offset is the next one to read, the
*head* of the backlog). Its *age* is how long the head has been waiting: the time since the
head record became available. A source reports what is available only when a batch starts, so
the head's arrival is interpolated between the two batches whose latest offsets bracket it
(records taken to arrive evenly between them, as kafka-lag-exporter does with its table of
offsets and times); a head already there at the first batch stored arrived before it, and its
age is at least the time since then.

Over a window of batches (the last minute, and at least three batches) a partition has an
arrival rate (records a second becoming available: the slope of its latest offsets over time,
least squares), a read rate (that of its end offsets) and a backlog trend: growing, stable or
shrinking. The trend is the backlog's own least-squares slope when the fit says it is not noise
(it stands further from zero than :data:`T_CRITICAL` standard errors: batch boundaries make a
backlog saw-toothed), whatever the backlog's size: a backlog of 42,000 that drains by 30 records
a second shrinks. Fewer than three batches show no trend. Its catch-up time is the backlog over
the rate it drains at (read less arrival) while it catches up, 0 when there is none, and none
when it does not drain.

Its verdict needs no threshold, as Burrow's evaluator (the first that holds):

1. `rewound` — its end offset went backwards within the window;
2. `stopped` — it has a backlog and its query does not run, or has told nothing for the
   silence threshold;
3. `stalled` — it has a backlog at every batch of the window and its end offset has not moved;
4. `ok` — its backlog was empty at some batch of the window;
5. `falling_behind` — its backlog grew over the window;
6. `catching_up` — its backlog shrank over the window;
7. `ok` — it keeps pace with a steady backlog.

One batch shows no rates, and fewer than three no trend: their verdict is only one of the first
four (no backlog is `ok`). A partition whose source reports no latest offsets has no backlog
figures and no verdict.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, NamedTuple

# How far back rates and trends look: a minute, so that a drain that began a minute ago shows
# at its own rate.
WINDOW_MS = 60_000
# How many standard errors a backlog's slope must stand from zero to be a trend, by the fit's
# degrees of freedom (points less two): Student's t at 99%, two-sided. Beyond the table, its
# last value (the window holds at most twelve points).
T_CRITICAL = (63.66, 9.92, 5.84, 4.60, 4.03, 3.71, 3.50, 3.36, 3.25, 3.17)


class Verdict(enum.IntEnum):
    """A partition's verdict; a smaller value is worse, and a query has its worst."""

    STOPPED = 0
    STALLED = 1
    REWOUND = 2
    FALLING_BEHIND = 3
    CATCHING_UP = 4
    OK = 5

    @property
    def label(self) -> str:
        """The verdict as the API, the pages and the rules name it."""
        return self.name.lower()


class Trend(str, enum.Enum):
    """Which way a backlog goes over the window."""

    GROWING = "growing"
    STABLE = "stable"
    SHRINKING = "shrinking"


class Age(str, enum.Enum):
    """How a backlog's age was found."""

    # No backlog: nothing waits.
    NONE = "none"
    # The head's arrival interpolated between the batches whose latest offsets bracket it.
    INTERPOLATED = "interpolated"
    # The head was available at the first batch stored: it waited at least since then.
    AT_LEAST = "at_least"


class Point(NamedTuple):
    """A partition at one batch: when the batch started, the offset it read up to (the next to
    read) and the latest offset the source had then. A named tuple, made twice as fast as a
    frozen dataclass: an overview of 50 queries makes tens of thousands of them, which was an
    eighth of the server's time under a flood of senders."""

    time_ms: int
    end_offset: int | None
    latest_offset: int | None

    @property
    def backlog(self) -> int | None:
        """Records available and not read, None when the source does not say."""
        if self.end_offset is None or self.latest_offset is None:
            return None
        return max(self.latest_offset - self.end_offset, 0)


@dataclass(frozen=True)
class Arrival:
    """When the head of a backlog became available, and how that was found."""

    time_ms: int | None
    kind: Age


def head_arrival(head: int, before: Point | None, after: Point) -> Arrival:
    """When the record at offset `head` became available: between `before`, the last batch
    whose latest offset did not include it (None: no stored batch is that old), and `after`,
    the next batch, whose latest offset did."""
    if before is None or before.latest_offset is None or after.latest_offset is None:
        return Arrival(after.time_ms, Age.AT_LEAST)
    arrived = after.latest_offset - before.latest_offset
    # The records between the two latest offsets arrived evenly between the two batches; the
    # record at `head` is the (head - before + 1)-th of them.
    share = min(max(head - before.latest_offset + 1, 0), arrived) / arrived if arrived else 1.0
    return Arrival(
        round(before.time_ms + share * (after.time_ms - before.time_ms)), Age.INTERPOLATED
    )


@dataclass(frozen=True)
class Backlog:
    """A partition's backlog as of `as_of_ms`: records behind, how old its head is, the rates
    and trend over the window, when it will be caught up, and its verdict; figures that
    cannot be known are None."""

    records: int | None
    age_ms: int | None
    age: Age | None
    arrival_rate: float | None
    read_rate: float | None
    trend: Trend | None
    catch_up_ms: int | None
    verdict: Verdict | None


UNKNOWN = Backlog(None, None, None, None, None, None, None, None)


def slope(times_ms: Sequence[int], values: Sequence[int]) -> float:
    """The least-squares slope of `values` over `times_ms`, per second (0 over no time)."""
    n = len(times_ms)
    mean_t, mean_v = sum(times_ms) / n, sum(values) / n
    spread = sum((t - mean_t) ** 2 for t in times_ms)
    if not spread:
        return 0.0
    covariance = sum((t - mean_t) * (v - mean_v) for t, v in zip(times_ms, values, strict=True))
    return covariance / spread * 1000


def slope_error(times_ms: Sequence[int], values: Sequence[int], per_second: float) -> float:
    """The standard error of the least-squares slope `per_second` of `values` over `times_ms`,
    per second, from the scatter of the values about the fitted line (at least three points)."""
    n = len(times_ms)
    mean_t, mean_v = sum(times_ms) / n, sum(values) / n
    per_ms = per_second / 1000
    residuals = sum(
        (v - mean_v - per_ms * (t - mean_t)) ** 2 for t, v in zip(times_ms, values, strict=True)
    )
    spread = sum((t - mean_t) ** 2 for t in times_ms)
    return (residuals / (n - 2) / spread) ** 0.5 * 1000 if spread else 0.0


def trend_of(times_ms: Sequence[int], backlogs: Sequence[int]) -> tuple[Trend | None, float]:
    """Which way the backlogs go (None from fewer than three), and their slope in records a
    second: growing or shrinking when the slope stands out of the fit's noise."""
    per_second = slope(times_ms, backlogs)
    if len(times_ms) < 3:
        return None, per_second
    critical = T_CRITICAL[min(len(times_ms) - 2, len(T_CRITICAL)) - 1]
    if per_second == 0 or abs(per_second) <= critical * slope_error(times_ms, backlogs, per_second):
        return Trend.STABLE, per_second
    return (Trend.GROWING if per_second > 0 else Trend.SHRINKING), per_second


def assess(
    window: Sequence[Point], arrival: Arrival | None, as_of_ms: int, running: bool
) -> Backlog:
    """A partition's backlog from its points over the window (oldest first, the newest last),
    its head's arrival (None when it has no backlog) and whether its query runs and tells."""
    known = [p for p in window if p.backlog is not None]
    if not known or known[-1] is not window[-1]:
        return UNKNOWN
    times = [p.time_ms for p in known]
    backlogs = [p.backlog or 0 for p in known]
    ends = [p.end_offset or 0 for p in known]
    records = backlogs[-1]
    age, age_ms = _age(records, arrival, as_of_ms)
    if len(known) < 2:
        # One batch shows no rate and no trend.
        verdict = _verdict(ends, backlogs, None, running)
        return Backlog(records, age_ms, age, None, None, None, _catch_up(records, None), verdict)
    trend, per_second = trend_of(times, backlogs)
    verdict = _verdict(ends, backlogs, trend, running)
    # Where no batch found it empty, the backlog's slope is the read rate less the arrival's.
    drain = -per_second if trend is Trend.SHRINKING and verdict in _DRAINING else None
    return Backlog(
        records=records,
        age_ms=age_ms,
        age=age,
        arrival_rate=max(slope(times, [p.latest_offset or 0 for p in known]), 0.0),
        read_rate=max(slope(times, ends), 0.0),
        trend=trend,
        catch_up_ms=_catch_up(records, drain),
        verdict=verdict,
    )


def _age(records: int, arrival: Arrival | None, as_of_ms: int) -> tuple[Age | None, int | None]:
    """How the head's wait was found and how long it is, as of `as_of_ms`."""
    if records == 0:
        return Age.NONE, 0
    if arrival is not None and arrival.time_ms is not None:
        return arrival.kind, max(as_of_ms - arrival.time_ms, 0)
    return None, None


# The verdicts under which a shrinking backlog drains: not one that stopped, stalled or went back.
_DRAINING = frozenset({Verdict.CATCHING_UP, Verdict.OK})


def _catch_up(records: int, drain: float | None) -> int | None:
    """When a backlog of `records` is caught up, draining at `drain` records a second: now
    when there is none, None when it does not drain."""
    if records == 0:
        return 0
    if drain is None or drain <= 0:
        return None
    return round(records / drain * 1000)


def _verdict(
    ends: Sequence[int], backlogs: Sequence[int], trend: Trend | None, running: bool
) -> Verdict | None:
    if any(later < earlier for earlier, later in pairwise(ends)):
        return Verdict.REWOUND
    if backlogs[-1] and not running:
        return Verdict.STOPPED
    if len(ends) > 1 and all(backlogs) and ends[0] == ends[-1]:
        return Verdict.STALLED
    if not all(backlogs):
        return Verdict.OK
    if trend is Trend.GROWING:
        return Verdict.FALLING_BEHIND
    if trend is Trend.SHRINKING:
        return Verdict.CATCHING_UP
    return None if trend is None else Verdict.OK


@dataclass(frozen=True)
class QueryBacklog:
    """A query's backlog: its partitions' records summed, the oldest head, the worst verdict
    and the longest catch-up of the partitions that drain (None when one does not: falls
    behind, stalls, stopped, went back or is not known yet; or when none drains and some keep
    pace with a steady backlog)."""

    records: int | None
    age_ms: int | None
    age: Age | None
    catch_up_ms: int | None
    verdict: Verdict | None


def of_query(partitions: Sequence[Backlog]) -> QueryBacklog:
    """The query's backlog from its partitions'."""
    known = [p for p in partitions if p.records is not None]
    if not known:
        return QueryBacklog(None, None, None, None, None)
    oldest = max(known, key=lambda p: -1 if p.age_ms is None else p.age_ms)
    # A partition with a backlog and no verdict yet leaves the query's not known either.
    judged = [p.verdict for p in known if p.verdict is not None]
    unjudged = any(p.records and p.verdict is None for p in known)
    verdict = min(judged) if judged and not unjudged else None
    records = sum(p.records or 0 for p in known)
    return QueryBacklog(
        records=records,
        age_ms=oldest.age_ms,
        age=oldest.age,
        catch_up_ms=_query_catch_up(known, records, verdict),
        verdict=verdict,
    )


def _query_catch_up(known: Sequence[Backlog], records: int, verdict: Verdict | None) -> int | None:
    """When the partitions that drain are caught up (those that keep pace with a steady
    backlog are as caught up as they get): None when one does not drain, or none does."""
    if verdict not in _DRAINING:
        return None
    drains = [p.catch_up_ms for p in known if p.catch_up_ms]
    if drains:
        return max(drains)
    return 0 if records == 0 else None


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


def backlog_fields(backlog: Backlog) -> dict[str, Any]:
    """A partition's backlog as the API and `wmon partitions --json` give it."""
    return {
        "backlog_records": backlog.records,
        "backlog_age_ms": backlog.age_ms,
        "backlog_age": None if backlog.age is None else backlog.age.value,
        "arrival_rate": backlog.arrival_rate,
        "read_rate": backlog.read_rate,
        "backlog_trend": None if backlog.trend is None else backlog.trend.value,
        "catch_up_ms": backlog.catch_up_ms,
        "verdict": None if backlog.verdict is None else backlog.verdict.label,
    }


def query_backlog_fields(backlog: QueryBacklog) -> dict[str, Any]:
    """A query's backlog as the API gives it."""
    return {
        "records": backlog.records,
        "age_ms": backlog.age_ms,
        "age": None if backlog.age is None else backlog.age.value,
        "catch_up_ms": backlog.catch_up_ms,
        "verdict": None if backlog.verdict is None else backlog.verdict.label,
    }
