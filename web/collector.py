"""The HTTP collector: Spark's listener events posted by jobs that cannot reach the store.

`POST /api/ingest` takes one event or a list of them in Spark's own JSON (the event log's
form, named by `"Event"`), as the JVM listener and `monitor.attach(spark, "http://…")` send
them, and stores them through the same write path as the in-process listener. A request is
stored whole or not at all: one bad event is a 400 naming it, and nothing of it is stored.
Spark's events about other things (jobs, stages) are counted as ignored.

Posting needs INGEST_TOKEN as `Authorization: Bearer <token>`. A sender may name itself in
`Wmon-Sender` and say in `Wmon-Dropped` how many events it has dropped so far; both are kept
in the store's `senders` table with the count of events stored from it, which
`GET /api/senders` lists.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so
from flask import Blueprint, current_app, request
from werkzeug.exceptions import UnsupportedMediaType

from monitor.collect.progress import ProgressError
from monitor.collect.spark_events import spark_event
from monitor.events import Event
from monitor.numbers import INT64_MAX, NumberError, shown, whole
from monitor.store.models import Sender
from monitor.store.writes import Written, write_events
from web import db
from web.params import NAME_LENGTH, BadParameter
from web.tokens import require_token

bp = Blueprint("collector", __name__, url_prefix="/api")

MAX_INGEST_BYTES = 16 * 1024 * 1024
MAX_EVENTS = 10_000


def _documents() -> list[Any]:
    """The posted event, or the posted list of events, as decoded JSON."""
    if request.mimetype != "application/json":
        raise UnsupportedMediaType("the body must be JSON, sent as Content-Type: application/json")
    try:
        body = json.loads(request.get_data(cache=False))
    except (ValueError, RecursionError):
        raise BadParameter("the body is not valid JSON (or is nested too deeply)") from None
    documents = body if isinstance(body, list) else [body]
    if len(documents) > MAX_EVENTS:
        raise BadParameter(f"at most {MAX_EVENTS} events per request, not {len(documents)}")
    return documents


def _events(documents: list[Any], now_ms: int) -> tuple[list[Event], int]:
    """Our events from the documents, and how many were Spark events about other things."""
    events: list[Event] = []
    for index, document in enumerate(documents):
        try:
            event = spark_event(document, now_ms)
        except ProgressError as error:
            raise BadParameter(f"event {index}: {error}") from None
        if event is not None:
            events.append(event)
    return events, len(documents) - len(events)


def _sender() -> tuple[str | None, int]:
    """Who posted (Wmon-Sender) and how many events it says it dropped so far (Wmon-Dropped)."""
    name = request.headers.get("Wmon-Sender")
    if name is not None and not (0 < len(name) <= NAME_LENGTH and name.isprintable()):
        raise BadParameter(
            f"Wmon-Sender must be 1 to {NAME_LENGTH} printable characters, not {shown(name)}"
        )
    try:
        dropped = whole(request.headers.get("Wmon-Dropped", "0"), "Wmon-Dropped", 0, INT64_MAX)
    except NumberError as error:
        raise BadParameter(str(error)) from None
    return name, dropped


def note_sender(
    session: so.Session, written: Written, name: str, now_ms: int, dropped: int
) -> None:
    """Count the events stored from sender `name` (a repeat of stored ones is not counted
    again), with the drop count it reported."""
    sender = session.get(Sender, name)
    if sender is None:
        sender = Sender(id=name, first_seen_ms=now_ms, events=0, dropped=0)
        session.add(sender)
    sender.last_seen_ms = now_ms
    sender.events += written.stored
    sender.dropped = max(sender.dropped, dropped)


@bp.post("/ingest")
def ingest() -> dict[str, Any]:
    """Store posted listener events (token needed): `stored` and `ignored` counts."""
    require_token(
        "INGEST_TOKEN",
        "the collector is disabled: the server has no ingest token (set WMON_INGEST_TOKEN)",
    )
    request.max_content_length = MAX_INGEST_BYTES
    now_ms: int = current_app.config["CLOCK"]()
    name, dropped = _sender()
    events, ignored = _events(_documents(), now_ms)
    also = None
    if name is not None:
        also = functools.partial(note_sender, name=name, now_ms=now_ms, dropped=dropped)
    written = write_events(db.engine(), events, current_app.config["TIMEOUTS"], also=also)
    unchanged = written.repeated + written.stale
    return {"stored": written.stored, "ignored": ignored, "unchanged": unchanged}


@bp.get("/senders")
def list_senders() -> dict[str, Any]:
    """Who has posted to the collector, the most recently seen first: events stored from each
    and the events each says it dropped (its queue full while the collector was away)."""
    rows = db.session().scalars(sa.select(Sender).order_by(Sender.last_seen_ms.desc(), Sender.id))
    return {
        "senders": [
            {
                "id": row.id,
                "first_seen_ms": row.first_seen_ms,
                "last_seen_ms": row.last_seen_ms,
                "events": row.events,
                "dropped": row.dropped,
            }
            for row in rows
        ]
    }
