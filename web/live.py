"""Live push over Socket.IO: what anyone writes to the store reaches the browsers watching it.

A background task, started once on the first connection, looks at the store every
POLL_INTERVAL_S (0.25 s by default) with a few cheap reads (:mod:`monitor.store.changes`), so
it sees rows written by any listener, in this process or on another machine, and pushes them
to the rooms of the queries they belong to. The events each side sends, and their payloads,
are the live protocol of docs/live.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
import sqlalchemy.exc as sa_exc
import sqlalchemy.orm as so
from flask import Flask, current_app
from flask_socketio import emit, join_room, leave_room

from monitor.alerts.silences import active_silences
from monitor.store.changes import alert_event_watch, batch_watch, query_watch, timer_watch
from monitor.store.engine import error_reason
from monitor.store.models import AlertEvent, AlertRow, Batch, Query, TimerSnapshotRow
from monitor.store.reads import QueryNotFound, find_query, list_queries
from monitor.store.summary import latest_batch
from web import db
from web.alerts_api import alert_json, silences_in_force
from web.payloads import Lens, batch_events, overview, timers_json
from web.periodic import Periodic
from web.sockets import socketio

CATCH_UP_LIMIT = 1_000
OVERVIEW_ROOM = "overview"
ALERTS_ROOM = "alerts"

log = logging.getLogger(__name__)


def room(query_id: str) -> str:
    """The Socket.IO room of one query."""
    return f"query:{query_id}"


class Watcher:
    """The background task that looks at the store and pushes what changed to the rooms."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        # Looks and subscriptions take turns, so that a batch reaches a subscriber exactly
        # once: either in its catch-up or, if the last look had not seen it, with the next look.
        self.lock = threading.Lock()
        self._batches, self._timers, self._queries = batch_watch(), timer_watch(), query_watch()
        self._alert_events = alert_event_watch()
        self.silences: list[dict[str, Any]] | None = None
        self._last_full = 0.0
        self._task = Periodic(
            self.look,
            lambda: app.config["POLL_INTERVAL_S"],
            log,
            cannot="wmon live: cannot read the store",
            failed="wmon live: a look at the store failed",
        )

    def start(self) -> None:
        """Start the background task, once however many connections ask."""
        self._task.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the background task and wait for it to end."""
        self._task.stop(timeout)

    def prime(self, session: so.Session) -> None:
        """With the lock held: unless a look already did, take the store as it is as sent."""
        for watch in (self._batches, self._timers, self._queries, self._alert_events):
            if not watch.primed:
                watch.prime(session)
        if self.silences is None:
            self.silences = silences_in_force(session, self.app.config["CLOCK"]())

    def look(self) -> None:
        """One look at the store: push new batches, timers, query changes, alert events and
        changes to the silences in force to their rooms."""
        watches = (self._queries, self._batches, self._timers, self._alert_events)
        with self.lock, so.Session(db.engine(self.app)) as session:
            queries, batches, timers, alert_events = (watch.look(session) for watch in watches)
            changed = set(queries)
            changed |= self._push_batches(session, batches)
            changed |= self._push_timers(session, timers)
            self._push_summaries(session, changed)
            self._push_alerts(session, alert_events)
            self._push_silences(session)
            # Only now: if a push failed, the next look finds the same rows again.
            for watch in watches:
                watch.accept()

    def _push_batches(self, session: so.Session, ids: Sequence[int]) -> set[str]:
        if not ids:
            return set()
        rows = session.scalars(sa.select(Batch).where(Batch.id.in_(ids)).order_by(Batch.id))
        by_query: dict[str, list[Batch]] = {}
        for batch in rows:
            by_query.setdefault(batch.query_id, []).append(batch)
        for query_id, batches in by_query.items():
            for payload in batch_events(session, batches):
                socketio.emit("batch", payload, to=room(query_id))
        return set(by_query)

    def _push_timers(self, session: so.Session, ids: Sequence[int]) -> set[str]:
        if not ids:
            return set()
        rows = session.scalars(
            sa.select(TimerSnapshotRow)
            .where(TimerSnapshotRow.id.in_(ids))
            .order_by(TimerSnapshotRow.id)
        )
        queries = set()
        for snapshot in rows:
            payload = {"query": snapshot.query_id, "snapshot": timers_json(snapshot)}
            socketio.emit("timers", payload, to=room(snapshot.query_id))
            queries.add(snapshot.query_id)
        return queries

    def _push_summaries(self, session: so.Session, changed: set[str]) -> None:
        full = time.monotonic() - self._last_full >= self.app.config["OVERVIEW_REFRESH_S"]
        if full:
            self._last_full = time.monotonic()
            queries = list_queries(session)
        elif changed:
            queries = session.scalars(sa.select(Query).where(Query.id.in_(changed))).all()
        else:
            return
        entries = overview(session, queries, Lens.of(self.app))
        socketio.emit("overview", {"queries": entries, "full": full}, to=OVERVIEW_ROOM)
        for entry in entries:
            socketio.emit("summary", entry, to=room(entry["id"]))

    def _push_alerts(self, session: so.Session, ids: Sequence[int]) -> None:
        if not ids:
            return
        rows = session.execute(
            sa.select(AlertEvent, AlertRow, Query.name)
            .join(AlertRow, AlertRow.id == AlertEvent.alert_id)
            .join(Query, Query.id == AlertRow.query_id)
            .where(AlertEvent.id.in_(ids))
            .order_by(AlertEvent.id)
        ).all()
        silences = list(active_silences(session, self.app.config["CLOCK"]()))
        for event, alert, name in rows:
            payload = {
                "alert": alert_json(alert, name, silences),
                "transition": event.transition,
                "at_ms": event.at_ms,
            }
            # One emit to the three rooms: a client in several of them gets the event once.
            rooms = [OVERVIEW_ROOM, ALERTS_ROOM, room(alert.query_id)]
            socketio.emit("alert", payload, to=rooms)

    def _push_silences(self, session: so.Session) -> None:
        # Read afresh each look: a silence ends by time passing as well as by a write.
        silences = silences_in_force(session, self.app.config["CLOCK"]())
        if self.silences is not None and silences != self.silences:
            socketio.emit("silences", {"silences": silences}, to=ALERTS_ROOM)
        self.silences = silences

    def catch_up(
        self, session: so.Session, query_id: str, after_batch: int | None
    ) -> tuple[list[dict[str, Any]], bool]:
        """With the lock held: the pushed batches after `after_batch`, and whether that is all.

        None asks for nothing. Batches the last look has not seen are left out: the next look
        sends them to the room. When the query's newest batch is below `after_batch` (a restart
        from an older checkpoint superseded what the page has), the answer is not complete.
        """
        self.prime(session)
        if after_batch is None:
            return [], True
        latest = latest_batch(session, query_id)
        if latest is not None and latest.batch_id < after_batch:
            return [], False
        newest = session.scalars(
            sa.select(Batch)
            .where(Batch.query_id == query_id, Batch.batch_id > after_batch)
            .order_by(Batch.batch_id.desc())
            .limit(CATCH_UP_LIMIT + 1)
        ).all()
        pushed = [
            batch
            for batch in newest[:CATCH_UP_LIMIT]
            if self._batches.seen(batch.id, self._batches.fingerprint(batch))
        ]
        return batch_events(session, pushed[::-1]), len(newest) <= CATCH_UP_LIMIT


def init_app(app: Flask) -> None:
    """Give the app its watcher; it starts with the first Socket.IO connection."""
    app.extensions["wmon.live"] = Watcher(app)


def watcher(app: Flask | None = None) -> Watcher:
    """The app's watcher."""
    found: Watcher = (app or current_app).extensions["wmon.live"]
    return found


@socketio.on("connect")
def connected() -> None:
    """Start watching the store when the first browser connects."""
    watcher().start()


def _subscription(data: Any) -> tuple[str, int | None]:
    if not isinstance(data, dict) or not isinstance(data.get("query"), str):
        raise ValueError('subscribe needs {"query": "<id or name>", "after_batch": <n> | null}')
    after = data.get("after_batch")
    if after is not None and (isinstance(after, bool) or not isinstance(after, int)):
        raise ValueError(f"after_batch must be a batch id or null, not {after!r}")
    return data["query"], after


def _join(ref: str, after_batch: int | None) -> dict[str, Any]:
    live = watcher()
    with live.lock, so.Session(db.engine()) as session:
        query_id = find_query(session, ref).id
        events, complete = live.catch_up(session, query_id, after_batch)
        for payload in events:
            emit("batch", payload)
        join_room(room(query_id))
    return {"query": query_id, "caught_up": len(events), "complete": complete}


@socketio.on("subscribe")
def subscribe(data: Any) -> dict[str, Any]:
    """Join a query's room, after receiving the batches stored after `after_batch`."""
    try:
        return _join(*_subscription(data))
    except (ValueError, QueryNotFound) as error:
        return {"error": str(error.args[0])}
    except sa_exc.DBAPIError as error:
        return {"error": f"cannot use the store: {error_reason(error)}"}


@socketio.on("unsubscribe")
def unsubscribe(data: Any) -> None:
    """Leave a query's room."""
    if isinstance(data, dict) and isinstance(data.get("query"), str):
        leave_room(room(data["query"]))


@socketio.on("subscribe_overview")
def subscribe_overview(_data: Any = None) -> dict[str, Any]:
    """Join the overview room, after receiving every query's entry."""
    live = watcher()
    try:
        with live.lock, so.Session(db.engine()) as session:
            live.prime(session)
            entries = overview(session, list_queries(session), Lens.of(current_app))
            emit("overview", {"queries": entries, "full": True})
            join_room(OVERVIEW_ROOM)
    except sa_exc.DBAPIError as error:
        return {"error": f"cannot use the store: {error_reason(error)}"}
    return {"queries": len(entries)}


@socketio.on("subscribe_alerts")
def subscribe_alerts(_data: Any = None) -> dict[str, Any]:
    """Join the alerts room, after receiving the silences in force: every `alert` and
    `silences` event from now on, and nothing else."""
    live = watcher()
    try:
        with live.lock, so.Session(db.engine()) as session:
            live.prime(session)
            emit("silences", {"silences": live.silences})
            join_room(ALERTS_ROOM)
    except sa_exc.DBAPIError as error:
        return {"error": f"cannot use the store: {error_reason(error)}"}
    return {"room": ALERTS_ROOM}
