"""Where `wmon ingest` has read each event log file up to, and which runs each application's
log showed running, kept beside the events themselves so that a new ingest process resumes
with both."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.schema.models import LogPosition, Run


@dataclass(frozen=True)
class ReadPosition:
    """How far one event log file (by its stable key) is read, and the log's clock there; the
    stored bytes read, and the digest that knows them by their content (none in positions
    stored before there were any)."""

    key: str
    url: str
    app_id: str
    bytes_read: int
    lines_read: int
    clock_ms: int | None
    fingerprint_bytes: int | None = None
    fingerprint: str | None = None


def save_position(session: so.Session, position: ReadPosition, runs: Iterable[str] = ()) -> None:
    """Store `position` in the session's transaction, replacing the file's earlier one; the
    `runs` read up to it are the application's."""
    ids = sorted(set(runs))
    for start in range(0, len(ids), 500):
        session.execute(
            sa.update(Run)
            .where(Run.run_id.in_(ids[start : start + 500]), Run.app_id.is_(None))
            .values(app_id=position.app_id)
        )
    row = session.get(LogPosition, position.key)
    if row is None:
        row = LogPosition(key=position.key)
        session.add(row)
    row.url, row.app_id = position.url, position.app_id
    row.bytes_read, row.lines_read = position.bytes_read, position.lines_read
    row.clock_ms = position.clock_ms
    row.fingerprint_bytes, row.fingerprint = position.fingerprint_bytes, position.fingerprint


def stored_positions(engine: sa.Engine, keys: Iterable[str]) -> dict[str, ReadPosition]:
    """The stored positions of the files with these keys; files never read are absent."""
    wanted = list(keys)
    found: dict[str, ReadPosition] = {}
    with so.Session(engine) as session:
        for start in range(0, len(wanted), 500):
            rows = session.scalars(
                sa.select(LogPosition).where(LogPosition.key.in_(wanted[start : start + 500]))
            )
            for row in rows:
                found[row.key] = ReadPosition(
                    row.key,
                    row.url,
                    row.app_id,
                    row.bytes_read,
                    row.lines_read,
                    row.clock_ms,
                    row.fingerprint_bytes,
                    row.fingerprint,
                )
    return found


def running_runs(engine: sa.Engine, app_id: str) -> dict[str, str]:
    """The runs an application's log showed and the store has no end of: run id -> query id."""
    with so.Session(engine) as session:
        rows = session.execute(
            sa.select(Run.run_id, Run.query_id).where(
                Run.app_id == app_id, Run.terminated_at_ms.is_(None)
            )
        )
        return {run_id: query_id for run_id, query_id in rows}
