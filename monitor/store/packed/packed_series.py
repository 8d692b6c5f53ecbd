"""Per-partition series of a range's packed spans (minutes or hours, store.packing), bucket by
bucket: the largest lags and W_p of any span in a bucket, whether any batch in it found the
partition idle or stalled, and the sums of late records and records read.

A day of 64 partitions is 1,440 spans and a year 8,760: they are unpacked into one array per
range and reduced per bucket with numpy, not a Python loop per partition-minute.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from monitor.numbers import INT64_MAX, INT64_MIN
from monitor.store.packed.packing import Packed, unpack

Series = dict[str, list[Any]]

# Each series: the figure it is read from, and how a bucket's spans make one value.
SERIES = (
    ("max_event_time_ms", "max_event_time_ms", "max"),
    ("partition_watermark_ms", "watermark_max_ms", "max"),
    ("time_lag_ms", "time_lag_max_ms", "max"),
    ("offset_lag", "offset_lag_max", "max"),
    ("idle", "idle_batches", "any"),
    ("stalled", "stalled_batches", "any"),
    ("late_records", "late_records", "sum"),
    ("records", "offset_records", "sum"),
)
# Where a sum of 64-bit figures saturates, as the stores' sums do (store.schema.whole_sum);
# sums that might pass it are added up as Python integers.
SATURATED = (INT64_MIN, INT64_MAX)


def bucket_series(
    spans: Iterable[tuple[int, bytes]], figures: Sequence[str], start_of: Any
) -> dict[str, Series]:
    """Per partition, a value of each SERIES per bucket that holds a span of it; `spans` are
    (bucket number, packed figures) in bucket order, `start_of` gives a bucket's start time."""
    names_of: dict[bytes, tuple[str, ...]] = {}
    unpacked = [(bucket, unpack(blob, len(figures), names_of)) for bucket, blob in spans]
    if not unpacked:
        return {}
    names = sorted({name for packed in _distinct(unpacked) for name in packed.names})
    values, present, member = _aligned(unpacked, names, [figures.index(s[1]) for s in SERIES])
    buckets = np.array([bucket for bucket, _ in unpacked], dtype=np.int64)
    firsts = np.flatnonzero(np.r_[True, buckets[1:] != buckets[:-1]])
    in_bucket = np.logical_or.reduceat(member, firsts, axis=0)
    has = np.logical_or.reduceat(present, firsts, axis=0)
    reduced = [
        _reduced(values[:, s], present[:, s], has[:, s], firsts, how)
        for s, (_, _, how) in enumerate(SERIES)
    ]
    times = np.array([start_of(bucket) for bucket in buckets[firsts]], dtype=object)
    found: dict[str, Series] = {}
    for p, name in enumerate(names):
        rows = in_bucket[:, p]
        found[name] = {"time_ms": times[rows].tolist()} | {
            series: column[rows, p].tolist()
            for (series, _, _), column in zip(SERIES, reduced, strict=True)
        }
    return found


def _distinct(unpacked: list[tuple[int, Packed]]) -> list[Packed]:
    seen: dict[tuple[str, ...], Packed] = {}
    for _, packed in unpacked:
        seen.setdefault(packed.names, packed)
    return list(seen.values())


def _aligned(
    unpacked: list[tuple[int, Packed]], names: list[str], wanted: list[int]
) -> tuple[Any, Any, Any]:
    """The spans' wanted figures as arrays [span, series, partition] over all `names`, with
    where each has a value, and [span, partition] where each span holds the partition."""
    every = tuple(names)
    if all(packed.names == every for _, packed in unpacked):
        return (
            np.stack([packed.values[wanted] for _, packed in unpacked]),
            np.stack([packed.present[wanted] for _, packed in unpacked]),
            np.ones((len(unpacked), len(names)), dtype=np.bool_),
        )
    shape = (len(unpacked), len(wanted), len(names))
    values = np.zeros(shape, dtype=np.int64)
    present = np.zeros(shape, dtype=np.bool_)
    member = np.zeros((len(unpacked), len(names)), dtype=np.bool_)
    index = {name: p for p, name in enumerate(names)}
    columns: dict[tuple[str, ...], Any] = {}
    for r, (_, packed) in enumerate(unpacked):
        at = columns.get(packed.names)
        if at is None:
            at = columns[packed.names] = np.array([index[n] for n in packed.names], dtype=np.intp)
        values[r][:, at] = packed.values[wanted]
        present[r][:, at] = packed.present[wanted]
        member[r, at] = True
    return values, present, member


def _reduced(values: Any, present: Any, has: Any, firsts: Any, how: str) -> Any:
    """One series' value per bucket and partition, as Python values in an object array: None
    where no span of the bucket had one (False for the flags)."""
    if how == "sum":
        kept = np.where(present, values, 0)
        if len(kept) and int(np.abs(kept, dtype=np.float64).max()) * len(kept) >= INT64_MAX:
            total = np.clip(np.add.reduceat(kept.astype(object), firsts, axis=0), *SATURATED)
        else:
            total = np.add.reduceat(kept, firsts, axis=0).astype(object)
        return np.where(has, total, np.array(None))
    largest = np.maximum.reduceat(np.where(present, values, INT64_MIN), firsts, axis=0)
    if how == "any":
        return np.where(has, largest > 0, False).astype(object)
    return np.where(has, largest.astype(object), np.array(None))
