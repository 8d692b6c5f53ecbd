"""The scooter-telemetry generator: deterministic files, partitioning, event-time bounds."""

import itertools
import json
import random
import threading
import time
import zlib
from datetime import datetime
from pathlib import Path

import pytest

from streaming.generator import (
    DEFAULT_START_MS,
    Fleet,
    PartitionSummary,
    Tick,
    balanced_schedule,
    follow,
    generate,
    iso_utc,
    partition_of,
    partition_scooters,
    scooter_id,
    seeded_streams,
    write_schedule,
)
from streaming.log import LogRecord, PartitionedLog

PARTITIONS = 4
RECORDS = 500
RATE = 50.0
DISORDER_MS = 1_500


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.jsonl"))}


def all_records(log: PartitionedLog, topic: str = "telemetry") -> dict[int, list[LogRecord]]:
    return {
        partition: [record for _, record in log.read(topic, partition, 0, end)]
        for partition, end in log.end_offsets(topic).items()
    }


@pytest.fixture
def generated(log_dir):
    log = PartitionedLog(log_dir, segment_records=100)
    summary = generate(
        log,
        partitions=PARTITIONS,
        scooters=12,
        records=RECORDS,
        rate=RATE,
        seed=7,
        max_disorder_ms=DISORDER_MS,
    )
    return log, summary


def test_same_seed_gives_identical_files_and_another_seed_different(tmp_path):
    runs = {}
    for name, seed in [("a", 3), ("b", 3), ("c", 4)]:
        root = tmp_path / name
        generate(PartitionedLog(root, segment_records=50), records=300, scooters=8, seed=seed)
        runs[name] = files(root)

    assert len(runs["a"]) > 4  # several partitions and segments
    assert runs["a"] == runs["b"]
    assert runs["a"] != runs["c"]


def test_partitions_follow_crc32_of_the_key(generated):
    log, _ = generated
    for partition, recs in all_records(log).items():
        for record in recs:
            assert zlib.crc32(record.key.encode()) % PARTITIONS == partition
    assert partition_of("scooter-0007", 4) == zlib.crc32(b"scooter-0007") % 4


def test_summary_matches_what_was_written(generated):
    log, summary = generated
    written = all_records(log)

    assert summary.records == RECORDS
    assert sum(p.records for p in summary.partitions.values()) == RECORDS
    assert log.end_offsets("telemetry") == {p: s.records for p, s in summary.partitions.items()}
    for partition, recs in written.items():
        times = [r.timestamp_ms for r in recs]
        assert summary.partitions[partition].min_event_ms == min(times)
        assert summary.partitions[partition].max_event_ms == max(times)


def test_event_times_are_bounded_and_out_of_order_by_at_most_the_disorder(generated):
    log, _ = generated
    end = DEFAULT_START_MS + RECORDS / RATE * 1000 + DISORDER_MS
    out_of_order = 0
    for recs in all_records(log).values():
        highest = None
        for record in recs:
            assert DEFAULT_START_MS <= record.timestamp_ms <= end
            if highest is not None:
                assert highest - record.timestamp_ms <= DISORDER_MS
                out_of_order += record.timestamp_ms < highest
            highest = record.timestamp_ms if highest is None else max(highest, record.timestamp_ms)
    assert out_of_order > 0


def test_values_are_scooter_telemetry(generated):
    log, _ = generated
    battery: dict[str, float] = {}
    for recs in all_records(log).values():
        for record in recs:
            value = json.loads(record.value)
            assert set(value) == {"scooter_id", "lat", "lon", "battery", "event_time"}
            assert value["scooter_id"] == record.key
            assert record.key.startswith("scooter-") and len(record.key) == len("scooter-0000")
            assert value["event_time"] == iso_utc(record.timestamp_ms)
            assert 52.0 < value["lat"] < 53.0 and 13.0 < value["lon"] < 14.0
            assert 0.0 <= value["battery"] <= battery.get(record.key, 100.0)
            battery[record.key] = value["battery"]


def test_iso_utc_and_scooter_id():
    assert iso_utc(1_700_000_000_123) == "2023-11-14T22:13:20.123Z"
    assert datetime.fromisoformat(iso_utc(5).replace("Z", "+00:00")).timestamp() == 0.005
    assert scooter_id(7) == "scooter-0007"


@pytest.mark.parametrize(
    "kwargs",
    [{"partitions": 0}, {"scooters": 0}, {"rate": 0}, {"max_disorder_ms": -1}, {"seed": "x"}],
    ids=["no-partitions", "no-scooters", "zero-rate", "negative-disorder", "str-seed"],
)
def test_bad_arguments_are_rejected(log_dir, kwargs):
    with pytest.raises(ValueError):
        generate(PartitionedLog(log_dir), records=10, **kwargs)


def test_partition_scooters_groups_scooters_by_the_partition_of_their_key():
    groups = partition_scooters(12, 3)

    assert sorted(itertools.chain(*groups)) == list(range(12))
    for partition, scooters in enumerate(groups):
        assert all(partition_of(scooter_id(i), 3) == partition for i in scooters)
    assert partition_scooters(1, 4)[partition_of(scooter_id(0), 4)] == [0]
    with pytest.raises(ValueError, match="scooters >= 1"):
        partition_scooters(0, 4)


def test_balanced_schedule_gives_every_partition_the_same_traffic():
    groups = partition_scooters(20, 4)
    ticks = list(
        balanced_schedule(
            random.Random(1),
            by_partition=groups,
            rate=RATE,
            start_ms=DEFAULT_START_MS,
            max_disorder_ms=DISORDER_MS,
            records=RECORDS,
        )
    )

    assert len(ticks) == RECORDS
    for i, tick in enumerate(ticks):
        assert tick.scooter in groups[i % 4]  # round robin over the partitions
        assert tick.send_ms == DEFAULT_START_MS + int(i * 1000 / RATE)
        assert max(DEFAULT_START_MS, tick.send_ms - DISORDER_MS) <= tick.event_ms <= tick.send_ms
    assert len({tick.scooter for tick in ticks}) == 20
    endless = balanced_schedule(
        random.Random(1), by_partition=groups, rate=RATE, start_ms=0, max_disorder_ms=0
    )
    assert len(list(itertools.islice(endless, 1_000))) == 1_000


@pytest.mark.parametrize(
    ("groups", "kwargs", "message"),
    [
        ([[0], []], {}, "at least one scooter"),
        ([], {}, "at least one scooter"),
        ([[0]], {"rate": 0}, "rate > 0"),
        ([[0]], {"max_disorder_ms": -1}, "max_disorder_ms >= 0"),
    ],
    ids=["empty-partition", "no-partitions", "zero-rate", "negative-disorder"],
)
def test_balanced_schedule_rejects_bad_arguments(groups, kwargs, message):
    arguments = {"rate": 1.0, "start_ms": 0, "max_disorder_ms": 0, "records": 1, **kwargs}
    with pytest.raises(ValueError, match=message):
        next(balanced_schedule(random.Random(0), by_partition=groups, **arguments))


def test_write_schedule_summarises_every_partition_even_empty_ones(log_dir):
    log = PartitionedLog(log_dir, segment_records=2)
    scooter = partition_scooters(8, 3)[1][0]
    ticks = [Tick(scooter, send, send - 5) for send in (10, 20, 30)]

    summary = write_schedule(log, "t", 3, ticks, Fleet(8, random.Random(0)))

    assert summary.partitions == {
        0: PartitionSummary(),
        1: PartitionSummary(3, 5, 25),
        2: PartitionSummary(),
    }
    assert log.end_offsets("t") == {1: 3}
    assert [r.timestamp_ms for _, r in log.read("t", 1, 0, 3)] == [5, 15, 25]


def test_seeded_streams_do_not_depend_on_how_many_are_asked_for():
    two, three = seeded_streams(5), seeded_streams(5, 3)

    assert [rng.random() for rng in two] == [rng.random() for rng in three[:2]]
    assert len({rng.random() for rng in seeded_streams(5, 3)}) == 3


class FakeClock:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __call__(self) -> float:
        return self.seconds


def wait_for_records(log: PartitionedLog, count: int, timeout: float = 10.0) -> int:
    deadline = time.monotonic() + timeout
    total = sum(log.end_offsets("telemetry").values())
    while total < count and time.monotonic() < deadline:
        time.sleep(0.02)
        total = sum(log.end_offsets("telemetry").values())
    return total


def test_follow_writes_what_is_due_by_the_clock_until_stopped(log_dir):
    log = PartitionedLog(log_dir)
    start_ms = DEFAULT_START_MS
    clock = FakeClock(start_ms / 1000 + 2.0)  # 2 s of reports at 10/s are due: offsets 0..20
    stop = threading.Event()
    result = {}

    def run():
        result["summary"] = follow(
            log, stop=stop, rate=10.0, start_ms=start_ms, clock=clock, poll_seconds=0.01
        )

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        assert wait_for_records(log, 21) == 21
        clock.seconds += 1.0
        assert wait_for_records(log, 31) == 31
    finally:
        stop.set()
        thread.join(timeout=5)
    assert not thread.is_alive()

    assert result["summary"].records == 31
    times = [r.timestamp_ms for recs in all_records(log).values() for r in recs]
    assert start_ms <= min(times) and max(times) <= start_ms + 3_000
