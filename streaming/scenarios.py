"""Scenarios: scooter telemetry of a known shape, for the monitor to find, from a seed.

Each scenario writes one topic of a :class:`~streaming.log.PartitionedLog` at once (a backlog)
and returns a :class:`Scenario`: the records and event-time range of each partition, the role
each partition plays (:data:`ROLES`) and the source options that replay it::

    scenario = SCENARIOS["skewed_backfill"](PartitionedLog(path), seed=3)
    df = spark.readStream.format("partitioned_log").options(**scenario.source_options(path))

Every scenario is built on :func:`~streaming.generator.balanced_schedule`, so each partition
gets the same traffic (``rate / partitions`` records per second of event time), and its options
read ``trigger_seconds`` of that traffic per partition and trigger: partitions move through
event time together unless the scenario says otherwise. The defaults are sized for a watermark
delay of about 10 s (the demo's): above ``max_disorder_ms``, below ``late_by_ms``.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from streaming.generator import (
    DEFAULT_START_MS,
    PartitionSummary,
    Tick,
    partition_scooters,
    scooter_id,
)
from streaming.log import PartitionedLog
from streaming.traffic import (
    Traffic,
    assign_roles,
    check_special,
    fresh_scooters,
    is_int,
    is_number,
    late_ticks,
    partition_of_tick,
)

STEADY = "steady"  # read like every other partition
FAST = "fast"  # read far faster than the others: drags the global watermark ahead
SLOW = "slow"  # read slowly while a fast partition runs ahead: its records fall behind
IDLE = "idle"  # receives no records from ``since_ms`` on
STALLED = "stalled"  # has a backlog but is held back (read limit 0)
LATE = "late"  # receives a burst of records far behind everyone's event time at ``since_ms``
FUTURE = "future"  # receives one record far ahead of everyone's event time at ``since_ms``
CATCHING_UP = "catching_up"  # a backlog beyond its traffic, read at the others' pace: drained last
FROZEN = "frozen"  # from ``since_ms`` on, new scooters' records, all at that one event time
ROLES = (STEADY, FAST, SLOW, IDLE, STALLED, LATE, FUTURE, CATCHING_UP, FROZEN)

DEFAULT_TOPIC = "telemetry"


@dataclass(frozen=True)
class PlacedRecord:
    """One record a scenario placed on purpose: where it was written, its key and event time."""

    partition: int
    offset: int
    key: str
    event_ms: int


@dataclass(frozen=True)
class Drain:
    """A partition's backlog read at a known rate: its records, all available from the start,
    read ``limit`` a trigger (its maxOffsetsPerPartition)."""

    partition: int
    records: int
    limit: int
    trigger_seconds: float

    @property
    def rate(self) -> float:
        """Records read a second, when the query triggers every ``trigger_seconds``."""
        return self.limit / self.trigger_seconds

    @property
    def batches(self) -> int:
        """How many batches read it: after the last of them it has no backlog."""
        return -(-self.records // self.limit)

    def backlog_after(self, batches: int) -> int:
        """Its backlog once ``batches`` batches have read it."""
        return max(self.records - batches * self.limit, 0)


@dataclass(frozen=True)
class Scenario:
    """What a scenario wrote, which partition plays which role, and how to read it back."""

    name: str
    topic: str
    seed: int
    # Records and event-time range of each partition, every partition of the topic listed.
    partitions: dict[int, PartitionSummary]
    roles: dict[int, str]
    # Source options beyond path and subscribe, as strings (``DataStreamReader.options``).
    options: dict[str, str]
    # The event time from which the scenario's special partition behaves specially: the idle
    # partition's last records were sent before it, the late burst, the future record and the
    # catching-up partition's extra backlog are sent at it, and event times freeze at it.
    since_ms: int | None = None
    # The late burst (or the catching-up partition's extra backlog) alone: its records and
    # event-time range.
    burst: PartitionSummary | None = None
    # The record from the future: where it was written.
    future_record: PlacedRecord | None = None
    # The catching-up partition's backlog and how fast it is read: what its catch-up takes.
    drain: Drain | None = None

    @property
    def records(self) -> int:
        """All records written, over every partition."""
        return sum(summary.records for summary in self.partitions.values())

    def with_role(self, role: str) -> list[int]:
        """The partitions that play ``role``, sorted."""
        return sorted(p for p, played in self.roles.items() if played == role)

    def source_options(self, path: str | Path) -> dict[str, str]:
        """All options of ``readStream.format("partitioned_log")`` for the log at ``path``."""
        return {"path": str(path), "subscribe": self.topic, **self.options}


ScenarioFunction = Callable[..., Scenario]
F = TypeVar("F", bound=ScenarioFunction)
SCENARIOS: dict[str, ScenarioFunction] = {}


def register(function: F, name: str | None = None) -> F:
    """Add a scenario to :data:`SCENARIOS` (under its function's name); names are unique."""
    key = function.__name__ if name is None else name
    if key in SCENARIOS:
        raise ValueError(f"a scenario named {key!r} is already registered")
    SCENARIOS[key] = function
    return function


def play(name: str, log: PartitionedLog, **params: object) -> Scenario:
    """Write the scenario called ``name`` into ``log``, with its keyword parameters."""
    if name not in SCENARIOS:
        raise ValueError(f"no scenario named {name!r}; known: {', '.join(sorted(SCENARIOS))}")
    return SCENARIOS[name](log, **params)


@register
def steady(
    log: PartitionedLog,
    *,
    topic: str = DEFAULT_TOPIC,
    partitions: int = 4,
    scooters: int = 40,
    records: int = 4_000,
    rate: float = 100.0,
    start_ms: int = DEFAULT_START_MS,
    seed: int = 0,
    max_disorder_ms: int = 2_000,
    trigger_seconds: float = 1.0,
) -> Scenario:
    """Live-like traffic, all partitions alike, read ``trigger_seconds`` of it per trigger.

    Options: maxOffsetsPerTrigger (equal backlogs share it equally). No late records for any
    watermark delay above ``max_disorder_ms``.
    """
    traffic = Traffic(
        topic, partitions, scooters, records, rate, start_ms, seed, max_disorder_ms, trigger_seconds
    )
    written = traffic.write(log, traffic.ticks())
    options = {"maxOffsetsPerTrigger": str(traffic.per_trigger * partitions)}
    return Scenario("steady", topic, seed, written, assign_roles(partitions, STEADY, {}), options)


@register
def skewed_backfill(
    log: PartitionedLog,
    *,
    topic: str = DEFAULT_TOPIC,
    partitions: int = 4,
    scooters: int = 40,
    records: int = 4_000,
    rate: float = 100.0,
    start_ms: int = DEFAULT_START_MS,
    seed: int = 0,
    max_disorder_ms: int = 2_000,
    trigger_seconds: float = 1.0,
    fast_partition: int = 0,
    fast_factor: float = 10.0,
) -> Scenario:
    """A backlog read at very different speeds: the Bird backfill.

    Options: maxOffsetsPerPartition reading ``fast_factor`` times as much of
    ``fast_partition`` per trigger as of the others. The fast partition drags Spark's global
    watermark ahead and the slow partitions' records fall behind it: late records in every
    slow partition, none in the fast one (while the delay exceeds ``max_disorder_ms``).
    """
    traffic = Traffic(
        topic, partitions, scooters, records, rate, start_ms, seed, max_disorder_ms, trigger_seconds
    )
    check_special("fast_partition", fast_partition, traffic)
    if not (is_number(fast_factor) and fast_factor > 1):
        raise ValueError(f"fast_factor must be > 1, got {fast_factor}")
    written = traffic.write(log, traffic.ticks())
    fast_cap = max(traffic.per_trigger + 1, round(traffic.per_trigger * fast_factor))
    options = traffic.caps({fast_partition: fast_cap})
    roles = assign_roles(partitions, SLOW, {fast_partition: FAST})
    return Scenario("skewed_backfill", topic, seed, written, roles, options)


@register
def idle_partition(
    log: PartitionedLog,
    *,
    topic: str = DEFAULT_TOPIC,
    partitions: int = 4,
    scooters: int = 40,
    records: int = 4_000,
    rate: float = 100.0,
    start_ms: int = DEFAULT_START_MS,
    seed: int = 0,
    max_disorder_ms: int = 2_000,
    trigger_seconds: float = 1.0,
    idle_partition: int = 1,
    idle_from_ms: int | None = None,
) -> Scenario:
    """One partition receives nothing sent from ``idle_from_ms`` on; the others go on.

    ``idle_from_ms`` defaults to halfway through the traffic; all of the idle partition's event
    times lie before it. Options: maxOffsetsPerPartition, the same for every partition, so the
    idle partition's backlog runs out when the others reach ``idle_from_ms`` (a partition with a
    backlog is never idle). No late records. ``since_ms`` is ``idle_from_ms``.
    """
    traffic = Traffic(
        topic, partitions, scooters, records, rate, start_ms, seed, max_disorder_ms, trigger_seconds
    )
    check_special("idle_partition", idle_partition, traffic)
    idle_from = traffic.at(0.5) if idle_from_ms is None else idle_from_ms
    if not is_int(idle_from) or idle_from <= start_ms:
        raise ValueError(f"idle_from_ms must be an int after start_ms, got {idle_from!r}")

    def keep(tick: Tick) -> bool:
        return partition_of_tick(tick, partitions) != idle_partition or tick.send_ms < idle_from

    written = traffic.write(log, filter(keep, traffic.ticks()))
    roles = assign_roles(partitions, STEADY, {idle_partition: IDLE})
    return Scenario("idle_partition", topic, seed, written, roles, traffic.caps(), idle_from)


@register
def stalled_partition(
    log: PartitionedLog,
    *,
    topic: str = DEFAULT_TOPIC,
    partitions: int = 4,
    scooters: int = 40,
    records: int = 4_000,
    rate: float = 100.0,
    start_ms: int = DEFAULT_START_MS,
    seed: int = 0,
    max_disorder_ms: int = 2_000,
    trigger_seconds: float = 1.0,
    stalled_partition: int = 1,
) -> Scenario:
    """One partition has a backlog like the others but is never read: its read limit is 0.

    Options: maxOffsetsPerPartition, 0 for ``stalled_partition``. Its offsets stay at their
    start while the source's latest offset shows its whole backlog; an ``availableNow`` run
    ends once the other partitions are read. No late records.
    """
    traffic = Traffic(
        topic, partitions, scooters, records, rate, start_ms, seed, max_disorder_ms, trigger_seconds
    )
    check_special("stalled_partition", stalled_partition, traffic)
    written = traffic.write(log, traffic.ticks())
    options = traffic.caps({stalled_partition: 0})
    roles = assign_roles(partitions, STEADY, {stalled_partition: STALLED})
    return Scenario("stalled_partition", topic, seed, written, roles, options)


@register
def late_burst(
    log: PartitionedLog,
    *,
    topic: str = DEFAULT_TOPIC,
    partitions: int = 4,
    scooters: int = 40,
    records: int = 4_000,
    rate: float = 100.0,
    start_ms: int = DEFAULT_START_MS,
    seed: int = 0,
    max_disorder_ms: int = 2_000,
    trigger_seconds: float = 1.0,
    late_partition: int = 1,
    burst_records: int = 50,
    burst_at_ms: int | None = None,
    late_by_ms: int = 30_000,
) -> Scenario:
    """Steady traffic, plus one burst of ``burst_records`` old records into one partition.

    The burst is sent at ``burst_at_ms`` (default: as the traffic ends, with its last records)
    and its event times lie in ``[burst_at_ms - late_by_ms - max_disorder_ms, burst_at_ms -
    late_by_ms]``: late for any watermark delay below ``late_by_ms - max_disorder_ms``, and
    the only records lost. Options: maxOffsetsPerPartition, the same for every partition, and
    above the traffic's pace by twice the burst spread over the traffic's triggers: the
    partitions move through event time together, and the late one works off the burst while
    the others, done, wait. Played in rounds it is back in step with them before the next
    round (read at the traffic's pace, it would fall a burst further behind every round, and
    once that is more than the delay every record it reads would be late).
    ``since_ms`` is ``burst_at_ms``; ``burst`` summarises the burst alone.
    """
    traffic = Traffic(
        topic, partitions, scooters, records, rate, start_ms, seed, max_disorder_ms, trigger_seconds
    )
    check_special("late_partition", late_partition, traffic)
    at_ms = traffic.at(1.0) if burst_at_ms is None else burst_at_ms
    if not (is_int(burst_records) and burst_records >= 1 and is_int(at_ms)):
        raise ValueError("burst_records must be an int >= 1 and burst_at_ms an int")
    if not (is_int(late_by_ms) and late_by_ms > 0):
        raise ValueError(f"late_by_ms must be an int > 0, got {late_by_ms!r}")
    scooters_there = partition_scooters(scooters, partitions)[late_partition]
    burst = late_ticks(
        traffic.streams[2], scooters_there, burst_records, at_ms, late_by_ms, traffic
    )
    # Burst first among ticks sent at the same moment; both streams are sorted by send time.
    ticks = heapq.merge(burst, traffic.ticks(), key=lambda tick: tick.send_ms)
    written = traffic.write(log, ticks)
    burst_summary = PartitionSummary()
    for tick in burst:
        burst_summary.add(tick.event_ms)
    roles = assign_roles(partitions, STEADY, {late_partition: LATE})
    # ceil(2 * burst / triggers), one partition's traffic taking records / partitions /
    # per_trigger triggers: twice what the burst needs, so that it is still worked off when
    # the query's triggers run a little late.
    spare = -(-2 * burst_records * partitions * traffic.per_trigger // records)
    cap = traffic.per_trigger + spare
    options = traffic.caps(dict.fromkeys(range(partitions), cap))
    return Scenario("late_burst", topic, seed, written, roles, options, at_ms, burst_summary)


@register
def future_timestamp(
    log: PartitionedLog,
    *,
    topic: str = DEFAULT_TOPIC,
    partitions: int = 4,
    scooters: int = 40,
    records: int = 4_000,
    rate: float = 100.0,
    start_ms: int = DEFAULT_START_MS,
    seed: int = 0,
    max_disorder_ms: int = 2_000,
    trigger_seconds: float = 1.0,
    future_partition: int | None = None,
    future_at_ms: int | None = None,
    ahead_by_ms: int = 2 * 3_600_000,
) -> Scenario:
    """Steady traffic, plus one record from a producer whose clock is ``ahead_by_ms`` ahead.

    The record is sent at ``future_at_ms`` (default: halfway through) into ``future_partition``
    (default: the last) with the event time ``future_at_ms + ahead_by_ms``: that far ahead of
    the time every partition is at. Once read, it drives Spark's global watermark: the records
    read after it are late until the others' event time catches up with it, less the delay
    (with the defaults, long after the traffic ends). Options: maxOffsetsPerPartition, the
    same for every partition. ``since_ms`` is ``future_at_ms``; ``future_record`` says where
    the record was written.
    """
    traffic = Traffic(
        topic, partitions, scooters, records, rate, start_ms, seed, max_disorder_ms, trigger_seconds
    )
    special = partitions - 1 if future_partition is None else future_partition
    check_special("future_partition", special, traffic)
    at_ms = traffic.at(0.5) if future_at_ms is None else future_at_ms
    if not (is_int(at_ms) and start_ms <= at_ms <= traffic.at(1.0)):
        raise ValueError(f"future_at_ms must be an int within the traffic, got {at_ms!r}")
    if not (is_int(ahead_by_ms) and ahead_by_ms > 0):
        raise ValueError(f"ahead_by_ms must be an int > 0, got {ahead_by_ms!r}")
    scooter = traffic.streams[2].choice(partition_scooters(scooters, partitions)[special])
    future = Tick(scooter, at_ms, at_ms + ahead_by_ms)
    ticks = list(traffic.ticks())
    # Written first among the ticks sent at the same moment, after its partition's earlier ones.
    earlier = sum(t.send_ms < at_ms and partition_of_tick(t, partitions) == special for t in ticks)
    offset = log.end_offset(topic, special) + earlier
    written = traffic.write(log, heapq.merge([future], ticks, key=lambda tick: tick.send_ms))
    placed = PlacedRecord(special, offset, scooter_id(scooter), future.event_ms)
    roles = assign_roles(partitions, STEADY, {special: FUTURE})
    options = traffic.caps()
    return Scenario(
        "future_timestamp", topic, seed, written, roles, options, at_ms, future_record=placed
    )


@register
def catch_up(
    log: PartitionedLog,
    *,
    topic: str = DEFAULT_TOPIC,
    partitions: int = 4,
    scooters: int = 40,
    records: int = 4_000,
    rate: float = 100.0,
    start_ms: int = DEFAULT_START_MS,
    seed: int = 0,
    max_disorder_ms: int = 2_000,
    trigger_seconds: float = 1.0,
    catching_up_partition: int = 1,
    backlog_records: int | None = None,
) -> Scenario:
    """Steady traffic, and one partition with a backlog beyond it, which it works off last.

    As the traffic ends, ``backlog_records`` more records (default: as many as its traffic)
    are sent at once into ``catching_up_partition``, from its scooters, with event times in
    ``[end - max_disorder_ms, end]``. Options: maxOffsetsPerPartition, the same for every
    partition: its backlog (everything it holds, as all is written at once) drains at ``cap /
    trigger_seconds`` records a second, ``backlog_records / cap`` triggers after the others
    are done; ``drain`` says so. The same cap, because Spark has one watermark: read faster,
    the partition would run ahead of the others in event time and make their records late
    (as ``skewed_backfill``'s fast one); read slower, it would fall behind the watermark and
    lose its own. So no late records, the extra ones included: they are as new as any.
    ``since_ms`` is when the extra backlog is sent; ``burst`` summarises it alone.
    """
    traffic = Traffic(
        topic, partitions, scooters, records, rate, start_ms, seed, max_disorder_ms, trigger_seconds
    )
    check_special("catching_up_partition", catching_up_partition, traffic)
    extra = records // partitions if backlog_records is None else backlog_records
    if not (is_int(extra) and extra >= 1):
        raise ValueError(f"backlog_records must be an int >= 1, got {extra!r}")
    end_ms = traffic.at(1.0)
    scooters_there = partition_scooters(scooters, partitions)[catching_up_partition]
    extra_ticks = late_ticks(traffic.streams[2], scooters_there, extra, end_ms, 0, traffic)
    # After every tick of the traffic: both streams are sorted by send time, ties to the first.
    ticks = heapq.merge(traffic.ticks(), extra_ticks, key=lambda tick: tick.send_ms)
    written = traffic.write(log, ticks)
    extra_summary = PartitionSummary()
    for tick in extra_ticks:
        extra_summary.add(tick.event_ms)
    held = written[catching_up_partition].records
    drain = Drain(catching_up_partition, held, traffic.per_trigger, trigger_seconds)
    roles = assign_roles(partitions, STEADY, {catching_up_partition: CATCHING_UP})
    options = traffic.caps()
    return Scenario(
        "catch_up", topic, seed, written, roles, options, end_ms, extra_summary, drain=drain
    )


@register
def state_growth(
    log: PartitionedLog,
    *,
    topic: str = DEFAULT_TOPIC,
    partitions: int = 4,
    scooters: int = 40,
    records: int = 4_000,
    rate: float = 100.0,
    start_ms: int = DEFAULT_START_MS,
    seed: int = 0,
    max_disorder_ms: int = 2_000,
    trigger_seconds: float = 1.0,
    frozen_from_ms: int | None = None,
) -> Scenario:
    """Event times stop advancing while new keys keep coming: Spark's watermark stalls and a
    stateful operator's state grows with every batch.

    From ``frozen_from_ms`` (default: halfway through) on, every record, in every partition,
    comes from a scooter not seen before and carries the event time ``frozen_from_ms`` itself,
    as when a fleet registry's snapshot is loaded into the topic: one record per scooter, all
    stamped with the snapshot's time. Spark's watermark is the largest event time seen, over
    every partition, less the delay: once the first of them is read nothing newer comes, and
    it stays at ``frozen_from_ms - delay`` while records keep flowing. None of them is late
    (for any delay above ``max_disorder_ms``) and none is evicted: a ``dropDuplicates``, a
    per-scooter aggregation or timer keeps a row for each, batch after batch. A partition held
    back (``stalled_partition``) would not stall it: Spark's watermark is not the minimum over
    partitions, and a partition that gives no records adds nothing to the maximum. Options:
    maxOffsetsPerPartition, the same for every partition. ``since_ms`` is ``frozen_from_ms``.
    """
    traffic = Traffic(
        topic, partitions, scooters, records, rate, start_ms, seed, max_disorder_ms, trigger_seconds
    )
    frozen_ms = traffic.at(0.5) if frozen_from_ms is None else frozen_from_ms
    if not (is_int(frozen_ms) and start_ms < frozen_ms <= traffic.at(1.0)):
        raise ValueError(f"frozen_from_ms must be an int within the traffic, got {frozen_ms!r}")
    ticks = list(traffic.ticks())
    needed = Counter(partition_of_tick(t, partitions) for t in ticks if t.send_ms >= frozen_ms)
    fresh = {p: iter(new) for p, new in fresh_scooters(scooters, partitions, needed).items()}

    def frozen(tick: Tick) -> Tick:
        if tick.send_ms < frozen_ms:
            return tick
        return Tick(next(fresh[partition_of_tick(tick, partitions)]), tick.send_ms, frozen_ms)

    renamed = [frozen(tick) for tick in ticks]
    written = traffic.write(log, renamed, fleet_size=max(t.scooter for t in renamed) + 1)
    roles = assign_roles(partitions, FROZEN)
    return Scenario("state_growth", topic, seed, written, roles, traffic.caps(), frozen_ms)
