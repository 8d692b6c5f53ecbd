"""Events the write path refused as invalid, set aside with why: listed, counted, replayed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.schema.models import RejectedEvent


def set_aside(
    session: so.Session, at_ms: int, origin: str | None, refused: Sequence[tuple[Any, str]]
) -> None:
    """Keep each (document, error) refused, received at `at_ms` from `origin`."""
    session.add_all(
        RejectedEvent(
            received_at_ms=at_ms,
            origin=origin,
            error=error,
            document=json.dumps(document, ensure_ascii=True),
        )
        for document, error in refused
    )


def list_rejected(session: so.Session, limit: int) -> Sequence[RejectedEvent]:
    """The `limit` most recently refused events, newest first."""
    return session.scalars(
        sa.select(RejectedEvent).order_by(RejectedEvent.id.desc()).limit(limit)
    ).all()


def count_rejected(session: so.Session) -> int:
    """How many refused events are set aside."""
    return session.scalar(sa.select(sa.func.count()).select_from(RejectedEvent)) or 0


def rejected_by_id(session: so.Session, ids: Sequence[int] | None) -> Sequence[RejectedEvent]:
    """The set-aside events with these ids (every one when None), oldest first."""
    select = sa.select(RejectedEvent).order_by(RejectedEvent.id)
    if ids is not None:
        select = select.where(RejectedEvent.id.in_(ids))
    return session.scalars(select).all()
