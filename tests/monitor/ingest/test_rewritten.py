"""A log rewritten under `wmon ingest`: truncated and written again with another query, or
replaced (a rename over it) by a longer log, found by the file's content whether the ingest
follows it or is run again, read again from its start and said so; what its new content
repeats of what was stored is stored once."""

import os
import shutil
import struct

import cramjam
import lz4.block
import pytest
import sqlalchemy as sa
import zstandard

from monitor.health.predicates import Timeouts
from monitor.ingest.codecs import LZ4_MAGIC, SNAPPY_MAGIC
from monitor.ingest.ingester import Ingester
from monitor.store.schema.engine import create_engine
from monitor.store.schema.models import LogPosition
from tests.support.event_logs import LOG_START, query_run
from tests.support.stores import stored_rows

APP = "local-1700000000000"
AT = 1_700_000_000_000
# A query's run, then another query's, longer, that the log is rewritten with.
OLD = LOG_START + query_run("q-old", "r-old", [0, 1, 2], AT)
NEW = LOG_START + query_run("q-new", "r-new", [0, 1, 2, 3, 4, 5], AT + 60_000)
# The same run, two batches on: what Spark appends to OLD.
OLD_ON = LOG_START + query_run("q-old", "r-old", [0, 1, 2, 3, 4], AT)
# OLD_ON after another first event: every event read from OLD again, and two more batches.
APP_START = f'{{"Event":"SparkListenerApplicationStart","App Name":"orders","Timestamp":{AT}}}\n'
# The rollups' sums of rates: a log read in two goes adds them in another order, which may
# change their last bit (118.00000000000001 for 118.0).
RATE_SUMS = ("input_rate_sum", "processed_rate_sum")
REPEATED = LOG_START + APP_START + query_run("q-old", "r-old", [0, 1, 2, 3, 4], AT)


def single_plain(history):
    """A single uncompressed file, still being written."""
    return history / f"{APP}.inprogress", str.encode


def rolling(codec, encode_line, header=b""):
    """A rolling directory's one events file, still being written with `codec`, a block (or
    frame) a flushed line, as Spark writes it."""

    def layout(history):
        directory = history / f"eventlog_v2_{APP}"
        directory.mkdir()
        (directory / f"appstatus_{APP}.inprogress").touch()

        def blocks(text):
            return header + b"".join(map(encode_line, text.encode().splitlines(True)))

        return directory / f"events_1_{APP}.{codec}", blocks

    return layout


def lz4_block(data):
    """lz4-java's block: magic, token (compressed, its level), lengths, an unchecked checksum."""
    level = max((len(data) - 1).bit_length() - 10, 0)
    body = lz4.block.compress(data, store_size=False)
    return LZ4_MAGIC + struct.pack("<Biii", 0x20 | level, len(body), len(data), 0) + body


def snappy_block(data):
    """snappy-java's block: a big-endian length, then raw snappy."""
    body = bytes(cramjam.snappy.compress_raw(data))
    return struct.pack(">i", len(body)) + body


LAYOUTS = {
    "single plain": single_plain,
    "rolling zstd": rolling("zstd", zstandard.ZstdCompressor().compress),
    "rolling lz4": rolling("lz4", lz4_block),
    "rolling snappy": rolling("snappy", snappy_block, SNAPPY_MAGIC + struct.pack(">ii", 1, 1)),
}
# Uncompressed and compressed are read differently; one codec stands for the others.
TWO_LAYOUTS = ["single plain", "rolling zstd"]


def truncated(path, data):
    """Truncated and written again in place: the same file."""
    with path.open("r+b") as log:
        log.truncate(0)
        log.write(data)


def replaced(path, data):
    """Written beside it and renamed over it, atomically: another file under its name."""
    beside = path.with_name(path.name + ".tmp")
    beside.write_bytes(data)
    os.replace(beside, path)


class Ingests:
    """`wmon ingest` of one history folder into one store: one process that follows, or a
    new process each time."""

    def __init__(self, engine, history, following):
        self.engine, self.history, self.following = engine, history, following
        self.said: list[str] = []
        self._follower = self._ingester() if following else None

    def _ingester(self):
        urls = [str(self.history)]
        return Ingester(self.engine, urls, Timeouts(), self.said.append, following=self.following)

    def step(self):
        ingester = self._follower or self._ingester()
        ingester.step()
        return ingester


@pytest.fixture(scope="module")
def alone(sqlite_template, tmp_path_factory):
    """What an ingest of a text alone, in a layout, stores of a query: the rows to compare
    with (one ingest for each layout and text, whichever test asks first)."""
    stored = {}

    def rows(layout, text, query_id):
        if (layout, text) not in stored:
            folder = tmp_path_factory.mktemp("alone")
            history = folder / "history"
            history.mkdir()
            path, encode = LAYOUTS[layout](history)
            path.write_bytes(encode(text))
            shutil.copyfile(sqlite_template, folder / "wmon.db")
            stored[(layout, text)] = create_engine(f"sqlite:///{folder / 'wmon.db'}")
            Ingester(stored[(layout, text)], [str(history)], Timeouts()).step()
        return held(stored[(layout, text)], query_id)

    return rows


def held(engine, query_id):
    """The query's stored rows, the rollups' rate sums to nine decimals."""
    rows = stored_rows(engine, query_id)
    for row in rows["query_minutes"] + rows["query_hours"]:
        row.update({name: round(row[name], 9) for name in RATE_SUMS if row[name] is not None})
    return rows


def position(engine):
    with engine.connect() as connection:
        row = connection.execute(sa.select(LogPosition)).one()
    return row.lines_read, row.fingerprint_bytes


@pytest.mark.parametrize("following", [True, False], ids=["following", "run again"])
@pytest.mark.parametrize("rewrite", [truncated, replaced], ids=["truncated", "replaced"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_log_rewritten_with_another_query_is_read_again_from_its_start(
    engine, tmp_path, alone, layout, rewrite, following
):
    history = tmp_path / "history"
    history.mkdir()
    path, encode = LAYOUTS[layout](history)
    path.write_bytes(encode(OLD))
    ingests = Ingests(engine, history, following)
    ingests.step()
    assert ingests.said == []

    rewrite(path, encode(NEW))
    ingester = ingests.step()
    url = path.as_uri()
    assert ingests.said == [
        f"{url}: rewritten: its first {len(encode(OLD)):,} bytes are not those read from it; "
        "reading it again from its start"
    ]
    assert (ingester.totals.rewritten, ingester.totals.problems) == (1, 0)
    assert held(engine, "q-old") == alone(layout, OLD, "q-old"), "kept as it was"
    assert held(engine, "q-new") == alone(layout, NEW, "q-new"), "its start, every batch"
    assert len(stored_rows(engine, "q-new")["batches"]) == 6
    assert position(engine) == (NEW.count("\n"), len(encode(NEW)))

    rerun = Ingests(engine, history, following=False)
    again = rerun.step()
    assert (again.totals.lines, again.totals.rewritten, rerun.said) == (0, 0, [])


@pytest.mark.parametrize("following", [True, False], ids=["following", "run again"])
@pytest.mark.parametrize("layout", TWO_LAYOUTS)
def test_a_log_rewritten_shorter_is_read_again_from_its_start(
    engine, tmp_path, alone, layout, following
):
    history = tmp_path / "history"
    history.mkdir()
    path, encode = LAYOUTS[layout](history)
    path.write_bytes(encode(OLD))
    ingests = Ingests(engine, history, following)
    ingests.step()
    short = LOG_START + query_run("q-new", "r-new", [0], AT + 60_000)
    truncated(path, encode(short))
    assert ingests.step().totals.rewritten == 1
    assert ingests.said == [
        f"{path.as_uri()}: rewritten: it is shorter ({len(encode(short)):,} bytes) than the "
        f"{len(encode(OLD)):,} bytes read; reading it again from its start"
    ]
    assert held(engine, "q-old") == alone(layout, OLD, "q-old")
    assert held(engine, "q-new") == alone(layout, short, "q-new")


@pytest.mark.parametrize("following", [True, False], ids=["following", "run again"])
@pytest.mark.parametrize("layout", TWO_LAYOUTS)
def test_what_a_rewritten_log_repeats_is_stored_once(engine, tmp_path, alone, layout, following):
    """Its run's start and first three batches were stored from the log before: repeats to
    the write path, which change nothing (not the batches, their partitions or the rollups)."""
    history = tmp_path / "history"
    history.mkdir()
    path, encode = LAYOUTS[layout](history)
    path.write_bytes(encode(OLD))
    ingests = Ingests(engine, history, following)
    ingests.step()
    replaced(path, encode(REPEATED))
    ingester = ingests.step()
    assert ingester.totals.rewritten == 1 and len(ingests.said) == 1
    assert held(engine, "q-old") == alone(layout, REPEATED, "q-old")
    assert len(stored_rows(engine, "q-old")["batches"]) == 5


@pytest.mark.parametrize("following", [True, False], ids=["following", "run again"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_log_replaced_by_itself_and_more_is_read_on(engine, tmp_path, alone, layout, following):
    """A fresh copy of the same log, grown, renamed over it (as a tool that copies logs in
    does): what was read is still there, so reading goes on where it was."""
    history = tmp_path / "history"
    history.mkdir()
    path, encode = LAYOUTS[layout](history)
    path.write_bytes(encode(OLD))
    ingests = Ingests(engine, history, following)
    ingests.step()
    replaced(path, encode(OLD_ON))
    ingester = ingests.step()
    assert (ingester.totals.rewritten, ingests.said) == (0, [])
    assert ingester.totals.lines == OLD_ON.count("\n") - (0 if following else OLD.count("\n"))
    assert held(engine, "q-old") == alone(layout, OLD_ON, "q-old")


@pytest.mark.parametrize("layout", TWO_LAYOUTS)
def test_a_position_stored_before_fingerprints_resumes_and_gets_one(
    engine, tmp_path, alone, layout
):
    history = tmp_path / "history"
    history.mkdir()
    path, encode = LAYOUTS[layout](history)
    path.write_bytes(encode(OLD))
    Ingests(engine, history, following=False).step()
    with engine.begin() as connection:  # as migration 0031 leaves a position stored before it
        connection.execute(sa.update(LogPosition).values(fingerprint_bytes=None, fingerprint=None))
    path.write_bytes(encode(OLD_ON))
    again = Ingests(engine, history, following=False)
    assert (again.step().totals.lines, again.said) == (2, [])
    assert held(engine, "q-old") == alone(layout, OLD_ON, "q-old")
    assert position(engine) == (OLD_ON.count("\n"), len(encode(OLD_ON)))
