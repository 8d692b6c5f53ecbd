"""Each query's batches over a window against its run's trigger, read for many queries at once
(health.trigger_pace judges them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.health.facts import DEFAULT_WINDOW_MS
from monitor.health.trigger_pace import MIN_BATCHES, BatchTiming, TriggerPace, assess, timing
from monitor.store.read.windows import BatchRow, sampled_rows
from monitor.store.schema.models import Batch, Run
from monitor.store.schema.sql import among

# Batches of the window read: a median and two halves' means need only a few.
WINDOW_POINTS = 12


class NewestBatch(BatchRow, Protocol):
    """A query's newest batch, as a window ends at it: of which run."""

    run_id: str


def fleet_pace(
    session: so.Session, newest: Mapping[str, NewestBatch], window_ms: int = DEFAULT_WINDOW_MS
) -> dict[str, TriggerPace]:
    """The pace of each query's batches of its newest batch's run over the window of
    `window_ms` before that batch, by query id; three statements for at most IN_CHUNK
    queries."""
    if not newest:
        return {}
    runs = {batch.run_id for batch in newest.values()}
    triggers = {
        row.run_id: (row.trigger, row.trigger_interval_ms)
        for row in session.execute(
            sa.select(Run.run_id, Run.trigger, Run.trigger_interval_ms).where(
                among(Run.run_id, sorted(runs))
            )
        )
    }
    table = Batch.__table__
    found: dict[str, list[BatchTiming]] = {}
    statement = sampled_rows(session, table, newest, window_ms, WINDOW_POINTS, MIN_BATCHES)
    for row in session.execute(statement):
        if row.run_id == newest[row.query_id].run_id:  # a restart may have changed the trigger
            found.setdefault(row.query_id, []).append(timing(row.batch_time_ms, row.durations_ms))
    return {
        query_id: assess(*triggers.get(batch.run_id, (None, None)), found.get(query_id, []))
        for query_id, batch in newest.items()
    }
