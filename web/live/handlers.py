"""The live push's Socket.IO events: connecting, subscribing to a query, the overview or the
alerts (each after its catch-up), unsubscribing and disconnecting."""

from __future__ import annotations

from typing import Any

import sqlalchemy.orm as so
from flask import Flask, current_app, request
from flask_socketio import ConnectionRefusedError as ConnectionRefused

from monitor.numbers import json_whole
from monitor.store.read.queries import find_query, list_queries
from web import db
from web.api.alerts import silences_in_force
from web.api.payloads import Summarizer, overview
from web.guards.hosts import is_trusted
from web.live.socket_events import ALERTS_ROOM, OVERVIEW_ROOM, QUERY_ROOM_PREFIX, room
from web.live.watching import Watcher
from web.sockets import (
    OverLimit,
    acknowledged,
    connection_id,
    socketio,
    subscribe_limit,
    take_turn,
)

MAX_QUERY_ROOMS = 20


def init_app(app: Flask) -> None:
    """Give the app its watcher; it starts with the first Socket.IO connection."""
    app.extensions["wmon.live"] = Watcher(app)


def watcher(app: Flask | None = None) -> Watcher:
    """The app's watcher."""
    found: Watcher = (app or current_app).extensions["wmon.live"]
    return found


@socketio.on("connect")
def connected(_auth: Any = None) -> None:
    """Refuse a connection for a name this server does not answer to (web.guards.hosts); start
    watching the store when the first browser connects."""
    if not is_trusted(request.environ.get("HTTP_HOST", ""), current_app.config["ALLOWED_HOSTS"]):
        raise ConnectionRefused("this server does not answer to that host name")
    watcher().start()


@socketio.on("disconnect")
def disconnected(_reason: Any = None) -> None:
    """Forget what was kept about the connection."""
    watcher().forget(connection_id())
    subscribe_limit().forget(connection_id())


def _subscription(data: Any) -> tuple[str, int | None]:
    if not isinstance(data, dict) or not isinstance(data.get("query"), str):
        raise ValueError('subscribe needs {"query": "<id or name>", "after_batch": <n> | null}')
    after = data.get("after_batch")
    return data["query"], None if after is None else json_whole(after, "after_batch")


def _check_rooms(query_id: str) -> None:
    limit = current_app.config.get("MAX_QUERY_ROOMS", MAX_QUERY_ROOMS)
    joined = [
        name for name in watcher().rooms_of(connection_id()) if name.startswith(QUERY_ROOM_PREFIX)
    ]
    if room(query_id) not in joined and len(joined) >= limit:
        raise OverLimit(f"at most {limit} query rooms per connection: unsubscribe from one first")


@socketio.on("subscribe")
@acknowledged
def subscribe(data: Any) -> dict[str, Any]:
    """Join a query's room, after receiving the batches stored after `after_batch`."""
    take_turn()
    ref, after_batch = _subscription(data)
    with so.Session(db.engine()) as session:
        query_id = find_query(session, ref).id
    _check_rooms(query_id)
    live = watcher()
    with live.joining(connection_id(), room(query_id)) as joining:
        caught_up, complete = live.catch_up(joining, query_id, after_batch)
    return {"query": query_id, "caught_up": caught_up, "complete": complete}


@socketio.on("unsubscribe")
def unsubscribe(data: Any) -> None:
    """Leave a query's room."""
    if isinstance(data, dict) and isinstance(data.get("query"), str):
        watcher().leave(connection_id(), room(data["query"]))


@socketio.on("subscribe_overview")
@acknowledged
def subscribe_overview(_data: Any = None) -> dict[str, Any]:
    """Join the overview room, after receiving every query's entry."""
    take_turn()
    with watcher().joining(connection_id(), OVERVIEW_ROOM) as joining:
        with so.Session(db.engine()) as session:
            entries = overview(session, list_queries(session), Summarizer.of(current_app))
        socketio.emit("overview", {"queries": entries, "full": True}, to=joining.sid)
    return {"queries": len(entries)}


@socketio.on("subscribe_alerts")
@acknowledged
def subscribe_alerts(_data: Any = None) -> dict[str, Any]:
    """Join the alerts room, after receiving the silences in force: every `alert` and
    `silences` event from now on, and nothing else."""
    take_turn()
    with watcher().joining(connection_id(), ALERTS_ROOM) as joining:
        with so.Session(db.engine()) as session:
            silences = silences_in_force(session, current_app.config["CLOCK"]())
        socketio.emit("silences", {"silences": silences}, to=joining.sid)
    return {"room": ALERTS_ROOM}
