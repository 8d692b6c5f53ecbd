"""Reading lines from positions: every codec alike, resumes, growth, renames and failures."""

import os
from dataclasses import replace

import pytest

from monitor.ingest.logfiles import LogEndsShort, LogError, discover
from monitor.ingest.reader import LogLine, LogReader, Position
from tests.support.event_logs import CODEC_VARIANTS, only_file, read_all, summary

VARIANTS = [*CODEC_VARIANTS, "single_zstd"]


@pytest.fixture(scope="module")
def plain_summary(event_logs):
    """The uncompressed log's events: what every codec must read to."""
    return summary(read_all(only_file(event_logs.directory("plain"))))


def test_the_run_is_the_one_we_asked_for(plain_summary):
    assert plain_summary[0] == ("SparkListenerLogStart", None)
    assert plain_summary[-1] == ("SparkListenerApplicationEnd", None)
    streaming = [event for event in plain_summary if "StreamingQueryListener" in event[0]]
    assert streaming == [
        ("StreamingQueryListener$QueryStartedEvent", None),
        ("StreamingQueryListener$QueryProgressEvent", 0),
        ("StreamingQueryListener$QueryProgressEvent", 1),
        ("StreamingQueryListener$QueryProgressEvent", 2),
        ("StreamingQueryListener$QueryTerminatedEvent", None),
    ]


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_codec_reads_the_same_events(event_logs, plain_summary, variant):
    file = only_file(event_logs.directory(variant))
    reader = LogReader(file)
    lines = reader.read()
    assert summary([line.text for line in lines]) == plain_summary
    assert [line.number for line in lines] == list(range(1, len(lines) + 1))
    assert reader.done and reader.read() == []
    assert reader.bytes_read == event_logs.events_file(variant).stat().st_size


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("first", [1, 17, 62])
def test_resuming_from_a_returned_position(event_logs, variant, first):
    file = only_file(event_logs.directory(variant))
    everything = read_all(file)
    head = LogReader(file).read(max_lines=first)
    rest = LogReader(file, head[-1].end).read()
    assert [line.text for line in head + rest] == everything
    assert rest[0].number == first + 1


@pytest.mark.parametrize("variant", ["plain", "zstd"])
def test_small_chunks_and_batches_of_lines(event_logs, variant):
    file = only_file(event_logs.directory(variant))
    reader = LogReader(file, chunk_size=1000)
    batches = []
    while batch := reader.read(max_lines=5):
        batches.append(batch)
    assert all(len(batch) == 5 for batch in batches[:-1])
    assert [line.text for batch in batches for line in batch] == read_all(file)
    assert reader.done


def test_a_line_written_in_two_halves_is_returned_once_complete(tmp_path):
    path = tmp_path / "local-1.inprogress"
    path.write_bytes(b'{"Event":"A"}\n{"Event":')
    reader = LogReader(only_file(path))
    assert [line.text for line in reader.read()] == ['{"Event":"A"}']
    assert reader.read() == []
    with path.open("ab") as log:
        log.write(b'"B"}\n')
    (line,) = reader.read()
    assert (line.text, line.number, line.end) == ('{"Event":"B"}', 2, Position(28, 2))
    assert reader.read() == []


@pytest.mark.parametrize("variant", ["zstd", "lz4", "snappy", "plain"])
def test_a_growing_file_is_picked_up_by_the_next_read(event_logs, tmp_path, variant):
    final = event_logs.events_file(variant)
    data = final.read_bytes()
    growing = tmp_path / "eventlog_v2_app-1" / final.name
    growing.parent.mkdir()
    (tmp_path / "eventlog_v2_app-1" / "appstatus_app-1.inprogress").write_bytes(b"")
    growing.write_bytes(b"")
    reader = LogReader(only_file(growing.parent))
    texts = []
    for cut in [0, 333, len(data) // 3, len(data) // 3 + 1, len(data) - 5, len(data)]:
        with growing.open("ab") as log:
            log.write(data[growing.stat().st_size : cut])
        texts += [line.text for line in reader.read()]
    assert texts == read_all(only_file(final.parent))
    assert not reader.done  # the app is still running: more may come


@pytest.mark.parametrize("variant", ["zstd", "lz4", "snappy", "plain", "single_zstd"])
def test_a_copy_taken_while_the_app_ran(event_logs, variant):
    running = read_all(only_file(event_logs.directory(variant, in_progress=True)))
    finished = read_all(only_file(event_logs.directory(variant)))
    assert len(running) > len(finished) / 2
    assert summary(running) == summary(finished)[: len(running)]


def test_the_rename_at_the_end_keeps_the_position(event_logs, copy_of, tmp_path):
    copy_of(event_logs.events_file("single_zstd", in_progress=True))
    (running,) = discover(str(tmp_path))[0].files
    reader = LogReader(running)
    seen = reader.read()
    assert not reader.done

    finished = event_logs.events_file("single_zstd")
    (tmp_path / running.name).unlink()
    copy_of(finished)
    (complete,) = discover(str(tmp_path))[0].files
    assert complete.key == running.key
    reader.relocate(complete)
    rest = reader.read()
    assert reader.done
    assert [line.text for line in seen + rest] == read_all(complete)


def test_relocate_refuses_another_file(event_logs):
    reader = LogReader(only_file(event_logs.directory("zstd")))
    with pytest.raises(ValueError):
        reader.relocate(only_file(event_logs.directory("lz4")))


def read_until_error(reader: LogReader) -> tuple[list[LogLine], LogError]:
    """The lines a reader returns before it raises, and what it raises."""
    lines: list[LogLine] = []
    with pytest.raises(LogError) as raised:
        while True:
            batch = reader.read()
            assert batch, "read() returned nothing without raising"
            lines += batch
    return lines, raised.value


def cut_file(event_logs, copy_of, variant, keep):
    source = event_logs.events_file(variant)
    target = copy_of(source)
    target.write_bytes(keep(source.read_bytes()))
    return target


def inside_a_line(data: bytes) -> bytes:
    """The first half of `data` and a few bytes, never cut right after a line end: there a plain
    file would only be shorter, not truncated (the lines' lengths vary from run to run)."""
    cut = len(data) // 2 + 7
    while data[cut - 1 : cut] == b"\n":
        cut += 1
    return data[:cut]


@pytest.mark.parametrize("variant", ["zstd", "lz4", "snappy", "plain"])
def test_a_truncated_complete_file(event_logs, copy_of, variant):
    path = cut_file(event_logs, copy_of, variant, inside_a_line)
    good, error = read_until_error(LogReader(only_file(path)))
    assert "truncated" in error.reason
    assert isinstance(error, LogEndsShort) and error.size == path.stat().st_size
    assert error.line == len(good) + 1
    assert error.url == path.as_uri()
    assert str(error).startswith(f"{path.as_uri()}:{error.line}: ")


ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def corrupt_third_frame(data: bytes) -> bytes:
    # zstd's own structure: Spark writes frames without checksums, so bytes changed inside a
    # block can decode to other bytes silently (the JSON parser then fails on that line).
    third = data.index(ZSTD_MAGIC, data.index(ZSTD_MAGIC, 1) + 1)
    return data[:third] + bytes(4) + data[third + 4 :]


@pytest.mark.parametrize(
    ("variant", "corrupt", "message"),
    [
        ("zstd", lambda d: corrupt_third_frame(d), "corrupt zstd"),
        ("lz4", lambda d: d[:40000] + b"garbage!" * 200 + d[41600:], "corrupt lz4"),
        ("snappy", lambda d: d[:16] + b"\x7f\xff\xff\xff" + d[20:], "corrupt snappy"),
        ("plain", lambda d: d[:1000] + b"\xff\xfe" + d[1002:], "not UTF-8"),
    ],
    ids=["zstd", "lz4", "snappy", "plain"],
)
def test_corrupt_data_names_the_file_and_line(event_logs, copy_of, variant, corrupt, message):
    path = cut_file(event_logs, copy_of, variant, corrupt)
    reader = LogReader(only_file(path))
    good, error = read_until_error(reader)
    assert message in error.reason
    assert error.url == path.as_uri() and error.line == len(good) + 1
    with pytest.raises(LogError):  # the decompression state is lost: it stays broken
        reader.read()


def test_the_unknown_codec(event_logs):
    file = only_file(event_logs.directory("lzf"))
    with pytest.raises(LogError, match="unknown codec 'lzf'") as raised:
        LogReader(file)
    assert raised.value.url == file.url


def test_a_file_that_vanished(event_logs, copy_of):
    path = copy_of(event_logs.events_file("zstd"))
    file = only_file(path)
    path.unlink()
    with pytest.raises(LogError, match="vanished") as raised:
        LogReader(file).read()
    assert raised.value.url == file.url


@pytest.mark.parametrize(
    ("put", "kind"), [(os.mkdir, "a directory"), (os.mkfifo, "a FIFO")], ids=["directory", "fifo"]
)
@pytest.mark.timeout(10)  # a FIFO that nothing writes to blocks a plain open() for good
def test_something_else_in_place_of_a_file_is_named(tmp_path, put, kind):
    (tmp_path / "local-1").write_bytes(b"{}\n")
    file = only_file(tmp_path / "local-1")
    (tmp_path / "local-1").unlink()
    put(tmp_path / "local-1")
    with pytest.raises(LogError, match=f": is {kind}, not a regular file$"):
        LogReader(file).read()


@pytest.mark.parametrize("variant", ["plain", "zstd"])
def test_a_position_inside_a_line(event_logs, variant):
    file = only_file(event_logs.directory(variant))
    (first,) = LogReader(file).read(max_lines=1)
    inside = replace(first.end, offset=first.end.offset + 3)
    with pytest.raises(LogError, match="not the start of a line"):
        LogReader(file, inside).read()


@pytest.mark.parametrize("variant", ["plain", "zstd"])
def test_a_position_past_the_end(event_logs, variant):
    file = only_file(event_logs.directory(variant))
    with pytest.raises(LogError, match="shorter|ends before"):
        LogReader(file, Position(10**9, 5000)).read()


def test_the_lines_before_corruption_come_first(event_logs, copy_of):
    path = cut_file(event_logs, copy_of, "zstd", corrupt_third_frame)
    reader = LogReader(only_file(path), chunk_size=64)
    good = reader.read()
    assert 1 <= len(good) < 63
    with pytest.raises(LogError, match="corrupt zstd") as raised:
        reader.read()
    assert raised.value.line == len(good) + 1
    assert [line.text for line in good] == read_all(only_file(event_logs.directory("zstd")))[
        : len(good)
    ]
