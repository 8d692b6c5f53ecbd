"""Scenarios: each writes exactly the shape it describes and replays as described, from a seed."""

import json
from pathlib import Path

import pytest

from streaming.generator import DEFAULT_START_MS, PartitionSummary, partition_of
from streaming.log import LogRecord, PartitionedLog
from streaming.scenarios import (
    CATCHING_UP,
    FAST,
    FROZEN,
    FUTURE,
    IDLE,
    LATE,
    ROLES,
    SCENARIOS,
    SLOW,
    STALLED,
    STEADY,
    Drain,
    PlacedRecord,
    Scenario,
    catch_up,
    future_timestamp,
    idle_partition,
    late_burst,
    play,
    register,
    skewed_backfill,
    stalled_partition,
    state_growth,
    steady,
)
from tests.support.replay import Replay, replay_to_end

DELAY_MS = 10_000  # the watermark delay the defaults are sized for (the demo's)
SMALL = {"records": 1_200, "rate": 40.0, "scooters": 24}  # 30 s of traffic, 10 records/s/partition
LAST_SEND_MS = DEFAULT_START_MS + int((SMALL["records"] - 1) * 1000 / SMALL["rate"])
DISORDER_MS = 2_000  # the scenarios' default max_disorder_ms
HALFWAY_MS = DEFAULT_START_MS + (LAST_SEND_MS - DEFAULT_START_MS) // 2
TWO_HOURS_MS = 7_200_000
EARLY_MS = DEFAULT_START_MS + 5_000


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.jsonl"))}


def written(log: PartitionedLog, topic: str = "telemetry") -> dict[int, list[LogRecord]]:
    return {
        partition: [record for _, record in log.read(topic, partition, 0, end)]
        for partition, end in log.end_offsets(topic).items()
    }


def assert_described(scenario: Scenario, log: PartitionedLog) -> dict[int, list[LogRecord]]:
    """The Scenario's counts and event-time ranges are exactly those of the files."""
    recs = written(log, scenario.topic)
    assert set(recs) == set(scenario.partitions) == set(scenario.roles)
    for partition, records in recs.items():
        times = [r.timestamp_ms for r in records]
        assert scenario.partitions[partition] == PartitionSummary(
            len(records), min(times), max(times)
        )
        assert all(partition_of(r.key, len(recs)) == partition for r in records)
    return recs


def caps(scenario: Scenario) -> dict[int, int]:
    limits = json.loads(scenario.options["maxOffsetsPerPartition"])
    return {int(p): cap for p, cap in limits.items()}


def replay(scenario: Scenario, log_dir: Path, delay_ms: int = DELAY_MS) -> Replay:
    """Play the scenario through the source as an availableNow query would, with Spark's rule."""
    return replay_to_end(scenario.source_options(log_dir), delay_ms)


@pytest.fixture
def log(log_dir: Path) -> PartitionedLog:
    return PartitionedLog(log_dir, segment_records=200)


# --- each scenario's shape --------------------------------------------------------------------


def test_steady_partitions_are_alike_and_read_without_late_records(log, log_dir):
    scenario = steady(log, **SMALL)

    recs = assert_described(scenario, log)
    assert scenario.roles == dict.fromkeys(range(4), STEADY)
    assert [len(r) for r in recs.values()] == [300] * 4  # the same traffic everywhere
    for summary in scenario.partitions.values():
        assert summary.min_event_ms == DEFAULT_START_MS
        assert LAST_SEND_MS - DISORDER_MS - 100 <= summary.max_event_ms <= LAST_SEND_MS
    assert scenario.options == {"maxOffsetsPerTrigger": "40"}  # 1 s of traffic per trigger
    assert scenario.source_options(log_dir) == {
        "path": str(log_dir),
        "subscribe": "telemetry",
        "maxOffsetsPerTrigger": "40",
    }

    played = replay(scenario, log_dir)
    assert len(played.batches) == 30
    assert all(len(times) == 10 for batch in played.batches for times in batch.values())
    assert played.late == dict.fromkeys(range(4), 0)


def test_skewed_backfill_makes_only_the_slow_partitions_late(log, log_dir):
    scenario = skewed_backfill(log, fast_partition=2, **SMALL)

    recs = assert_described(scenario, log)
    assert scenario.roles == {0: SLOW, 1: SLOW, 2: FAST, 3: SLOW}
    assert scenario.with_role(SLOW) == [0, 1, 3]
    assert [len(r) for r in recs.values()] == [300] * 4  # equal backlogs, unequal speeds
    assert caps(scenario) == {0: 10, 1: 10, 2: 100, 3: 10}

    played = replay(scenario, log_dir)
    assert played.late[2] == 0
    assert all(played.late[p] > 100 for p in (0, 1, 3)), played.late
    assert played.read(2) == 300 and played.last_batch_reading(2) == 2


def test_idle_partition_stops_receiving_while_the_others_go_on(log, log_dir):
    idle_from = DEFAULT_START_MS + 12_000
    scenario = idle_partition(log, idle_partition=3, idle_from_ms=idle_from, **SMALL)

    recs = assert_described(scenario, log)
    assert scenario.roles == {0: STEADY, 1: STEADY, 2: STEADY, 3: IDLE}
    assert scenario.since_ms == idle_from
    # Record i of the schedule is sent at i / rate and belongs to partition i % 4.
    sent_before = [i for i in range(SMALL["records"]) if i * 1000 // SMALL["rate"] < 12_000]
    assert len(recs[3]) == sum(i % 4 == 3 for i in sent_before) == 120
    assert scenario.partitions[3].max_event_ms < idle_from
    assert all(scenario.partitions[p].max_event_ms > LAST_SEND_MS - DISORDER_MS for p in range(3))
    assert caps(scenario) == dict.fromkeys(range(4), 10)

    played = replay(scenario, log_dir)
    assert played.late == dict.fromkeys(range(4), 0)
    # Read alike, the idle partition runs out when the others reach idle_from: at batch 12 of 30.
    assert played.last_batch_reading(3) == 11 and len(played.batches) == 30
    assert idle_from - 1_000 <= max(played.batches[11][0]) <= idle_from


def test_default_idle_partition_goes_idle_halfway(log):
    scenario = idle_partition(log, **SMALL)

    assert scenario.with_role(IDLE) == [1]
    assert scenario.since_ms == DEFAULT_START_MS + (LAST_SEND_MS - DEFAULT_START_MS) // 2
    assert scenario.partitions[1].records == 150


def test_stalled_partition_has_a_backlog_but_is_never_read(log, log_dir):
    scenario = stalled_partition(log, stalled_partition=0, **SMALL)

    recs = assert_described(scenario, log)
    assert scenario.roles == {0: STALLED, 1: STEADY, 2: STEADY, 3: STEADY}
    assert [len(r) for r in recs.values()] == [300] * 4
    assert caps(scenario) == {0: 0, 1: 10, 2: 10, 3: 10}

    played = replay(scenario, log_dir)  # ends, though partition 0 never reaches its target
    assert played.end == {("telemetry", 0): 0, **{("telemetry", p): 300 for p in (1, 2, 3)}}
    assert played.read(0) == 0 and len(played.batches) == 30
    assert played.late == dict.fromkeys(range(4), 0)


def test_late_burst_writes_old_records_into_one_partition(log, log_dir):
    burst_at = DEFAULT_START_MS + 20_000
    scenario = late_burst(log, late_partition=2, burst_records=30, burst_at_ms=burst_at, **SMALL)

    recs = assert_described(scenario, log)
    assert scenario.roles == {0: STEADY, 1: STEADY, 2: LATE, 3: STEADY}
    assert scenario.since_ms == burst_at
    assert [len(r) for r in recs.values()] == [300, 300, 330, 300]
    assert scenario.burst is not None and scenario.burst.records == 30
    low, high = burst_at - 30_000 - DISORDER_MS, burst_at - 30_000
    assert low <= scenario.burst.min_event_ms <= scenario.burst.max_event_ms <= high
    # Normal records are out of order by at most the disorder: the burst is what lies further.
    behind = {p: offsets_far_behind(records, DISORDER_MS) for p, records in recs.items()}
    assert behind[0] == behind[1] == behind[3] == []
    first = behind[2][0]
    assert behind[2] == list(range(first, first + 30))  # one contiguous burst
    assert all(low <= recs[2][o].timestamp_ms <= high for o in behind[2])
    assert recs[2][first - 1].timestamp_ms < burst_at <= recs[2][first + 30].timestamp_ms + 2_000

    played = replay(scenario, log_dir)
    assert played.late == {0: 0, 1: 0, 2: 30, 3: 0}  # the burst is late, nothing else


@pytest.mark.parametrize(
    ("params", "partition", "at_ms", "ahead_ms"),
    [
        ({}, 3, HALFWAY_MS, TWO_HOURS_MS),
        ({"partitions": 2}, 1, HALFWAY_MS, TWO_HOURS_MS),
        (
            {"future_partition": 0, "future_at_ms": EARLY_MS, "ahead_by_ms": 60_000},
            0,
            EARLY_MS,
            60_000,
        ),
    ],
    ids=["defaults-last-partition-halfway", "two-partitions", "first-partition-a-minute-ahead"],
)
def test_future_timestamp_writes_one_record_ahead_of_every_partition(
    log, log_dir, params, partition, at_ms, ahead_ms
):
    scenario = future_timestamp(log, **SMALL, **params)
    partitions = params.get("partitions", 4)

    recs = assert_described(scenario, log)
    assert scenario.roles == {p: FUTURE if p == partition else STEADY for p in range(partitions)}
    assert scenario.since_ms == at_ms
    # Every other record's event time lies before its send time, so before the last one.
    future = [
        (p, o) for p, rs in recs.items() for o, r in enumerate(rs) if r.timestamp_ms > LAST_SEND_MS
    ]
    offset = sent_before(partition, at_ms, partitions)
    assert future == [(partition, offset)]
    record = recs[partition][offset]
    assert record.timestamp_ms == at_ms + ahead_ms
    assert scenario.future_record == PlacedRecord(partition, offset, record.key, at_ms + ahead_ms)
    # Every partition, its own included, was at ``at_ms`` (less the disorder) when it came.
    for p, records in recs.items():
        newest = max(r.timestamp_ms for r in records[: sent_before(p, at_ms, partitions)])
        assert at_ms - DISORDER_MS - 100 <= newest <= at_ms
    assert caps(scenario) == dict.fromkeys(range(partitions), 40 // partitions)

    played = replay(scenario, log_dir)
    read_in = next(n for n, batch in enumerate(played.batches) if max(batch[partition]) > at_ms)
    # Its watermark is in force from the next batch on; the batch after that drops everything.
    after = played.batches[read_in + 2 :]
    assert after and played.late == {p: sum(len(b[p]) for b in after) for p in range(partitions)}


def sent_before(partition: int, at_ms: int, partitions: int) -> int:
    """Records of ``partition`` sent before ``at_ms``: record i of the schedule is sent at
    i / rate and belongs to partition i % partitions."""
    return sum(
        i % partitions == partition and i * 1000 // SMALL["rate"] < at_ms - DEFAULT_START_MS
        for i in range(SMALL["records"])
    )


def test_the_future_records_offset_counts_what_its_partition_held_before(log):
    first = future_timestamp(log, seed=1, **SMALL)
    second = future_timestamp(log, seed=2, start_ms=LAST_SEND_MS + 25, **SMALL)  # a next round

    placed = second.future_record
    assert placed is not None
    assert placed.offset == first.partitions[3].records + sent_before(3, HALFWAY_MS, 4)
    [(_, record)] = log.read("telemetry", 3, placed.offset, placed.offset + 1)
    assert (record.key, record.timestamp_ms) == (placed.key, placed.event_ms)


def test_catch_up_gives_one_partition_a_backlog_it_drains_last_at_the_same_pace(log, log_dir):
    scenario = catch_up(log, catching_up_partition=2, backlog_records=150, **SMALL)

    recs = assert_described(scenario, log)
    assert scenario.roles == {0: STEADY, 1: STEADY, 2: CATCHING_UP, 3: STEADY}
    assert [len(r) for r in recs.values()] == [300, 300, 450, 300]
    # The extra backlog is sent as the traffic ends, as new as the newest records.
    assert scenario.since_ms == LAST_SEND_MS
    assert scenario.burst is not None and scenario.burst.records == 150
    extra = [r.timestamp_ms for r in recs[2][300:]]
    assert scenario.burst == PartitionSummary(150, min(extra), max(extra))
    assert LAST_SEND_MS - DISORDER_MS <= min(extra) and max(extra) <= LAST_SEND_MS
    assert caps(scenario) == dict.fromkeys(range(4), 10)  # read like the others
    assert scenario.drain == Drain(partition=2, records=450, limit=10, trigger_seconds=1.0)
    assert (scenario.drain.rate, scenario.drain.batches) == (10.0, 45)

    played = replay(scenario, log_dir)
    assert played.late == dict.fromkeys(range(4), 0)
    assert [played.last_batch_reading(p) for p in range(4)] == [29, 29, 44, 29]
    # Every batch reads its limit, and what is left is what the drain says.
    read = 0
    for number, batch in enumerate(played.batches):
        read += len(batch[2])
        assert scenario.partitions[2].records - read == scenario.drain.backlog_after(number + 1)
    assert scenario.drain.backlog_after(45) == 0


def test_catch_up_defaults_to_doubling_the_partitions_traffic(log):
    scenario = catch_up(log, **SMALL)

    assert scenario.with_role(CATCHING_UP) == [1]
    assert scenario.drain == Drain(1, 600, 10, 1.0)
    assert scenario.drain.batches == 60


@pytest.mark.parametrize(
    ("records", "limit", "batches", "after_one", "after_all"),
    [(600, 10, 60, 590, 0), (95, 10, 10, 85, 0), (1, 5, 1, 0, 0)],
    ids=["whole-batches", "a-short-last-batch", "less-than-a-batch"],
)
def test_a_drain_takes_as_many_batches_as_its_limit_needs(
    records, limit, batches, after_one, after_all
):
    drain = Drain(0, records, limit, 0.5)

    assert drain.rate == limit * 2
    assert drain.batches == batches
    assert (drain.backlog_after(1), drain.backlog_after(batches)) == (after_one, after_all)
    assert drain.backlog_after(batches + 5) == 0


def test_state_growth_freezes_event_time_while_new_scooters_keep_reporting(log, log_dir):
    scenario = state_growth(log, **SMALL)

    recs = assert_described(scenario, log)
    assert scenario.roles == dict.fromkeys(range(4), FROZEN)
    assert [len(r) for r in recs.values()] == [300] * 4
    assert scenario.since_ms == HALFWAY_MS
    assert caps(scenario) == dict.fromkeys(range(4), 10)
    before_keys = set()
    for records in recs.values():
        split = next(o for o, r in enumerate(records) if r.timestamp_ms >= HALFWAY_MS)
        before, after = records[:split], records[split:]
        assert len(after) == 150  # half of the traffic
        assert all(r.timestamp_ms < HALFWAY_MS for r in before)
        assert all(r.timestamp_ms == HALFWAY_MS for r in after)
        before_keys |= {r.key for r in before}
        after_keys = [r.key for r in after]
        assert len(set(after_keys)) == len(after_keys)  # each from a scooter of its own
        assert not set(after_keys) & before_keys
    assert before_keys <= {f"scooter-{i:04d}" for i in range(SMALL["scooters"])}

    played = replay(scenario, log_dir)
    assert played.late == dict.fromkeys(range(4), 0)
    # From the batch that reads the freeze on, no batch reads anything newer.
    newest = [max(t for times in batch.values() for t in times) for batch in played.batches]
    frozen = newest.index(HALFWAY_MS)
    assert frozen == 15 and newest[frozen:] == [HALFWAY_MS] * 15
    assert newest[:frozen] == sorted(newest[:frozen])


def offsets_far_behind(records: list[LogRecord], disorder_ms: int) -> list[int]:
    highest, far = None, []
    for offset, record in enumerate(records):
        if highest is not None and record.timestamp_ms < highest - disorder_ms:
            far.append(offset)
        highest = max(highest or record.timestamp_ms, record.timestamp_ms)
    return far


# --- every scenario ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_same_seed_same_files_and_description_another_seed_different(tmp_path, name):
    runs = {}
    for run, seed in [("a", 3), ("b", 3), ("c", 4)]:
        root = tmp_path / run
        scenario = SCENARIOS[name](PartitionedLog(root, segment_records=100), seed=seed, **SMALL)
        runs[run] = (files(root), scenario)

    assert len(runs["a"][0]) > 4  # every partition, several segments
    assert runs["a"] == runs["b"]
    assert runs["a"][0] != runs["c"][0]
    assert runs["c"][1].seed == 4 and runs["c"][1].name == name


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_defaults_write_every_partition_in_a_stable_topic(log, name):
    scenario = play(name, log, topic="scooters")

    assert_described(scenario, log)
    assert scenario.topic == "scooters" and log.topics() == ["scooters"]
    assert scenario.records == sum(log.end_offsets("scooters").values()) >= 3_500
    assert set(scenario.roles.values()) <= set(ROLES)


def test_registry_lists_the_scenarios_and_rejects_duplicates():
    assert sorted(SCENARIOS) == [
        "catch_up",
        "future_timestamp",
        "idle_partition",
        "late_burst",
        "skewed_backfill",
        "stalled_partition",
        "state_growth",
        "steady",
    ]
    before = dict(SCENARIOS)

    def other(log, **params):
        raise AssertionError("never called")

    with pytest.raises(ValueError, match="'steady' is already registered"):
        register(other, name="steady")
    assert SCENARIOS == before


def test_play_rejects_unknown_names(log):
    with pytest.raises(ValueError, match="no scenario named 'chaos'; known: catch_up, future_"):
        play("chaos", log)
    assert log.topics() == []


@pytest.mark.parametrize(
    ("function", "params", "message"),
    [
        (steady, {"partitions": 0}, "partitions"),
        (steady, {"records": 0}, "records"),
        (steady, {"rate": 0}, "rate"),
        (steady, {"seed": "x"}, "seed"),
        (steady, {"max_disorder_ms": -1}, "max_disorder_ms"),
        (steady, {"trigger_seconds": 0}, "trigger_seconds"),
        (steady, {"rate": "fast"}, "rate"),
        (skewed_backfill, {"fast_factor": "10"}, "fast_factor"),
        (steady, {"topic": "../x"}, "invalid topic name"),
        (steady, {"scooters": 2}, "every partition needs at least one scooter"),
        (skewed_backfill, {"partitions": 1}, "partitions >= 2"),
        (skewed_backfill, {"fast_partition": 4}, "fast_partition must be in"),
        (skewed_backfill, {"fast_factor": 1}, "fast_factor"),
        (idle_partition, {"idle_partition": -1}, "idle_partition must be in"),
        (idle_partition, {"idle_from_ms": DEFAULT_START_MS}, "idle_from_ms"),
        (stalled_partition, {"stalled_partition": "1"}, "stalled_partition must be in"),
        (late_burst, {"late_partition": 9}, "late_partition must be in"),
        (late_burst, {"burst_records": 0}, "burst_records"),
        (late_burst, {"late_by_ms": 0}, "late_by_ms"),
        (future_timestamp, {"partitions": 1}, "partitions >= 2"),
        (future_timestamp, {"future_partition": 4}, "future_partition must be in"),
        (future_timestamp, {"future_at_ms": DEFAULT_START_MS - 1}, "future_at_ms"),
        (future_timestamp, {"future_at_ms": DEFAULT_START_MS + 40_000}, "future_at_ms"),
        (future_timestamp, {"future_at_ms": "soon"}, "future_at_ms"),
        (future_timestamp, {"ahead_by_ms": 0}, "ahead_by_ms"),
        (future_timestamp, {"ahead_by_ms": 1.5}, "ahead_by_ms"),
        (catch_up, {"catching_up_partition": 4}, "catching_up_partition must be in"),
        (catch_up, {"partitions": 1}, "partitions >= 2"),
        (catch_up, {"backlog_records": 0}, "backlog_records"),
        (catch_up, {"backlog_records": 2.5}, "backlog_records"),
        (state_growth, {"frozen_from_ms": DEFAULT_START_MS}, "frozen_from_ms"),
        (state_growth, {"frozen_from_ms": DEFAULT_START_MS + 40_000}, "frozen_from_ms"),
        (state_growth, {"frozen_from_ms": "later"}, "frozen_from_ms"),
    ],
    ids=[
        "no-partitions",
        "no-records",
        "zero-rate",
        "str-seed",
        "negative-disorder",
        "zero-trigger",
        "str-rate",
        "str-fast-factor",
        "bad-topic",
        "too-few-scooters",
        "one-partition",
        "no-such-fast-partition",
        "no-speedup",
        "negative-idle-partition",
        "idle-from-the-start",
        "str-stalled-partition",
        "no-such-late-partition",
        "empty-burst",
        "not-late",
        "future-one-partition",
        "no-such-future-partition",
        "future-before-the-traffic",
        "future-after-the-traffic",
        "str-future-at",
        "not-ahead",
        "float-ahead",
        "no-such-catching-up-partition",
        "catch-up-one-partition",
        "no-backlog",
        "float-backlog",
        "frozen-from-the-start",
        "frozen-after-the-traffic",
        "str-frozen-from",
    ],
)
def test_bad_parameters_are_rejected_before_anything_is_written(log, function, params, message):
    with pytest.raises(ValueError, match=message):
        function(log, **params)
    assert log.topics() == []
