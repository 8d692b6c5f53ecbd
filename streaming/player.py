"""Scenarios played live, round after round: what `wmon demo` streams into its queries.

Every ``round_seconds`` the player writes the last ``round_seconds`` of a scenario's telemetry
into its topic at once, as a device that uploads in batches would: each round starts where the
previous one ended in event time, with its own seed, so the scenario's shape (the fast
partition, the idle one, the stalled one, the late burst) comes back in every round while
event times follow the wall clock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

from streaming.log import PartitionedLog
from streaming.scenarios import Scenario, play


def play_in_rounds(
    log: PartitionedLog,
    name: str,
    *,
    stop: threading.Event,
    topic: str,
    round_seconds: float = 60.0,
    rate: float = 20.0,
    partitions: int = 4,
    scooters: int = 40,
    trigger_seconds: float = 1.0,
    clock: Callable[[], float] = time.time,
) -> Iterator[Scenario]:
    """Write scenario ``name`` into ``topic`` round after round, yielding each round once it
    is written, until ``stop`` is set. The first round, the last ``round_seconds``, comes at
    once; each next one when its last event time has passed."""
    if round_seconds <= 0 or rate <= 0:
        raise ValueError("round_seconds and rate must be > 0")
    records = max(1, round(rate * round_seconds))
    round_ms = int(round_seconds * 1000)
    start_ms = int(clock() * 1000) - round_ms
    seed = 0
    while not stop.is_set():
        yield play(
            name,
            log,
            topic=topic,
            partitions=partitions,
            scooters=scooters,
            records=records,
            rate=rate,
            start_ms=start_ms,
            seed=seed,
            trigger_seconds=trigger_seconds,
        )
        seed += 1
        start_ms += round_ms
        stop.wait(max(0.0, (start_ms + round_ms) / 1000 - clock()))
