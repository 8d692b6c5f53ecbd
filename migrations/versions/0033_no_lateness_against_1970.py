"""The lateness histograms hold no record judged against Spark's 1970 "no watermark yet".

A query's first batches are judged against the placeholder Spark writes before it has a
watermark (a late watermark of 0): a record's distance from 1970, some 56 years (slack bucket
41), says nothing of how late or how close it was. The instrumented operators leave such a
batch out of the histograms since 2026-11-27 (its late records still count, as Spark drops
them); a store written before holds it in the batch's measured partitions, in the running totals
of every later batch of its query, and in the partitions' minutes and hours that hold the
batch. This takes it out of each, so that the store holds what the write path would have
stored. Rollups of a batch judged so that is no longer stored keep it: nothing says which of
their records it was.

Only the measured partitions of batches that may have been judged against 0 are read: those
whose batch before is not stored with a watermark (the write path stores the placeholder as
none, migration 0015). Packed values are read and written in store.packing's layout of
version 1, written out again here (the cells in a JSON header, the numbers after it, which are
left as they are). A downgrade leaves the histograms as they are: what went meant nothing.

Revision ID: 0033
Revises: 0032
Create Date: 2026-12-07 04:00:00.000000
"""

import json
import struct
import sys
import time
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0033"
down_revision: str | None = "0032"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PROGRESS_EVERY_S = 5.0
READ_EVERY = 500
VERSION = 1
NO_WATERMARK_MS = 0
# The numbers of a packed measured partition, in their order, and which holds its late
# watermark; where its name and its histograms are among its cells.
NUMBERS = 13
LATE_WATERMARK = 6
NAME, LATE, SLACK, LATE_TOTAL, SLACK_TOTAL = 0, 4, 5, 6, 7
# The partitions' rollups: each tier's table, the column its spans start at, and their width.
TIERS = (("partition_minutes", "minute_ms", 60_000), ("partition_hours", "hour_ms", 3_600_000))

Histogram = dict[str, int]
# What a batch's partitions held that is taken out: (late, slack) by partition name.
Taken = dict[str, tuple[Histogram, Histogram]]


def _opened(blob: bytes) -> tuple[list[list[Any]], bytes]:
    """A packed value's rows of cells, and the numbers after them as they are."""
    data = zlib.decompress(blob)
    if data[0] != VERSION:
        raise ValueError(f"packed figures of version {data[0]}, not {VERSION}")
    (length,) = struct.unpack_from("<I", data, 1)
    return json.loads(data[5 : 5 + length]), data[5 + length :]


def _closed(rows: list[list[Any]], numbers: bytes) -> bytes:
    """What _opened opened, packed again."""
    header = json.dumps(rows, separators=(",", ":")).encode()
    return zlib.compress(bytes([VERSION]) + struct.pack("<I", len(header)) + header + numbers)


def _late_watermark(numbers: bytes, rows: int, row: int) -> int | None:
    """A packed row's late watermark: its presence bit, then its eight byte-shuffled bytes."""
    count, index = NUMBERS * rows, LATE_WATERMARK * rows + row
    if not numbers[index // 8] & (0x80 >> (index % 8)):
        return None
    values = numbers[(count + 7) // 8 :]
    return int(struct.unpack("<q", bytes(values[byte * count + index] for byte in range(8)))[0])


def _less(total: Histogram | None, part: Histogram) -> Histogram | None:
    """`total` without the records of `part`, buckets left empty left out."""
    if total is None:
        return None
    left = {number: count - part.get(number, 0) for number, count in total.items()}
    return {number: count for number, count in left.items() if count > 0}


def _added(one: Histogram, other: Histogram) -> Histogram:
    """The two histograms added up, bucket by bucket."""
    return {number: one.get(number, 0) + other.get(number, 0) for number in {*one, *other}}


def _plus(taken: Taken, more: Taken) -> None:
    """Add `more` to what `taken` holds, partition by partition."""
    for name, (late, slack) in more.items():
        was_late, was_slack = taken.get(name, ({}, {}))
        taken[name] = (_added(was_late, late), _added(was_slack, slack))


def _judged_against_1970(connection: sa.Connection) -> dict[str, dict[int, tuple[int, Taken]]]:
    """By query and batch: the batch's time and the histograms of its measured partitions
    judged against the placeholder."""
    rows = connection.execute(
        sa.text(
            "SELECT query_id, batch_id, batch_time_ms, partitions FROM batch_event_times AS t "
            "WHERE NOT EXISTS (SELECT 1 FROM batches WHERE batches.query_id = t.query_id "
            "AND batches.batch_id = t.batch_id - 1 AND batches.watermark_ms IS NOT NULL)"
        ).execution_options(yield_per=1_000)
    )
    found: dict[str, dict[int, tuple[int, Taken]]] = {}
    for query_id, batch_id, batch_time_ms, blob in rows:
        cells, numbers = _opened(blob)
        taken = {
            row[NAME]: (row[LATE] or {}, row[SLACK] or {})
            for index, row in enumerate(cells)
            if (row[LATE] or row[SLACK])
            and _late_watermark(numbers, len(cells), index) == NO_WATERMARK_MS
        }
        if taken:
            found.setdefault(query_id, {})[batch_id] = (batch_time_ms, taken)
    return found


def _clean_event_times(
    connection: sa.Connection, query_id: str, judged: dict[int, tuple[int, Taken]]
) -> int:
    """Empty the judged partitions' histograms and take them out of the running totals of
    their batch and every later one; how many batches were written again."""
    taken: Taken = {}
    written = 0
    for batch_id, blob in _event_times_from(connection, query_id, min(judged)):
        written += 1
        cells, numbers = _opened(blob)
        if batch_id in judged:
            _plus(taken, judged[batch_id][1])
            for row in cells:
                if row[NAME] in judged[batch_id][1]:
                    row[LATE], row[SLACK] = {}, {}
        for row in cells:
            if row[NAME] in taken:
                late, slack = taken[row[NAME]]
                row[LATE_TOTAL] = _less(row[LATE_TOTAL], late)
                row[SLACK_TOTAL] = _less(row[SLACK_TOTAL], slack)
        connection.execute(
            sa.text(
                "UPDATE batch_event_times SET partitions = :partitions "
                "WHERE query_id = :query AND batch_id = :batch"
            ),
            {"partitions": _closed(cells, numbers), "query": query_id, "batch": batch_id},
        )
    return written


def _event_times_from(
    connection: sa.Connection, query_id: str, first: int
) -> Iterator[tuple[int, bytes]]:
    """The query's batch_event_times rows from batch `first` on, in order, READ_EVERY at a time
    (each read after the rows before it were written again)."""
    while True:
        rows = connection.execute(
            sa.text(
                "SELECT batch_id, partitions FROM batch_event_times "
                "WHERE query_id = :query AND batch_id >= :first ORDER BY batch_id LIMIT :count"
            ),
            {"query": query_id, "first": first, "count": READ_EVERY},
        ).all()
        yield from ((batch_id, blob) for batch_id, blob in rows)
        if len(rows) < READ_EVERY:
            return
        first = rows[-1][0] + 1


def _clean_rollups(
    connection: sa.Connection, query_id: str, judged: dict[int, tuple[int, Taken]]
) -> None:
    """Take the judged partitions' histograms out of the minutes and hours that hold them."""
    for table, start, width_ms in TIERS:
        spans: dict[int, Taken] = {}
        for batch_time_ms, taken in judged.values():
            _plus(spans.setdefault(batch_time_ms - batch_time_ms % width_ms, {}), taken)
        for span_ms, taken in sorted(spans.items()):
            where = f"WHERE query_id = :query AND {start} = :span"
            keys = {"query": query_id, "span": span_ms}
            blob = connection.scalar(sa.text(f"SELECT histograms FROM {table} {where}"), keys)
            if blob is None:
                continue
            histograms = json.loads(zlib.decompress(blob))
            for name, (late, slack) in taken.items():
                if name in histograms:
                    was_late, was_slack = histograms[name]
                    histograms[name] = [_less(was_late, late), _less(was_slack, slack)]
            packed = zlib.compress(json.dumps(histograms, separators=(",", ":")).encode())
            connection.execute(
                sa.text(f"UPDATE {table} SET histograms = :histograms {where}"),
                keys | {"histograms": packed},
            )


def upgrade() -> None:
    connection = op.get_bind()
    started = shown = time.monotonic()
    judged = _judged_against_1970(connection)
    written = 0
    for query_id, batches in sorted(judged.items()):
        written += _clean_event_times(connection, query_id, batches)
        _clean_rollups(connection, query_id, batches)
        if time.monotonic() - shown >= PROGRESS_EVERY_S:
            shown = time.monotonic()
            print(
                f"0033: {written:,} batches' histograms cleaned in {shown - started:.0f} s",
                file=sys.stderr,
            )


def downgrade() -> None:
    pass
