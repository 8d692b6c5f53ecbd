"""Who posts to the collector, and what became of their events: a row per sender.

A sender names itself (`Wmon-Sender`) and says how many events it has dropped so far; its
row counts the events stored from it and those refused. The collector writes many posts in
one transaction (collect.group_commit), so their counts are taken in together: one read of
their senders' rows, one flush of what changed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.schema.models import Sender
from monitor.store.schema.sql import chunks


@dataclasses.dataclass(frozen=True)
class SenderPost:
    """One post from sender `name`, received at `at_ms`: its events stored (a repeat of
    stored ones is not counted again) and refused, and the drop count it reported."""

    name: str
    at_ms: int
    stored: int
    rejected: int
    dropped: int


def count_posts(session: so.Session, posts: Sequence[SenderPost]) -> None:
    """Add each post to its sender's row, in order, making the rows of new senders."""
    names = sorted({post.name for post in posts})
    rows = {
        row.id: row
        for chunk in chunks(names)
        for row in session.scalars(sa.select(Sender).where(Sender.id.in_(chunk)))
    }
    for post in posts:
        row = rows.get(post.name)
        if row is None:
            row = Sender(id=post.name, first_seen_ms=post.at_ms, events=0, dropped=0, rejected=0)
            rows[post.name] = row
            session.add(row)
        row.last_seen_ms = post.at_ms
        row.events += post.stored
        row.rejected += post.rejected
        row.dropped = max(row.dropped, post.dropped)
