"""Each stateful operator's state over a window of its query's batches, read for many queries
at once (health.state_growth judges it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.health.facts import DEFAULT_WINDOW_MS
from monitor.health.state_growth import (
    SST_SIZE,
    OperatorPoint,
    StateGrowth,
    assess_operator,
    commit_latency_ms,
    rows_in_state,
    snapshot_lag,
)
from monitor.store.read.windows import BatchRow, sampled_rows
from monitor.store.schema.models import StateOperator

# Batches of the window read: state changes slowly, and a trend needs only a few points.
WINDOW_POINTS = 12
MIN_POINTS = 3


def fleet_state(
    session: so.Session, newest: Mapping[str, BatchRow], window_ms: int = DEFAULT_WINDOW_MS
) -> dict[str, tuple[StateGrowth, ...]]:
    """The state of each stateful operator of each query's batch in `newest` over the window
    of `window_ms` before it, by query id, in operator order; two statements for at most
    IN_CHUNK queries."""
    if not newest:
        return {}
    table = StateOperator.__table__
    statement = sampled_rows(session, table, newest, window_ms, WINDOW_POINTS, MIN_POINTS)
    rows: dict[tuple[str, int], list[sa.Row[Any]]] = {}
    for row in session.execute(statement):
        rows.setdefault((row.query_id, row.operator_index), []).append(row)
    found: dict[str, list[StateGrowth]] = {}
    for (query_id, index), history in sorted(rows.items()):
        last = history[-1]
        if last.batch_id != newest[query_id].batch_id:
            continue  # an operator the newest batch no longer has
        points = [_point(row) for row in history]
        custom = last.custom_metrics or {}
        growth = assess_operator(
            index,
            last.operator_name,
            points,
            commit_latency_ms(custom),
            snapshot_lag(custom, last.batch_id),
        )
        found.setdefault(query_id, []).append(growth)
    return {query_id: tuple(growths) for query_id, growths in found.items()}


def _point(row: sa.Row[Any]) -> OperatorPoint:
    store = (row.custom_metrics or {}).get(SST_SIZE)
    return OperatorPoint(
        time_ms=row.batch_time_ms,
        rows=rows_in_state(row.num_rows_total, row.num_rows_updated, row.num_rows_removed),
        memory_bytes=row.memory_used_bytes,
        store_bytes=int(store) if isinstance(store, int | float) else None,
    )
