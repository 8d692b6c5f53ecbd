"""The facts about one query that every judgement of its health is made from: the stored
status, the latest batch's health flags, and what happened within the look-back windows.

One reader builds them from the store
(:func:`monitor.store.read.read_facts.read_facts`); the dashboard's status
(:mod:`monitor.health.status`) and the alert rules (:mod:`monitor.alerts.rules`) both decide on
them, so the two cannot disagree about the same store.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from monitor.events import Record
from monitor.health.backlog import Backlogs, Verdict
from monitor.health.state_growth import StateGrowth
from monitor.health.trigger_pace import TriggerPace

DEFAULT_WINDOW_MS = 300_000


class StoredStatus(str, enum.Enum):
    """What a query's last run reported, as stored: running (Spark may have called it idle),
    or ended, with an exception or without. (Its status at a glance, judged from this and its
    batches, is :class:`monitor.health.status.Status`.)"""

    ACTIVE = "active"
    IDLE = "idle"
    TERMINATED = "terminated"
    FAILED = "failed"


# The stored statuses of a query that runs, as stored (plain text, for SQL).
RUNNING = (StoredStatus.ACTIVE.value, StoredStatus.IDLE.value)


@dataclass(frozen=True)
class Thresholds:
    """How far back the facts look, and how long a running query may say nothing.

    A late record or a rewind shows in one batch only, so the facts count them over a window;
    the alert rules set these from their parameters (a rules file may change them per query),
    and the defaults here are those parameters' defaults: defined once, below the rules.
    """

    late_window_ms: int = DEFAULT_WINDOW_MS
    # A partition loses records when it dropped more than `late_count` in the late window,
    # and more than `late_share` (hundredths of a percent) of what it read in it.
    late_count: int = 100
    late_share: int = 100
    rewound_window_ms: int = DEFAULT_WINDOW_MS
    future_window_ms: int = DEFAULT_WINDOW_MS
    silence_ms: int = DEFAULT_WINDOW_MS


@dataclass(frozen=True)
class TrendPoint:
    """One recent batch in a query's small trend line."""

    batch_id: int
    batch_time_ms: int
    watermark_ms: int | None
    offset_lag: int | None


@dataclass(frozen=True)
class FutureDated:
    """A partition's records more than the tolerance ahead of their batch's processing time,
    over a range of batches: how many, the largest lead, and samples, the newest batches'
    first ones first."""

    records: int
    lead_ms: int | None
    samples: tuple[Record, ...] = ()


@dataclass(frozen=True)
class PartitionFacts:
    """One source partition: its flags and its backlog's verdict in the latest batch (when it
    is in it), its late records and the records it read in the late window (as the
    instrumented operator counts them), whether it went back and its future-dated records,
    within the windows."""

    name: str
    idle: bool = False
    stalled: bool = False
    rewound: bool = False
    offset_lag: int | None = None
    late_records: int = 0
    records: int = 0
    in_latest_batch: bool = True
    future: FutureDated | None = None
    # Its backlog's verdict over the last minute of batches (health.backlog).
    verdict: Verdict | None = None
    # The topic of a Kafka partition ('telemetry' of 'telemetry/3'), as its source said it.
    topic: str | None = None


@dataclass(frozen=True)
class QueryFacts:
    """What is known of one query: its stored state, its latest batch, its recent trend."""

    query_id: str
    name: str | None
    status: str
    last_progress_ms: int
    ended_at_ms: int | None = None
    exception: str | None = None
    # Its latest batch's id; None before its first batch is stored.
    batch_id: int | None = None
    watermark_ms: int | None = None
    watermark_stalled: bool = False
    watermark_rewound: bool = False
    skew_ms: int | None = None
    thresholds: Thresholds = Thresholds()
    partitions: tuple[PartitionFacts, ...] = ()
    trend: tuple[TrendPoint, ...] = ()
    # The rules with a live alert on the query itself: what is already being told.
    alerting: frozenset[str] = frozenset()
    # How far ahead of the store's clock the job's last claimed time was (None: not known).
    clock_ahead_ms: int | None = None
    # How far behind their arrival the job's last claimed time was (None: not known).
    clock_behind_ms: int | None = None
    # The batch in flight as the driver last told, and since when (None: none, or no one
    # tells: only `monitor.attach` does).
    running_batch_id: int | None = None
    running_since_ms: int | None = None
    # Its latest batch's backlog, the query's and its partitions' (health.backlog): the ages
    # only where the overview asked.
    backlog: Backlogs | None = None
    # Its stateful operators' state over the window (health.state_growth).
    state: tuple[StateGrowth, ...] = ()
    # Its batches' durations over the window against its trigger (health.trigger_pace).
    pace: TriggerPace | None = None
    # Why the query's stored rows could not be read or judged, when they could not: then
    # only its stored state is known, and nothing of its batches.
    unreadable: str | None = None

    @property
    def active(self) -> bool:
        """Whether the query is running (Spark may have called it idle)."""
        return self.status in RUNNING

    @property
    def latest_partitions(self) -> tuple[PartitionFacts, ...]:
        """The partitions of the latest batch."""
        return tuple(p for p in self.partitions if p.in_latest_batch)

    @property
    def offset_lag(self) -> int | None:
        """The total offset lag of the latest batch, None when no partition knows it."""
        known = [p.offset_lag for p in self.partitions if p.offset_lag is not None]
        return sum(known) if known else None

    @property
    def late_records(self) -> int:
        """Records dropped as late within the late window, over every partition."""
        return sum(p.late_records for p in self.partitions)
