"""The on-disk partitioned log: segments, offsets, partial lines, the tail cache, bad input."""

import json
import os
from pathlib import Path

import pytest

from monitor.regular_files import NotRegularFile
from streaming.log import LogRecord, PartitionedLog, segment_name


def records(n: int, first: int = 0, key: str = "k") -> list[LogRecord]:
    return [LogRecord(key, f"value-{i}", 1_700_000_000_000 + i) for i in range(first, first + n)]


def segment_files(log_dir: Path, topic: str = "t", partition: int = 0) -> list[str]:
    return sorted(path.name for path in (log_dir / topic / str(partition)).iterdir())


def test_append_and_read_round_trip_across_segments(log_dir):
    log = PartitionedLog(log_dir, segment_records=3)

    assert log.append("t", 0, records(4)) == 4
    assert log.append("t", 0, records(5, first=4)) == 9

    assert segment_files(log_dir) == [segment_name(0), segment_name(3), segment_name(6)]
    assert segment_name(3) == "00000000000000000003.jsonl"
    lines = (log_dir / "t" / "0" / segment_name(3)).read_text().splitlines()
    assert [json.loads(line) for line in lines][0] == {
        "key": "k",
        "value": "value-3",
        "timestamp": 1_700_000_000_003,
    }
    assert list(log.read("t", 0, 0, 9)) == list(enumerate(records(9)))
    assert list(log.read("t", 0, 2, 7)) == list(enumerate(records(9)))[2:7]
    assert list(log.read("t", 0, 6, 6)) == []


def test_read_opens_only_the_segments_it_needs(log_dir):
    log = PartitionedLog(log_dir, segment_records=2)
    log.append("t", 0, records(6))
    (log_dir / "t" / "0" / segment_name(0)).write_text("not json\n" * 2)

    assert [offset for offset, _ in log.read("t", 0, 2, 6)] == [2, 3, 4, 5]


def test_topics_partitions_and_end_offsets(log_dir):
    log = PartitionedLog(log_dir, segment_records=4)
    log.append("telemetry", 2, records(5))
    log.append("telemetry", 0, records(1))
    log.append("alerts", 0, records(2))
    (log_dir / "telemetry" / "notes.txt").write_text("not a partition")
    (log_dir / "telemetry" / "2" / "README").write_text("not a segment")

    assert log.topics() == ["alerts", "telemetry"]
    assert log.partitions("telemetry") == [0, 2]
    assert log.end_offsets("telemetry") == {0: 1, 2: 5}
    assert log.end_offsets("missing") == {}
    assert log.end_offset("telemetry", 7) == 0
    assert PartitionedLog(log_dir / "nowhere").topics() == []


def test_empty_append_writes_nothing(log_dir):
    log = PartitionedLog(log_dir)

    assert log.append("t", 0, []) == 0
    assert log.topics() == []


def test_partial_last_line_is_not_counted_until_complete(log_dir):
    writer = PartitionedLog(log_dir, segment_records=10)
    reader = PartitionedLog(log_dir)
    writer.append("t", 0, records(2))
    assert reader.end_offsets("t") == {0: 2}
    line = LogRecord("k", "late", 42).to_line()
    segment = log_dir / "t" / "0" / segment_name(0)

    with open(segment, "ab") as f:
        f.write(line[:10])
    assert reader.end_offsets("t") == {0: 2}
    assert PartitionedLog(log_dir).end_offsets("t") == {0: 2}
    with pytest.raises(ValueError, match="ends at 2"):
        reader.read("t", 0, 0, 3)
    with pytest.raises(RuntimeError, match="incomplete line"):
        writer.append("t", 0, records(1))

    with open(segment, "ab") as f:
        f.write(line[10:])
    assert reader.end_offsets("t") == {0: 3}
    assert list(reader.read("t", 0, 2, 3)) == [(2, LogRecord("k", "late", 42))]


def test_cached_end_offsets_match_a_fresh_instance_as_the_log_grows(log_dir):
    writer = PartitionedLog(log_dir, segment_records=4)
    watcher = PartitionedLog(log_dir)
    for step, count in enumerate([1, 2, 3, 0, 5, 4, 9]):
        writer.append("t", step % 2, records(count))
        assert watcher.end_offsets("t") == PartitionedLog(log_dir).end_offsets("t")
    assert watcher.end_offsets("t") == {0: 1 + 3 + 5 + 9, 1: 2 + 0 + 4}


def test_end_offsets_read_only_the_bytes_added_since_the_last_call(log_dir):
    watcher = PartitionedLog(log_dir)
    PartitionedLog(log_dir).append("t", 0, records(3))
    assert watcher.end_offsets("t") == {0: 3}
    segment = log_dir / "t" / "0" / segment_name(0)
    # Blank out the first line's newline: only a full rescan could notice.
    data = segment.read_bytes()
    segment.write_bytes(data.replace(b"\n", b" ", 1))

    PartitionedLog(log_dir).append("t", 0, records(1))
    assert watcher.end_offsets("t") == {0: 4}
    assert PartitionedLog(log_dir).end_offsets("t") == {0: 3}


def test_end_offsets_after_the_log_is_recreated(log_dir):
    watcher = PartitionedLog(log_dir)
    PartitionedLog(log_dir).append("t", 0, records(5))
    assert watcher.end_offsets("t") == {0: 5}

    (log_dir / "t" / "0" / segment_name(0)).unlink()
    PartitionedLog(log_dir).append("t", 0, records(2))
    assert watcher.end_offsets("t") == {0: 2}


@pytest.mark.parametrize(
    "topic",
    ["", ".", "..", "../etc", "a/b", "a\\b", "has space", "x" * 250, None],
    ids=["empty", "dot", "dotdot", "traversal", "slash", "backslash", "space", "too-long", "none"],
)
def test_bad_topic_names_are_rejected(log_dir, topic):
    log = PartitionedLog(log_dir)
    with pytest.raises(ValueError, match="invalid topic name"):
        log.append(topic, 0, records(1))
    with pytest.raises(ValueError, match="invalid topic name"):
        log.end_offsets(topic)
    assert list(log_dir.iterdir()) == []


@pytest.mark.parametrize(
    "partition", [-1, 1.5, "0", True], ids=["negative", "float", "str", "bool"]
)
def test_bad_partitions_are_rejected(log_dir, partition):
    log = PartitionedLog(log_dir)
    with pytest.raises(ValueError, match="invalid partition"):
        log.append("t", partition, records(1))
    with pytest.raises(ValueError, match="invalid partition"):
        log.read("t", partition, 0, 0)


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [(3, 2, "invalid offset range"), (-1, 2, "invalid offset range"), (0, 6, "ends at 5")],
    ids=["start-after-end", "negative-start", "past-the-end"],
)
def test_bad_read_ranges_are_rejected(log_dir, start, end, message):
    log = PartitionedLog(log_dir)
    log.append("t", 0, records(5))
    with pytest.raises(ValueError, match=message):
        log.read("t", 0, start, end)


@pytest.mark.parametrize("segment_records", [0, -3, 2.5], ids=["zero", "negative", "float"])
def test_bad_segment_size_is_rejected(log_dir, segment_records):
    with pytest.raises(ValueError, match="segment_records"):
        PartitionedLog(log_dir, segment_records=segment_records)


@pytest.mark.timeout(10)  # a FIFO that nothing writes to blocks a plain open() for good
def test_a_fifo_in_place_of_a_segment_is_named_not_waited_on(log_dir):
    log = PartitionedLog(log_dir, segment_records=2)
    log.append("t", 0, records(4))
    segment = log_dir / "t" / "0" / segment_name(0)
    segment.unlink()
    os.mkfifo(segment)
    with pytest.raises(NotRegularFile, match=f"^{segment}: is a FIFO, not a regular file$"):
        list(log.read("t", 0, 0, 4))
