"""State that grows: each stateful operator's rows, memory and state store over a window of
batches, and whether it keeps growing — small pure functions over what Spark reports per batch.

Spark reports per batch and operator the rows in its state (`numRowsTotal`), the memory its
state stores use (`memoryUsedBytes`) and, for the RocksDB state store, custom metrics: the size
of its SST files (`rocksdbSstFileSize`), the latencies of its commit's steps
(`rocksdbCommit…Latency`) and, per state store partition, the version of the last snapshot it
uploaded (`SnapshotLastUploaded.partition_N_…`): the *snapshot lag* is how many versions the
oldest of them is behind the batch's (a state store's version is its batch id + 1).

With `spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows=false`, RocksDB does not
count its rows and `numRowsTotal` is 0 however many there are: a total of 0 in a batch that put
more rows in than it took out is *unknown*, not empty. An operator's state *grows* when its rows
(or, where they are unknown, its SST files' size) never fell over the window and ended higher:
while the query's watermark is stalled nothing is evicted, and that is the road to an
out-of-memory failure (the alert rule `state_growing`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from monitor.health.backlog import slope

SST_SIZE = "rocksdbSstFileSize"
COMMIT_LATENCY_PREFIX = "rocksdbCommit"
SNAPSHOT_PREFIX = "SnapshotLastUploaded."


def rows_in_state(total: int | None, updated: int | None, removed: int | None) -> int | None:
    """The rows in an operator's state, None when Spark did not count them: a total of 0 from
    a batch that put more rows in than it took out."""
    if total == 0 and (updated or 0) > (removed or 0):
        return None
    return total


def commit_latency_ms(custom: Mapping[str, Any]) -> int | None:
    """The RocksDB commit's steps' latencies summed (flush, compaction, checkpoint, …), in ms;
    None for another state store."""
    steps = [
        int(value)
        for name, value in custom.items()
        if name.startswith(COMMIT_LATENCY_PREFIX) and isinstance(value, int | float)
    ]
    return sum(steps) if steps else None


def snapshot_lag(custom: Mapping[str, Any], batch_id: int) -> int | None:
    """How many versions the state store partition with the oldest uploaded snapshot is behind
    the batch's version; None when no snapshot is reported (or none was uploaded yet)."""
    uploaded = [
        int(value)
        for name, value in custom.items()
        if name.startswith(SNAPSHOT_PREFIX) and isinstance(value, int | float) and value >= 0
    ]
    return batch_id + 1 - min(uploaded) if uploaded else None


@dataclass(frozen=True, slots=True)
class OperatorPoint:
    """A stateful operator at one batch."""

    time_ms: int
    rows: int | None
    memory_bytes: int | None
    store_bytes: int | None


@dataclass(frozen=True)
class StateGrowth:
    """An operator's state at the newest batch and over the window: its rows (None: not
    counted), memory and SST files' size, how fast its rows (or, uncounted, its store's bytes)
    grew a second, its commit's latency and snapshot lag, and whether it keeps growing."""

    operator_index: int
    operator: str | None
    rows: int | None
    memory_bytes: int | None
    store_bytes: int | None
    rows_per_second: float | None
    store_bytes_per_second: float | None
    commit_latency_ms: int | None
    snapshot_lag: int | None
    growing: bool


def _rate(times: Sequence[int], values: Sequence[int | None]) -> float | None:
    known = [(t, v) for t, v in zip(times, values, strict=True) if v is not None]
    if len(known) < 2:
        return None
    return slope([t for t, _ in known], [v for _, v in known])


def _grows(values: Sequence[int | None]) -> bool:
    """Never fell and ended higher, over at least two known values."""
    known = [v for v in values if v is not None]
    return (
        len(known) >= 2
        and known[-1] > known[0]
        and all(later >= earlier for earlier, later in pairwise(known))
    )


def assess_operator(
    index: int,
    name: str | None,
    points: Sequence[OperatorPoint],
    commit_ms: int | None,
    lag: int | None,
) -> StateGrowth:
    """An operator's state from its points over the window, the newest last; `commit_ms` and
    `lag`, the newest batch's commit latency and snapshot lag."""
    newest = points[-1]
    times = [p.time_ms for p in points]
    rows = [p.rows for p in points]
    store = [p.store_bytes for p in points]
    counted = newest.rows is not None
    return StateGrowth(
        operator_index=index,
        operator=name,
        rows=newest.rows,
        memory_bytes=newest.memory_bytes,
        store_bytes=newest.store_bytes,
        rows_per_second=_rate(times, rows) if counted else None,
        store_bytes_per_second=_rate(times, store),
        commit_latency_ms=commit_ms,
        snapshot_lag=lag,
        growing=_grows(rows) if counted else _grows(store),
    )


def growing_while_stalled(
    operators: Sequence[StateGrowth], watermark_stalled: bool
) -> list[StateGrowth]:
    """The operators whose state keeps growing while the query's watermark is stalled."""
    return [op for op in operators if op.growing] if watermark_stalled else []


def state_fields(growth: StateGrowth) -> dict[str, Any]:
    """An operator's state as the API gives it."""
    return {
        "operator_index": growth.operator_index,
        "operator": growth.operator,
        "rows": growth.rows,
        "memory_bytes": growth.memory_bytes,
        "store_bytes": growth.store_bytes,
        "rows_per_second": growth.rows_per_second,
        "store_bytes_per_second": growth.store_bytes_per_second,
        "commit_latency_ms": growth.commit_latency_ms,
        "snapshot_lag": growth.snapshot_lag,
        "growing": growth.growing,
    }
