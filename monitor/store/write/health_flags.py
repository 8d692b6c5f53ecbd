"""Derive health as a batch is stored, from its rows and the rows of the batch before it (and,
when it supersedes stored batches, of the newest of them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from monitor.health import predicates as health
from monitor.health.predicates import Timeouts

# Rows are column dicts: those about to be stored, and those of the batch before, as stored.
Row = dict[str, Any]


def _progress(row: Row | None) -> health.Progress | None:
    if row is None or row["last_arrival_ms"] is None or row["last_advance_ms"] is None:
        return None
    return health.Progress(
        row["end_offset"], row["latest_offset"], row["last_arrival_ms"], row["last_advance_ms"]
    )


def partitions(rows: list[Row], before: Mapping[tuple[int, str], Row], timeouts: Timeouts) -> None:
    """Mark each partition row idle, stalled or rewound, carrying arrival and advance times."""
    for row in rows:
        previous = _progress(before.get((row["source_index"], row["partition"])))
        now = row["batch_time_ms"]
        state = health.advance(previous, row["end_offset"], row["latest_offset"], now)
        row["last_arrival_ms"], row["last_advance_ms"] = (
            state.last_arrival_ms,
            state.last_advance_ms,
        )
        row["idle"] = health.is_idle(state, now, timeouts)
        row["stalled"] = health.is_stalled(state, now, timeouts)
        row["rewound"] = health.is_rewound(previous, row["end_offset"])


def query_watermark(
    batch: Row, before: Row | None, partition_rows: list[Row], timeouts: Timeouts
) -> None:
    """Mark the query's watermark stalled or rewound, carrying when it last advanced."""
    watermark, now = batch["watermark_ms"], batch["batch_time_ms"]
    previous = None if before is None else before["watermark_ms"]
    if watermark is None:
        batch["watermark_advanced_at_ms"] = None
    elif before is None or previous is None or watermark > previous:
        batch["watermark_advanced_at_ms"] = now
    else:
        batch["watermark_advanced_at_ms"] = before["watermark_advanced_at_ms"] or now
    waiting = bool(batch["num_input_rows"]) or any(r["offset_lag"] for r in partition_rows)
    advanced_at = batch["watermark_advanced_at_ms"]
    batch["watermark_stalled"] = (
        waiting and advanced_at is not None and now - advanced_at >= timeouts.stall_ms
    )
    batch["watermark_rewound"] = (
        watermark is not None and previous is not None and watermark < previous
    )


def watermark_driver(batch: Row, before: Mapping[str, Row]) -> None:
    """Name the partition and record whose event time set the batch's watermark: the largest
    read before it (Spark's watermark is that, less the delay). Of partitions that share it,
    the one that read it first; in the same batch (or in rows stored before that was kept),
    the first by name. Unknown where no partition's figures were measured."""
    known = [row for row in before.values() if row["max_event_time_ms"] is not None]
    top = min(known, key=_driving_order, default=None)
    batch["watermark_driver_partition"] = None if top is None else top["partition"]
    batch["watermark_driver_record"] = None if top is None else top["max_event_time_record"]


def _driving_order(row: Row) -> tuple[int, bool, int, str]:
    """Largest max event time first, then the batch that first read it (unknown last), then
    the partition's name."""
    reached = row["max_event_time_batch"]
    return (-row["max_event_time_ms"], reached is None, reached or 0, row["partition"])


def restored(
    batch: Row,
    partition_rows: list[Row],
    newest: Row | None,
    newest_partitions: Mapping[tuple[int, str], Row],
) -> None:
    """Mark rewound what a batch starts before the newest batch it supersedes: a restore from
    an older checkpoint. A replay of that batch itself starts where it did, and is not."""
    if newest is None:
        return
    for row in partition_rows:
        reached = newest_partitions.get((row["source_index"], row["partition"]))
        start, reached_start = row["start_offset"], reached and reached["start_offset"]
        if start is not None and reached_start is not None and start < reached_start:
            row["rewound"] = True
    watermark, reached_watermark = batch["watermark_ms"], newest["watermark_ms"]
    if watermark is not None and reached_watermark is not None and watermark < reached_watermark:
        batch["watermark_rewound"] = True


def event_times(batch: Row, time_rows: list[Row], partition_rows: list[Row]) -> None:
    """Skew over the non-idle partitions and the watermark's driver, Flink's watermark over
    the non-idle ones; each partition's time lag."""
    idle = {r["partition"] for r in partition_rows if r["idle"]}
    watermarks = {r["partition"]: r["partition_watermark_ms"] for r in time_rows}
    driver = batch["watermark_driver_partition"]
    batch["watermark_skew_ms"] = health.skew_between(watermarks, idle, driver)
    batch["flink_watermark_ms"] = health.flink_watermark(watermarks, idle)
    for row in time_rows:
        newest = row["max_event_time_ms"]
        row["time_lag_ms"] = None if newest is None else batch["batch_time_ms"] - newest
