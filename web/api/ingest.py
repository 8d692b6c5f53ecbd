"""The HTTP collector: Spark's listener events posted by jobs that cannot reach the store.

`POST /api/ingest` takes one event or a list of them in Spark's own JSON (the event log's
form, named by `"Event"`), as the JVM listener and `monitor.attach(spark, "http://…")` send
them, and stores them through the same write path as the in-process listener. An event that
cannot be read or stored is refused alone: set aside with why (`wmon rejected`), named in the
answer, and the rest are stored (monitor.collect.accept). Posts that arrive while others are
being written wait and are written together, in one transaction (monitor.collect.group_commit):
fifty senders at once cost the store a few transactions, not fifty that take turns. A body
that is not JSON is a 400; a store that cannot be reached now, a 503 with Retry-After, and
nothing is stored. Spark's events about other things (jobs, stages) are counted as ignored; a
batch already stored, or superseded by a later run, as unchanged. The new queries a sender may
create in an hour are counted by its name and by its address (web.guards.budget).

Posting needs INGEST_TOKEN as `Authorization: Bearer <token>`. A sender may name itself in
`Wmon-Sender` and say in `Wmon-Dropped` how many events it has dropped so far; both are kept
in the store's `senders` table with the counts of events stored from it and refused, which
`GET /api/senders` lists.
"""

from __future__ import annotations

import functools
from typing import Any

import sqlalchemy as sa
from flask import Blueprint, Flask, current_app, request
from werkzeug.exceptions import UnsupportedMediaType

from monitor.collect.documents import decode_events
from monitor.collect.group_commit import GroupCommit
from monitor.numbers import INT64_MAX, NumberError, shown, whole
from monitor.store.schema.models import Sender
from web import db
from web.guards.budget import new_queries
from web.guards.params import NAME_LENGTH, BadParameter
from web.guards.tokens import require_token

bp = Blueprint("collector", __name__, url_prefix="/api")

MAX_INGEST_BYTES = 16 * 1024 * 1024
MAX_EVENTS = 10_000


def init_app(app: Flask) -> None:
    """Give the app the group commit its posts are written through, with TIMEOUTS."""
    app.extensions["wmon.group_commit"] = GroupCommit(
        functools.partial(db.engine, app), app.config["TIMEOUTS"]
    )


def _group_commit(app: Flask) -> GroupCommit:
    found: GroupCommit = app.extensions["wmon.group_commit"]
    return found


def _documents() -> list[Any]:
    """The posted event, or the posted list of events, as decoded JSON."""
    if request.mimetype != "application/json":
        raise UnsupportedMediaType("the body must be JSON, sent as Content-Type: application/json")
    try:
        documents = decode_events(request.get_data(cache=False).decode())
    except ValueError:
        raise BadParameter("the body is not valid JSON") from None
    if len(documents) > MAX_EVENTS:
        raise BadParameter(f"at most {MAX_EVENTS} events per request, not {len(documents)}")
    return documents


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


# How many of the refused events an answer names; all of them are set aside.
ERRORS_NAMED = 10


@bp.post("/ingest")
def ingest() -> tuple[dict[str, Any], int]:
    """Store posted listener events (token needed): 200 with what became of them, or 422 if
    every one was refused; the refused ones are set aside, never to be sent again."""
    require_token(
        "INGEST_TOKEN",
        "the collector is disabled: the server has no ingest token (set WMON_INGEST_TOKEN)",
    )
    request.max_content_length = MAX_INGEST_BYTES
    now_ms: int = current_app.config["CLOCK"]()
    name, dropped = _sender()
    documents = _documents()
    admit = functools.partial(new_queries(current_app).admit, name, request.remote_addr)
    accepted = _group_commit(current_app).accept(
        documents, now_ms, name, None if name is None else dropped, admit
    )
    answer = {
        "stored": accepted.stored,
        "ignored": accepted.ignored,
        "unchanged": accepted.unchanged,
        "rejected": len(accepted.refused),
        "errors": [
            {"event": index, "error": error} for index, error in accepted.refused[:ERRORS_NAMED]
        ],
    }
    return answer, 422 if len(accepted.refused) == len(documents) else 200


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
                "rejected": row.rejected,
            }
            for row in rows
        ]
    }
