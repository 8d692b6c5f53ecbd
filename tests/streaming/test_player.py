"""Scenarios played in rounds: contiguous in event time, a new seed each, stopped promptly."""

import threading
import time

import pytest

from streaming.demo import DemoOptions
from streaming.log import PartitionedLog
from streaming.player import play_in_rounds
from streaming.scenarios import LATE
from tests.support.replay import Replay

NOW_S = 1_800_000_000.0


def rounds_of(log, name, clock, stop, **params):
    return play_in_rounds(
        log, name, stop=stop, topic="demo", round_seconds=60, rate=10.0, clock=clock, **params
    )


def test_each_round_follows_the_last_in_event_time(tmp_path):
    log, now, stop = PartitionedLog(tmp_path), [NOW_S], threading.Event()
    rounds = rounds_of(log, "steady", lambda: now[0], stop, partitions=2, scooters=20)
    first = next(rounds)
    now[0] += 60  # the second round's last event time has passed: it is due at once
    second = next(rounds)
    stop.set()
    assert list(rounds) == []

    assert first.records == second.records == 600
    assert min(p.min_event_ms for p in first.partitions.values()) == (NOW_S - 60) * 1000
    first_end = max(p.max_event_ms for p in first.partitions.values())
    assert (
        first_end <= NOW_S * 1000 <= min(p.min_event_ms for p in second.partitions.values()) + 2_000
    )
    assert max(p.max_event_ms for p in second.partitions.values()) <= (NOW_S + 60) * 1000
    assert sum(log.end_offset("demo", p) for p in (0, 1)) == 1_200
    assert (first.seed, second.seed) == (0, 1)


def test_every_round_repeats_the_scenarios_shape(tmp_path):
    log, now, stop = PartitionedLog(tmp_path), [NOW_S], threading.Event()
    rounds = rounds_of(log, "late_burst", lambda: now[0], stop)
    bursts = []
    for _ in range(3):
        bursts.append(next(rounds).burst)
        now[0] += 60
    stop.set()
    assert [burst.records for burst in bursts] == [50, 50, 50]
    starts = [burst.min_event_ms for burst in bursts]
    assert starts[1] - starts[0] >= 50_000 and starts[2] - starts[1] >= 50_000


# The demo's defaults: 60-second rounds of 20 records a second over 4 partitions, a trigger
# every 5 s, a delay of 10 s; 12 triggers a round on time, 11 when they run 9% late.
@pytest.mark.parametrize("triggers", [12, 11], ids=["on-time", "triggers-late"])
def test_a_late_burst_in_rounds_loses_only_its_bursts_and_keeps_in_step(tmp_path, triggers):
    demo = DemoOptions(workdir=tmp_path)
    log, now, stop = PartitionedLog(tmp_path), [NOW_S], threading.Event()
    rounds = play_in_rounds(
        log,
        "late_burst",
        stop=stop,
        topic="burst",
        round_seconds=demo.round_seconds,
        rate=demo.rate,
        partitions=demo.partitions,
        trigger_seconds=demo.trigger_seconds,
        clock=lambda: now[0],
    )
    first = next(rounds)
    [late] = first.with_role(LATE)
    played = Replay(first.source_options(tmp_path), delay_ms=10_000)
    behind = []
    for _ in range(5):
        for _ in range(triggers):
            played.trigger()
        behind.append({p: played.backlog("burst", p) for p in first.partitions})
        now[0] += demo.round_seconds
        next(rounds)
    stop.set()
    # Each round's burst is lost, and nothing else; every partition has read its round before
    # the next one comes (read at the traffic's pace, the late partition fell a burst further
    # behind each round, and from the third on lost every record it read).
    assert played.late == {p: 5 * 50 if p == late else 0 for p in first.partitions}
    assert behind == [dict.fromkeys(first.partitions, 0)] * 5


def test_stopping_ends_the_wait_for_the_next_round(tmp_path):
    stop = threading.Event()
    rounds = rounds_of(PartitionedLog(tmp_path), "steady", lambda: NOW_S, stop)
    next(rounds)
    threading.Timer(0.2, stop.set).start()
    started = time.monotonic()
    assert list(rounds) == []
    assert time.monotonic() - started < 5, "the player kept waiting for a round a minute away"


@pytest.mark.parametrize("params", [{"round_seconds": 0}, {"rate": -1.0}], ids=["round", "rate"])
def test_rounds_need_a_positive_length_and_rate(tmp_path, params):
    arguments = {"stop": threading.Event(), "topic": "demo", **params}
    with pytest.raises(ValueError, match="must be > 0"):
        next(play_in_rounds(PartitionedLog(tmp_path), "steady", **arguments))
