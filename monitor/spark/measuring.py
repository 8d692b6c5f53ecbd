"""What the instrumented operator measures, as `instrument()` was asked: the same for both of
its implementations (operator_jvm.py, operator_python.py)."""

from __future__ import annotations

import dataclasses

# The watermark Spark writes for a batch before it has one (1970), so the late watermark of a
# query's first batches. Spark still drops records at or below it, so they are counted late,
# but a distance from 1970 says nothing of how late or how close a record was: the lateness
# histograms leave out the records of a batch measured against it.
NO_WATERMARK_MS = 0


@dataclasses.dataclass(frozen=True)
class Measuring:
    """Which columns hold what, and the thresholds late records are counted by.

    `checkpoint` is the query's checkpoint location (each batch's late threshold is read from
    its offset log); `partition`, `topic`, `key` and `offset` name columns, or are None where
    the rows have none; `window_ms` is the length of the job's event-time windows, if any;
    a record is future-dated when its event time is more than `future_tolerance_ms` ahead of
    its batch's processing time.
    """

    checkpoint: str
    event_time: str
    partition: str | None
    topic: str | None
    key: str | None
    offset: str | None
    delay_ms: int
    window_ms: int | None
    future_tolerance_ms: int


def measured_columns(measuring: Measuring) -> list[str]:
    """The columns the operator reads, those that are named."""
    named = (measuring.event_time, measuring.partition, measuring.topic, measuring.key)
    return [name for name in (*named, measuring.offset) if name is not None]


def check_columns(columns: list[str], measuring: Measuring) -> None:
    """Raise ValueError unless `columns` hold the event time and the partition named."""
    if measuring.event_time not in columns:
        raise ValueError(f"instrument: no event-time column {measuring.event_time!r} in {columns}")
    if measuring.partition is not None and measuring.partition not in columns:
        raise ValueError(
            f"instrument: no partition column {measuring.partition!r} in {columns} "
            "(partition=None measures per Spark input partition)"
        )
