"""The traffic every scenario is built on: its shared parameters (validated), the balanced
schedule and its writing, per-partition read caps, and the few ticks a scenario adds or
checks."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from streaming.generator import (
    Fleet,
    PartitionSummary,
    Tick,
    balanced_schedule,
    partition_of,
    partition_scooters,
    scooter_id,
    seeded_streams,
    write_schedule,
)
from streaming.log import PartitionedLog, check_topic


@dataclass(frozen=True)
class Traffic:
    """The parameters every scenario shares, validated."""

    topic: str
    partitions: int
    scooters: int
    records: int
    rate: float
    start_ms: int
    seed: int
    max_disorder_ms: int
    trigger_seconds: float
    streams: list[random.Random] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        check_topic(self.topic)
        checks = [
            (is_int(self.partitions) and self.partitions >= 1, "partitions must be an int >= 1"),
            (is_int(self.scooters) and self.scooters >= 1, "scooters must be an int >= 1"),
            (is_int(self.records) and self.records >= 1, "records must be an int >= 1"),
            (is_number(self.rate) and self.rate > 0, "rate must be a number > 0"),
            (is_int(self.start_ms), "start_ms must be an int (epoch milliseconds)"),
            (is_int(self.seed), "seed must be an int"),
            (is_int(self.max_disorder_ms) and self.max_disorder_ms >= 0, "bad max_disorder_ms"),
            (is_number(self.trigger_seconds) and self.trigger_seconds > 0, "bad trigger_seconds"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        # Schedule, fleet and burst: the first two are those of generate() for the same seed.
        object.__setattr__(self, "streams", seeded_streams(self.seed, 3))

    @property
    def per_trigger(self) -> int:
        """Records of one partition per ``trigger_seconds`` of event time (at least one)."""
        return max(1, round(self.rate / self.partitions * self.trigger_seconds))

    def at(self, fraction: float) -> int:
        """The send time ``fraction`` of the way from the first record to the last."""
        last_ms = self.start_ms + int((self.records - 1) * 1000 / self.rate)
        return self.start_ms + int((last_ms - self.start_ms) * fraction)

    def ticks(self) -> Iterator[Tick]:
        """The balanced schedule of ``records`` ticks."""
        return balanced_schedule(
            self.streams[0],
            by_partition=partition_scooters(self.scooters, self.partitions),
            rate=self.rate,
            start_ms=self.start_ms,
            max_disorder_ms=self.max_disorder_ms,
            records=self.records,
        )

    def write(
        self, log: PartitionedLog, ticks: Iterable[Tick], fleet_size: int | None = None
    ) -> dict[int, PartitionSummary]:
        """Write ``ticks`` and summarise each partition; ``fleet_size`` (default ``scooters``)
        must exceed every scooter index the ticks use."""
        fleet = Fleet(self.scooters if fleet_size is None else fleet_size, self.streams[1])
        return write_schedule(log, self.topic, self.partitions, ticks, fleet).partitions

    def caps(self, special: Mapping[int, int] | None = None) -> dict[str, str]:
        """maxOffsetsPerPartition: ``per_trigger`` for every partition not in ``special``."""
        special = special or {}
        caps = {str(p): special.get(p, self.per_trigger) for p in range(self.partitions)}
        return {"maxOffsetsPerPartition": json.dumps(caps)}


def is_int(value: object) -> bool:
    """An int, and not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    """An int (not a bool) or a float."""
    return is_int(value) or isinstance(value, float)


def check_special(name: str, partition: int, traffic: Traffic) -> None:
    """The partition that plays the special role must exist, and not be the only one."""
    if traffic.partitions < 2:
        raise ValueError(f"this scenario needs partitions >= 2, got {traffic.partitions}")
    if not is_int(partition) or not 0 <= partition < traffic.partitions:
        raise ValueError(f"{name} must be in [0, {traffic.partitions}), got {partition!r}")


def assign_roles(
    partitions: int, default: str, special: Mapping[int, str] | None = None
) -> dict[int, str]:
    """Every partition's role: its role in ``special``, else ``default``."""
    return {p: (special or {}).get(p, default) for p in range(partitions)}


def partition_of_tick(tick: Tick, partitions: int) -> int:
    """The partition a tick's scooter writes to."""
    return partition_of(scooter_id(tick.scooter), partitions)


def fresh_scooters(first: int, partitions: int, needed: Mapping[int, int]) -> dict[int, list[int]]:
    """Scooter indexes from ``first`` on, none seen before: ``needed[p]`` of them for each
    partition ``p``, each the next index whose key falls into ``p``."""
    found: dict[int, list[int]] = {p: [] for p in needed}
    index = first
    while any(len(found[p]) < count for p, count in needed.items()):
        partition = partition_of(scooter_id(index), partitions)
        if len(found.get(partition, [])) < needed.get(partition, 0):
            found[partition].append(index)
        index += 1
    return found


def late_ticks(
    rng: random.Random,
    scooters: Sequence[int],
    count: int,
    at_ms: int,
    late_by_ms: int,
    traffic: Traffic,
) -> list[Tick]:
    """``count`` ticks sent at ``at_ms`` by ``scooters``, ``late_by_ms`` (or a bit more) old."""
    behind_ms = at_ms - late_by_ms
    return [
        Tick(rng.choice(scooters), at_ms, behind_ms - rng.randint(0, traffic.max_disorder_ms))
        for _ in range(count)
    ]
