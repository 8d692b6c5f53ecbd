"""A batch stored after later batches of its run: their running figures take it in.

Each partition of a batch carries figures summed or maxed over every batch so far (read, late
and future-dated records, the lateness histograms, the max event time and the record at it),
so any range is read from two batches. The later batches were stored without the late batch;
this adds its own figures to theirs, as if it had arrived in order, and packs them again
(store.batch_event_times).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.health.lateness import summed
from monitor.store import batch_event_times
from monitor.store.batch_event_times import TABLE
from monitor.store.models import BatchEventTimes

Row = dict[str, Any]


def carry_into_later(
    session: so.Session,
    query_id: str,
    batch_id: int,
    time_rows: list[Row],
    removed: Sequence[Row] = (),
) -> None:
    """Add the figures of batch `batch_id`'s partition rows to the query's later batches, and
    take out those of the `removed` rows (batches it superseded) that the later ones had
    taken in."""
    measured = {row["partition"]: row for row in time_rows if row["records"]}
    if not measured and not removed:
        return
    later: dict[int, list[Row]] = {}
    statement = sa.select(TABLE).where(TABLE.c.query_id == query_id, TABLE.c.batch_id > batch_id)
    for partition in batch_event_times.partitions_in(session, statement):
        later.setdefault(partition.batch_id, []).append(partition._asdict())
    for rows in later.values():
        for row in rows:
            for gone in removed:
                if gone["partition"] == row["partition"] and gone["batch_id"] < row["batch_id"]:
                    _take_out(row, gone)
            if row["partition"] in measured:
                _take_in(row, measured[row["partition"]], batch_id)
        [stored] = batch_event_times.packed(rows)
        session.execute(
            sa.update(BatchEventTimes)
            .where(
                BatchEventTimes.query_id == query_id,
                BatchEventTimes.batch_id == stored["batch_id"],
            )
            .values(
                partitions=stored["partitions"],
                late_records=stored["late_records"],
                future_records=stored["future_records"],
            )
        )


def _take_out(row: Row, gone: Row) -> None:
    """One later row without a superseded batch's additive figures for the same partition
    (a max cannot be taken back: the run that replaced it read the same records)."""
    for figure in ("records", "late_records", "future_records"):
        row[f"{figure}_total"] -= gone[figure]
    row["late_buckets_total"] = _less(row["late_buckets_total"] or {}, gone["late_buckets"] or {})
    row["slack_buckets_total"] = _less(
        row["slack_buckets_total"] or {}, gone["slack_buckets"] or {}
    )


def _less(total: dict[str, int], part: dict[str, int]) -> dict[str, int]:
    """A histogram less another, bucket by bucket; empty buckets left out."""
    left = {bucket: count - part.get(bucket, 0) for bucket, count in total.items()}
    return {bucket: count for bucket, count in left.items() if count > 0}


def _take_in(row: Row, late: Row, batch_id: int) -> None:
    """One later row with the late batch's figures for the same partition added."""
    for figure in ("records", "late_records", "future_records"):
        row[f"{figure}_total"] += late[figure]
    row["late_buckets_total"] = summed([row["late_buckets_total"] or {}, late["late_buckets"]])
    row["slack_buckets_total"] = summed([row["slack_buckets_total"] or {}, late["slack_buckets"]])
    top = late["max_event_ms"]
    if top is None:
        return
    reached = row["max_event_time_ms"]
    # The late batch read its max before this row's batch did: on a tie it was first.
    if reached is None or top > reached or (top == reached and _first(batch_id, row)):
        row["max_event_time_ms"] = top
        row["max_event_time_record"] = late["max_event_time_record"]
        row["max_event_time_batch"] = batch_id


def _first(batch_id: int, row: Row) -> bool:
    return row["max_event_time_batch"] is None or batch_id < row["max_event_time_batch"]
