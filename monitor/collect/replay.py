"""Replaying set-aside events once what refused them is mended (`wmon rejected --replay`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.collect.spark_events import spark_event
from monitor.collect.writer import TRANSIENT_ERRORS
from monitor.health.predicates import Timeouts
from monitor.store.schema.engine import error_reason
from monitor.store.schema.models import RejectedEvent
from monitor.store.write.rejected import rejected_by_id
from monitor.store.write.writes import write_events


@dataclasses.dataclass
class Replayed:
    """What a replay did: events stored, repeats of stored ones, and those refused again."""

    stored: int = 0
    unchanged: int = 0
    refused: int = 0


def replay(engine: sa.Engine, ids: Sequence[int] | None, timeouts: Timeouts) -> Replayed:
    """Write the set-aside events with these ids (every one when None), oldest first: each
    one stored leaves the set-aside ones; one refused again stays, with the new reason."""
    with so.Session(engine) as session:
        waiting = [
            (row.id, row.document, row.received_at_ms) for row in rejected_by_id(session, ids)
        ]
    replayed = Replayed()
    for row_id, document, received_at_ms in waiting:
        reason = _write(engine, json.loads(document), received_at_ms, timeouts, replayed)
        with so.Session(engine) as session, session.begin():
            row = session.get_one(RejectedEvent, row_id)
            if reason is None:
                session.delete(row)
            else:
                row.error = reason
                replayed.refused += 1
    return replayed


def _write(
    engine: sa.Engine, document: object, at_ms: int, timeouts: Timeouts, replayed: Replayed
) -> str | None:
    """Write one set-aside event, counting it; why it was refused again, if it was."""
    try:
        event = spark_event(document, at_ms)
        if event is not None:
            written = write_events(engine, [event], timeouts)
            replayed.stored += written.stored
            replayed.unchanged += written.repeated + written.stale
    except TRANSIENT_ERRORS:
        raise
    except Exception as error:
        return error_reason(error)
    return None
