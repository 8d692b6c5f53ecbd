"""A batch stored after later batches of its run: their running figures take it in.

Each partition of a batch carries figures summed or maxed over every batch so far (read, late
and future-dated records, the lateness histograms, the max event time and the record at it),
so any range is read from two batches. The later batches were stored without the late batch;
this adds its own figures to theirs, as if it had arrived in order, and packs them again
(store.batch_event_times). Each later batch's watermark driver, named from the running figures
before it, is then named again from them as they now are (and its skew, which counts the
driver's partition idle or not).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.health import predicates as health
from monitor.health.lateness import summed
from monitor.store.packed import batch_event_times, batch_offsets
from monitor.store.packed.batch_event_times import TABLE
from monitor.store.schema.models import Batch, BatchEventTimes
from monitor.store.write import health_flags

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


def drive_later(session: so.Session, query_id: str, batch_id: int, time_rows: list[Row]) -> None:
    """Name again the watermark driver of the query's batches after `batch_id`, each from the
    newest running figures before it (batch `batch_id`'s `time_rows`, or a later batch's as
    carry_into_later left them), and their skew where the driver changed."""
    if not time_rows:
        return
    measured = {batch_id: time_rows}
    statement = sa.select(TABLE).where(TABLE.c.query_id == query_id, TABLE.c.batch_id > batch_id)
    for partition in batch_event_times.partitions_in(session, statement):
        measured.setdefault(partition.batch_id, []).append(partition._asdict())
    later = session.execute(
        sa.select(Batch.batch_id, Batch.watermark_driver_partition, Batch.watermark_driver_record)
        .where(Batch.query_id == query_id, Batch.batch_id > batch_id)
        .order_by(Batch.batch_id)
    ).all()
    for stored in later:
        before = max(measured_id for measured_id in measured if measured_id < stored.batch_id)
        named: Row = {}
        health_flags.watermark_driver(named, {row["partition"]: row for row in measured[before]})
        driver = (named["watermark_driver_partition"], named["watermark_driver_record"])
        if driver != (stored.watermark_driver_partition, stored.watermark_driver_record):
            named["watermark_skew_ms"] = _skew(
                session, query_id, stored.batch_id, measured, driver[0]
            )
            session.execute(
                sa.update(Batch)
                .where(Batch.query_id == query_id, Batch.batch_id == stored.batch_id)
                .values(named)
            )


def _skew(
    session: so.Session,
    query_id: str,
    batch_id: int,
    measured: dict[int, list[Row]],
    driver: str | None,
) -> int | None:
    """A batch's skew with `driver` as its watermark's driver."""
    watermarks = {
        row["partition"]: row["partition_watermark_ms"] for row in measured.get(batch_id, [])
    }
    idle = {p.partition for p in batch_offsets.of_batches(session, query_id, [batch_id]) if p.idle}
    return health.skew_between(watermarks, idle, driver)


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
