"""Where `wmon ingest` has read each event log file up to, kept beside the events themselves."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.models import LogPosition


@dataclass(frozen=True)
class ReadPosition:
    """How far one event log file (by its stable key) is read, and the log's clock there."""

    key: str
    url: str
    app_id: str
    bytes_read: int
    lines_read: int
    clock_ms: int | None


def save_position(session: so.Session, position: ReadPosition) -> None:
    """Store `position` in the session's transaction, replacing the file's earlier one."""
    row = session.get(LogPosition, position.key)
    if row is None:
        row = LogPosition(key=position.key)
        session.add(row)
    row.url, row.app_id = position.url, position.app_id
    row.bytes_read, row.lines_read = position.bytes_read, position.lines_read
    row.clock_ms = position.clock_ms


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
                    row.key, row.url, row.app_id, row.bytes_read, row.lines_read, row.clock_ms
                )
    return found
