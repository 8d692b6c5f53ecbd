"""Scooter telemetry for a :class:`~streaming.log.PartitionedLog`, deterministic from a seed.

The Bird scooter case: scooters report position and battery; the key is the
scooter id, the partition ``crc32(key) % partitions`` (stable across processes, unlike hash()).

Generation is a small pipeline, so scenarios (skewed backfill, idle or stalled partitions,
late bursts) can swap one stage:

1. a *schedule* yields :class:`Tick` s — which scooter reports, when the record is sent
   (``send_ms``, the order of writing) and its event time (``event_ms``);
   :func:`steady_schedule` is the default, :func:`balanced_schedule` gives every partition the
   same traffic (what :mod:`streaming.scenarios` builds on);
2. :class:`Fleet` turns a tick into a :class:`LogRecord` (moving scooters, draining batteries);
3. :func:`write_ticks` groups the records by partition and appends them;
   :func:`write_schedule` does that for a whole schedule, a batch at a time.
"""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from streaming.log import LogRecord, PartitionedLog

DEFAULT_START_MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z: fixed, so output is reproducible
_HOME = (52.520, 13.405)  # the fleet starts around Berlin's centre
_WRITE_BATCH = 5_000  # ticks buffered before an append: bounds memory, not the file contents


@dataclass(frozen=True)
class Tick:
    """One report to generate: scooter ``scooter`` (an index) sends at ``send_ms``."""

    scooter: int
    send_ms: int
    event_ms: int


@dataclass
class PartitionSummary:
    """What was written to one partition."""

    records: int = 0
    min_event_ms: int | None = None
    max_event_ms: int | None = None

    def add(self, event_ms: int) -> None:
        """Count one record with event time ``event_ms``."""
        self.records += 1
        low, high = self.min_event_ms, self.max_event_ms
        self.min_event_ms = event_ms if low is None else min(low, event_ms)
        self.max_event_ms = event_ms if high is None else max(high, event_ms)


@dataclass
class Summary:
    """What a generator wrote: per partition counts and event-time ranges."""

    topic: str
    partitions: dict[int, PartitionSummary] = field(default_factory=dict)

    @property
    def records(self) -> int:
        """The total number of records written."""
        return sum(p.records for p in self.partitions.values())


def scooter_id(index: int) -> str:
    """The key of scooter ``index``, e.g. ``scooter-0007``."""
    return f"scooter-{index:04d}"


def partition_of(key: str, partitions: int) -> int:
    """The partition of a key: ``crc32(key) % partitions``, the same in every process."""
    return zlib.crc32(key.encode("utf-8")) % partitions


def iso_utc(epoch_ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds, e.g. ``2023-11-14T22:13:20.000Z``."""
    moment = datetime.fromtimestamp(epoch_ms // 1000, tz=timezone.utc)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{epoch_ms % 1000:03d}Z"


def steady_schedule(
    rng: random.Random,
    *,
    scooters: int,
    rate: float,
    start_ms: int,
    max_disorder_ms: int,
    records: int | None = None,
) -> Iterator[Tick]:
    """Reports at ``rate`` per second from ``start_ms``, each delayed by up to ``max_disorder_ms``.

    Record ``i`` is sent at ``start_ms + i / rate`` by a random scooter; its event time is the
    send time minus a random delay in ``[0, max_disorder_ms]`` (never before ``start_ms``), so
    event times are out of order by at most ``max_disorder_ms``. Endless if ``records`` is None.
    """
    if scooters < 1 or rate <= 0 or max_disorder_ms < 0:
        raise ValueError("need scooters >= 1, rate > 0 and max_disorder_ms >= 0")
    indexes = itertools.count() if records is None else range(records)
    for i in indexes:
        send_ms = start_ms + int(i * 1000 / rate)
        delay = rng.randint(0, max_disorder_ms)
        yield Tick(rng.randrange(scooters), send_ms, max(start_ms, send_ms - delay))


def partition_scooters(scooters: int, partitions: int) -> list[list[int]]:
    """The scooter indexes whose keys fall into each partition: ``result[p]`` lists p's."""
    if scooters < 1 or partitions < 1:
        raise ValueError(f"need scooters >= 1 and partitions >= 1, got {scooters}, {partitions}")
    by_partition: list[list[int]] = [[] for _ in range(partitions)]
    for index in range(scooters):
        by_partition[partition_of(scooter_id(index), partitions)].append(index)
    return by_partition


def balanced_schedule(
    rng: random.Random,
    *,
    by_partition: Sequence[Sequence[int]],
    rate: float,
    start_ms: int,
    max_disorder_ms: int,
    records: int | None = None,
) -> Iterator[Tick]:
    """Like :func:`steady_schedule`, but record ``i`` comes from partition ``i % partitions``.

    ``by_partition`` is :func:`partition_scooters`' result; each record's scooter is a random one
    of its partition. Every partition so gets the same traffic — as many records (give or take
    one) at ``rate / partitions`` per second each — and per-partition read limits move all
    partitions through event time at the same pace, which random keys would not.
    """
    if not by_partition or not all(by_partition):
        raise ValueError("every partition needs at least one scooter: use more scooters")
    if rate <= 0 or max_disorder_ms < 0:
        raise ValueError("need rate > 0 and max_disorder_ms >= 0")
    indexes = itertools.count() if records is None else range(records)
    for i in indexes:
        send_ms = start_ms + int(i * 1000 / rate)
        delay = rng.randint(0, max_disorder_ms)
        scooter = rng.choice(by_partition[i % len(by_partition)])
        yield Tick(scooter, send_ms, max(start_ms, send_ms - delay))


class Fleet:
    """The scooters' state: each report moves a scooter a little and drains its battery."""

    def __init__(self, scooters: int, rng: random.Random) -> None:
        self.rng = rng
        self.lat = [_HOME[0] + rng.uniform(-0.05, 0.05) for _ in range(scooters)]
        self.lon = [_HOME[1] + rng.uniform(-0.08, 0.08) for _ in range(scooters)]
        self.battery = [rng.uniform(60.0, 100.0) for _ in range(scooters)]

    def record(self, tick: Tick) -> LogRecord:
        """The telemetry record of one tick."""
        i = tick.scooter
        self.lat[i] += self.rng.uniform(-0.0005, 0.0005)
        self.lon[i] += self.rng.uniform(-0.0008, 0.0008)
        self.battery[i] = max(0.0, self.battery[i] - self.rng.uniform(0.0, 0.05))
        key = scooter_id(i)
        value = {
            "scooter_id": key,
            "lat": round(self.lat[i], 6),
            "lon": round(self.lon[i], 6),
            "battery": round(self.battery[i], 2),
            "event_time": iso_utc(tick.event_ms),
        }
        return LogRecord(key, json.dumps(value, separators=(",", ":")), tick.event_ms)


def write_ticks(
    log: PartitionedLog,
    topic: str,
    partitions: int,
    ticks: Iterable[Tick],
    fleet: Fleet,
    summary: Summary,
) -> Summary:
    """Append the records of ``ticks`` (in order, grouped by partition) and update ``summary``."""
    by_partition: dict[int, list[LogRecord]] = {}
    for tick in ticks:
        record = fleet.record(tick)
        partition = partition_of(record.key, partitions)
        by_partition.setdefault(partition, []).append(record)
        summary.partitions.setdefault(partition, PartitionSummary()).add(tick.event_ms)
    for partition in sorted(by_partition):
        log.append(topic, partition, by_partition[partition])
    return summary


def write_schedule(
    log: PartitionedLog, topic: str, partitions: int, ticks: Iterable[Tick], fleet: Fleet
) -> Summary:
    """Write every tick of ``ticks`` (``_WRITE_BATCH`` at a time) and summarise what was written.

    The summary lists every partition in ``range(partitions)``, including ones that got nothing.
    """
    summary = Summary(topic, {p: PartitionSummary() for p in range(partitions)})
    pending = iter(ticks)
    while batch := list(itertools.islice(pending, _WRITE_BATCH)):
        write_ticks(log, topic, partitions, batch, fleet, summary)
    return summary


def _check(partitions: int, seed: int) -> None:
    if partitions < 1:
        raise ValueError(f"partitions must be >= 1, got {partitions}")
    if not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")


def seeded_streams(seed: int, count: int = 2) -> list[random.Random]:
    """``count`` independent generators derived from ``seed``: the schedule's, the fleet's, ...

    The first ones do not depend on ``count``, so a caller that needs a third stream gets the
    same schedule and fleet as one that needs two.
    """
    root = random.Random(seed)
    return [random.Random(root.getrandbits(64)) for _ in range(count)]


def generate(
    log: PartitionedLog,
    *,
    topic: str = "telemetry",
    partitions: int = 4,
    scooters: int = 50,
    records: int = 10_000,
    rate: float = 100.0,
    start_ms: int = DEFAULT_START_MS,
    seed: int = 0,
    max_disorder_ms: int = 2_000,
) -> Summary:
    """Write ``records`` reports at ``rate`` per second of event time; same arguments, same files.

    Event times lie in ``[start_ms, start_ms + (records - 1) * 1000 / rate]``, out of order by
    at most ``max_disorder_ms``.
    """
    _check(partitions, seed)
    schedule_rng, fleet_rng = seeded_streams(seed)
    ticks = steady_schedule(
        schedule_rng,
        scooters=scooters,
        rate=rate,
        start_ms=start_ms,
        max_disorder_ms=max_disorder_ms,
        records=records,
    )
    return write_schedule(log, topic, partitions, ticks, Fleet(scooters, fleet_rng))


def follow(
    log: PartitionedLog,
    *,
    stop: threading.Event,
    topic: str = "telemetry",
    partitions: int = 4,
    scooters: int = 50,
    rate: float = 100.0,
    start_ms: int | None = None,
    seed: int = 0,
    max_disorder_ms: int = 2_000,
    clock: Callable[[], float] = time.time,
    poll_seconds: float = 0.2,
) -> Summary:
    """Write reports live, each once the clock has passed its send time, until ``stop`` is set.

    Appends every ``poll_seconds``; ``start_ms`` defaults to now (a past ``start_ms`` writes the
    backlog at once). Meant for a background thread::

        threading.Thread(target=follow, args=(log,), kwargs={"stop": stop}, daemon=True)
    """
    _check(partitions, seed)
    schedule_rng, fleet_rng = seeded_streams(seed)
    fleet = Fleet(scooters, fleet_rng)
    first_ms = int(clock() * 1000) if start_ms is None else start_ms
    ticks = steady_schedule(
        schedule_rng,
        scooters=scooters,
        rate=rate,
        start_ms=first_ms,
        max_disorder_ms=max_disorder_ms,
    )
    summary = Summary(topic, {p: PartitionSummary() for p in range(partitions)})
    pending = next(ticks)
    while not stop.is_set():
        now_ms = int(clock() * 1000)
        due: list[Tick] = []
        while pending.send_ms <= now_ms and len(due) < _WRITE_BATCH:
            due.append(pending)
            pending = next(ticks)
        write_ticks(log, topic, partitions, due, fleet, summary)
        if len(due) < _WRITE_BATCH:  # caught up with the clock: wait for more to be due
            stop.wait(poll_seconds)
    return summary
