"""Live push over Socket.IO: what anyone writes to the store reaches the browsers watching it.

A background task, started once on the first connection, looks at the store as soon as a
writer commits (:mod:`monitor.store.notify`: PostgreSQL's notifications, SQLite's data
version) and at least every POLL_INTERVAL_S (0.25 s by default), with a few cheap reads
(:mod:`monitor.store.changes`), so it sees rows written by any listener, in this process or
on another machine, and pushes them to the rooms of the queries they belong to. Each event is
encoded once for all the clients of a room and queued to each, so a slow client does not hold
up the others. The events each side sends, and their payloads, are the live protocol of
docs/live.md.

With a message queue (WMON_MESSAGE_QUEUE, web.relay), several processes serve one store and one
of them watches it for all: the holder of the live lease in the store. Its emits reach every
process through Redis; the looks read what someone in any process hears; a connection joining
a query's room anywhere is sent its catch-up by the watching process.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import redis
import sqlalchemy as sa
import sqlalchemy.orm as so
from flask import Flask, current_app, request
from flask_socketio import ConnectionRefusedError as ConnectionRefused
from flask_socketio import leave_room, rooms

from monitor.store.leases import acquire, new_holder, release
from monitor.alerts.silences import active_silences
from monitor.numbers import json_whole
from monitor.store.changes import (
    alert_event_watch,
    batch_watch,
    query_watch,
    timer_watch,
)
from monitor.store.facts import latest_batch
from monitor.store.models import AlertEvent, AlertRow, Batch, Query, TimerSnapshotRow
from monitor.store.notify import ChangeSignal
from monitor.store.reads import find_query, list_queries
from web import db
from web.alerts_api import alert_json, silences_in_force
from web.hosts import is_trusted
from web.payloads import Lens, batch_events, overview, timers_json
from web.periodic import Periodic
from web.relay import Relay
from web.sockets import (
    Refused,
    acknowledged,
    connection_id,
    socketio,
    subscribe_limit,
    take_turn,
)

CATCH_UP_LIMIT = 1_000
MAX_QUERY_ROOMS = 20
QUERY_ROOM_PREFIX = "query:"
OVERVIEW_ROOM = "overview"
ALERTS_ROOM = "alerts"
# With a message queue: the lease of the one process that watches the store, renewed every
# LEASE_RENEW_S, and how long a joining connection waits for its catch-up from that process.
LIVE_LEASE = "live-watch"
LEASE_TTL_MS = 5_000
LEASE_RENEW_S = 1.0
CATCH_UP_TIMEOUT_S = 15.0

# A stored batch as the looks tell them apart: its row's id and content; with a message
# queue, its payload's content (see content_key), which any process can tell.
BatchKey = tuple[Any, ...]

log = logging.getLogger(__name__)


def room(query_id: str) -> str:
    """The Socket.IO room of one query."""
    return QUERY_ROOM_PREFIX + query_id


def content_key(event: str, payload: Any) -> BatchKey | None:
    """A `batch` event's batch as every process can tell it from the payload: its query and
    the fields the looks compare (a replay differs in run, time or figures); None for others."""
    if event != "batch":
        return None
    batch = payload["batch"]
    fields = ("batch_id", "run_id", "batch_time_ms", "watermark_ms", "num_input_rows")
    return (payload["query"], *(batch[name] for name in fields))


def _send_here(event: str, payload: Any, sid: str) -> None:
    """Send an event to a connection of this process, never through the message queue."""
    socketio.emit(event, payload, to=sid, ignore_queue=True)


class LiveUnavailable(ValueError):
    """No process answered for the store's live updates; the message says what to do."""


class Joining:
    """A connection on its way into a room: what it was sent on the way (its catch-up's
    batches, by key) and what the looks sent the room meanwhile."""

    def __init__(self, sid: str) -> None:
        self.sid = sid
        self.ended = False
        self.sent: set[BatchKey] = set()
        self.missed: list[tuple[str, Any, BatchKey | None]] = []
        # With a message queue: the catch-up's answer from the watching process, once come.
        self.id = uuid.uuid4().hex
        self.answered = threading.Event()
        self.caught_up: tuple[int, bool] = (0, True)


class Watcher:
    """The background task that looks at the store and pushes what changed to the rooms.

    Looks and joins take turns under `lock`, briefly, so that each event reaches a client
    exactly once and in order, catch-up first: a joining client leaves the room and is
    registered as joining (one turn), is sent its catch-up without the lock while the looks
    go on pushing to everyone else and keep what they send that room for it, and at last
    (another turn) is sent what was kept, less the batches its catch-up already had, and
    enters the room. A look takes a connection of the store with the lock held, so nothing
    waits for the lock while it holds a connection: a full pool would deadlock them.
    """

    def __init__(self, app: Flask) -> None:
        self.app = app
        # Reentrant: with a message queue, this process's own emits are told of under it.
        self.lock = threading.RLock()
        self._fresh_watches()
        self._joining: dict[str, list[Joining]] = {}
        self._last_full = 0.0
        self.holder = new_holder()
        self._leading, self._renew_at, self._rooms_at = False, 0.0, 0.0
        self._heard_anywhere: set[str] = set()
        self._rooms_lock = threading.Lock()
        self._changes = ChangeSignal(lambda: db.engine(app))
        self._task = Periodic(
            self.look,
            lambda: app.config["POLL_INTERVAL_S"],
            log,
            cannot="wmon live: cannot read the store",
            failed="wmon live: a look at the store failed",
            wait=self._changes.wait,
        )

    def _fresh_watches(self) -> None:
        """Watch the store afresh: the next look, or join, takes it as it is as sent."""
        self._batches, self._timers, self._queries = batch_watch(), timer_watch(), query_watch()
        self._alert_events = alert_event_watch()
        self.silences: list[dict[str, Any]] | None = None

    @property
    def relay(self) -> Relay | None:
        """The message queue to the other processes, if there is one."""
        found: Relay | None = self.app.extensions.get("wmon.relay")
        return found

    def start(self) -> None:
        """Start the background task, once however many connections ask. With a message
        queue, also hear the other processes: `wmon serve` starts it with the server, so that
        a process with no connection of its own may watch for the others."""
        relay = self.relay
        if relay is not None:
            with self.lock:
                relay.deliveries = self
                relay.handlers["catch_up"] = self._serve_catch_up
                relay.handlers["caught_up"] = self._caught_up
                relay.listen()
        self._task.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the background task and wait for it to end; hand the watching on."""
        self._task.stop(timeout)
        self._changes.close()
        if self.relay is not None and self._leading:
            with contextlib.suppress(sa.exc.DBAPIError):
                release(db.engine(self.app), LIVE_LEASE, self.holder)

    def prime(self, session: so.Session) -> None:
        """With the lock held: unless a look already did, take the store as it is as sent."""
        for watch in (self._batches, self._timers, self._queries, self._alert_events):
            if not watch.primed:
                watch.prime(session)
        if self.silences is None:
            self.silences = silences_in_force(session, self.app.config["CLOCK"]())

    def look(self) -> None:
        """One look at the store: push new batches, timers, query changes, alert events and
        changes to the silences in force to their rooms. With a message queue, only the
        process that holds the live lease looks; every process tells which rooms it has
        someone in."""
        relay = self.relay
        try:
            if relay is not None:
                self._publish_rooms(relay)
                if not self._lead():
                    return
            with self.lock, so.Session(db.engine(self.app)) as session:
                if relay is not None:
                    # Under the lock, as a catch-up decides what the looks have pushed: a
                    # room joined before that is heard by every look after it.
                    self._heard_anywhere = relay.heard_rooms()
                self._look(session)
        except redis.RedisError as error:
            log.warning("wmon live: cannot reach the message queue: %s", error)

    def _look(self, session: so.Session) -> None:
        watches = (self._queries, self._batches, self._timers, self._alert_events)
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

    def _lead(self) -> bool:
        """Whether this process watches the store for all: it holds the live lease, renewed
        every LEASE_RENEW_S. One that takes the lease over watches the store afresh."""
        now = time.monotonic()
        if now >= self._renew_at:
            self._renew_at = now + LEASE_RENEW_S
            clock = self.app.config["CLOCK"]
            leading = acquire(db.engine(self.app), LIVE_LEASE, self.holder, clock(), LEASE_TTL_MS)
            if leading and not self._leading:
                with self.lock:
                    self._fresh_watches()
            self._leading = leading
        return self._leading

    def _publish_rooms(self, relay: Relay, now: bool = False) -> None:
        """Tell the other processes which rooms are heard here: every ROOMS_REFRESH_S, or
        `now`. One at a time, each with what is heard as it starts, so that the last written
        is never older than one before it."""
        with self._rooms_lock:
            started = time.monotonic()
            if not now and started - self._rooms_at < relay.rooms_refresh_s:
                return
            self._rooms_at = started
            with self.lock:
                heard = self._heard_here()
            relay.publish_rooms(heard)

    def _heard_here(self) -> set[str]:
        """With the lock held: the rooms someone here is in, or on the way into (not each
        connection's own)."""
        # A copy first: connections leave rooms without the lock.
        here = list(socketio.server.manager.rooms.get("/", {}).items())
        names = {name for name, members in here if members} | set(self._joining)
        return {
            name
            for name in names
            if name in (OVERVIEW_ROOM, ALERTS_ROOM) or str(name).startswith(QUERY_ROOM_PREFIX)
        }

    def _emit(self, event: str, payload: Any, to: list[str], key: BatchKey | None = None) -> None:
        """With the lock held: send an event to rooms, and keep it for each connection on its
        way into one of them that is in none of them yet (with a message queue, each process
        keeps it as it delivers it: `delivered`)."""
        socketio.emit(event, payload, to=to)
        if self.relay is None:
            self._keep_for_joining(event, payload, to, key)

    def delivered(self, event: str, payload: Any, rooms: list[str]) -> None:
        """With the lock held: the message queue delivered an event to rooms here; keep it
        for the connections on their way into one of them."""
        self._keep_for_joining(event, payload, rooms, content_key(event, payload))

    def _keep_for_joining(
        self, event: str, payload: Any, to: list[str], key: BatchKey | None
    ) -> None:
        for joining in self._joining_any(to):
            joining.missed.append((event, payload, key))

    def _heard(self, name: str) -> bool:
        """With the lock held: whether anyone is in room `name`, or on the way into it (in
        any process, with a message queue)."""
        if self.relay is not None:
            return name in self._heard_anywhere
        return bool(socketio.server.manager.rooms.get("/", {}).get(name) or self._joining.get(name))

    def _joining_any(self, names: list[str]) -> list[Joining]:
        found: dict[str, Joining] = {}
        for name in names:
            for joining in self._joining.get(name, ()):
                if not set(names) & set(socketio.server.rooms(joining.sid, namespace="/")):
                    found.setdefault(joining.sid, joining)
        return list(found.values())

    def _push_batches(self, session: so.Session, ids: Sequence[int]) -> set[str]:
        """Push the new batches to their rooms; the queries they belong to. A fleet's other
        queries' batches are not read: only those of the rooms someone is in."""
        queries = {key: self._batches.reported(key)[0] for key in ids}
        heard = [key for key in ids if self._heard(room(queries[key]))]
        if not heard:
            return set(queries.values())
        rows = session.scalars(sa.select(Batch).where(Batch.id.in_(heard)).order_by(Batch.id))
        by_query: dict[str, list[Batch]] = {}
        for batch in rows:
            by_query.setdefault(batch.query_id, []).append(batch)
        for query_id, batches in by_query.items():
            for batch, payload in zip(batches, batch_events(session, batches), strict=True):
                key = (batch.id, self._batches.fingerprint(batch))
                self._emit("batch", payload, [room(query_id)], key)
        return set(queries.values())

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
            self._emit("timers", payload, [room(snapshot.query_id)])
            queries.add(snapshot.query_id)
        return queries

    def _push_summaries(self, session: so.Session, changed: set[str]) -> None:
        """Push the changed queries' summaries (every query's, now and then) to the overview
        and to each query's room, reading only those someone is there to receive."""
        overview_heard = self._heard(OVERVIEW_ROOM)
        full = time.monotonic() - self._last_full >= self.app.config["OVERVIEW_REFRESH_S"]
        if full:
            self._last_full = time.monotonic()
            queries = list_queries(session)
        else:
            wanted = [q for q in changed if overview_heard or self._heard(room(q))]
            if not wanted:
                return
            queries = session.scalars(sa.select(Query).where(Query.id.in_(wanted))).all()
        if not overview_heard:
            queries = [query for query in queries if self._heard(room(query.id))]
        if not queries:
            return
        entries = overview(session, queries, Lens.of(self.app))
        if overview_heard:
            self._emit("overview", {"queries": entries, "full": full}, [OVERVIEW_ROOM])
        for entry in entries:
            if self._heard(room(entry["id"])):
                self._emit("summary", entry, [room(entry["id"])])

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
            self._emit("alert", payload, [OVERVIEW_ROOM, ALERTS_ROOM, room(alert.query_id)])

    def _push_silences(self, session: so.Session) -> None:
        # Read afresh each look: a silence ends by time passing as well as by a write.
        silences = silences_in_force(session, self.app.config["CLOCK"]())
        if self.silences is not None and silences != self.silences:
            self._emit("silences", {"silences": silences}, [ALERTS_ROOM])
        self.silences = silences

    @contextlib.contextmanager
    def joining(self, sid: str, name: str) -> Iterator[Joining]:
        """Put connection `sid` into room `name` once the with-block has sent its catch-up.

        The block runs without the lock; what the looks send the room meanwhile reaches
        `sid` after it, less the batches it sent (recorded in `Joining.sent`). If the block
        fails, `sid` is left out of the room.
        """
        joining = self._begin_join(sid, name)
        entered = False
        try:
            relay = self.relay
            if relay is not None:
                # Before the catch-up is asked for: the looks after that push to this room.
                try:
                    self._publish_rooms(relay, now=True)
                except redis.RedisError as error:
                    raise LiveUnavailable(f"cannot reach the message queue: {error}") from None
            yield joining
            entered = True
        finally:
            self._end_join(joining, name, entered)

    def _begin_join(self, sid: str, name: str) -> Joining:
        joining = Joining(sid)
        relay = self.relay
        with self.lock, so.Session(db.engine(self.app)) as session:
            if relay is None:
                # Primed before the catch-up reads, so that a look reports whatever that read
                # might have missed (with a message queue, the watching process primes).
                self.prime(session)
            # Joining a room again starts afresh: catch-up, then live.
            socketio.server.leave_room(sid, name, namespace="/")
            self._joining.setdefault(name, []).append(joining)
        return joining

    def _end_join(self, joining: Joining, name: str, enter: bool) -> None:
        with self.lock:
            self._joining[name].remove(joining)
            if not self._joining[name]:
                del self._joining[name]
            if not enter or joining.ended:
                return
            for event, payload, key in joining.missed:
                if key is None or key not in joining.sent:
                    _send_here(event, payload, joining.sid)
            socketio.server.enter_room(joining.sid, name, namespace="/")

    def forget(self, sid: str) -> None:
        """Connection `sid` has ended: whatever room it was joining, it is not put in."""
        with self.lock:
            for joinings in self._joining.values():
                for joining in joinings:
                    joining.ended = joining.ended or joining.sid == sid

    def catch_up(
        self, joining: Joining, query_id: str, after_batch: int | None
    ) -> tuple[int, bool]:
        """Send a joining connection the batches of a query after `after_batch` that the looks
        have pushed; how many, and whether that is all of them.

        A batch is in the catch-up when the looks had pushed it by the time this checks, just
        after reading it, and otherwise comes with the look that pushes it: kept for the
        connection or, once it is in the room, live. With a message queue, the watching
        process sends it.
        """
        relay = self.relay
        if relay is not None:
            return self._ask_catch_up(relay, joining, query_id, after_batch)
        payloads, keys, complete = self._pushed_after(query_id, after_batch)
        for payload in payloads:
            socketio.emit("batch", payload, to=joining.sid)
        joining.sent.update(keys)
        return len(payloads), complete

    def _pushed_after(
        self, query_id: str, after_batch: int | None
    ) -> tuple[list[dict[str, Any]], list[BatchKey], bool]:
        """The events of a query's batches after `after_batch` that the looks have pushed,
        oldest first, and the batches' keys as the looks tell them; whether that is all."""
        with so.Session(db.engine(self.app)) as session:
            newest, complete = batches_after(session, query_id, after_batch)
            keyed = [(batch, (batch.id, self._batches.fingerprint(batch))) for batch in newest]
            session.close()  # its connection goes back before the wait for the lock
            with self.lock:
                pushed = [(batch, key) for batch, key in keyed if self._batches.seen(*key)]
            payloads = batch_events(session, [batch for batch, _ in reversed(pushed)])
        return payloads, [key for _, key in pushed], complete

    def _ask_catch_up(
        self, relay: Relay, joining: Joining, query_id: str, after_batch: int | None
    ) -> tuple[int, bool]:
        """Ask the watching process for a joining connection's catch-up, and wait until it
        has come (its batches first, then the answer: the queue keeps a sender's order)."""
        if after_batch is None:
            return 0, True
        request = {
            "join": joining.id,
            "host": relay.host_id,
            "sid": joining.sid,
            "query": query_id,
            "after_batch": after_batch,
        }
        try:
            relay.tell("catch_up", request)
        except redis.RedisError as error:
            raise LiveUnavailable(f"cannot reach the message queue: {error}") from None
        if not joining.answered.wait(CATCH_UP_TIMEOUT_S):
            raise LiveUnavailable(
                "no dashboard process is watching the store for live updates; try again"
            )
        return joining.caught_up

    def _serve_catch_up(self, request: dict[str, Any]) -> None:
        """A process asked for a joining connection's catch-up: if this one watches the store,
        send it, on a thread of its own (the message queue's thread delivers meanwhile)."""
        if self._leading:
            threading.Thread(
                target=self._send_catch_up, args=(request,), name="wmon-catch-up", daemon=True
            ).start()

    def _send_catch_up(self, request: dict[str, Any]) -> None:
        """Send a joining connection of another process (or this one) the batches after
        `after_batch` that the looks have pushed, as `catch_up` does here, then the answer."""
        relay = self.relay
        assert relay is not None
        try:
            with self.lock, so.Session(db.engine(self.app)) as session:
                self.prime(session)
            payloads, _, complete = self._pushed_after(request["query"], request["after_batch"])
        except Exception:
            log.exception("wmon live: a catch-up for another process failed")
            return
        for payload in payloads:
            socketio.emit("batch", payload, to=request["sid"])
        answer = {
            "join": request["join"],
            "host": request["host"],
            "keys": [content_key("batch", payload) for payload in payloads],
            "caught_up": len(payloads),
            "complete": complete,
        }
        relay.tell("caught_up", answer)

    def _caught_up(self, answer: dict[str, Any]) -> None:
        """The watching process sent a joining connection's catch-up: if the connection is
        here, record what it was sent, and let it into the room."""
        relay = self.relay
        if relay is None or answer["host"] != relay.host_id:
            return
        with self.lock:
            for joinings in self._joining.values():
                for joining in joinings:
                    if joining.id == answer["join"] and not joining.answered.is_set():
                        joining.sent.update(tuple(key) for key in answer["keys"])
                        joining.caught_up = (answer["caught_up"], answer["complete"])
                        joining.answered.set()


def batches_after(
    session: so.Session, query_id: str, after_batch: int | None
) -> tuple[Sequence[Batch], bool]:
    """The newest CATCH_UP_LIMIT batches of a query after `after_batch`, newest first, and
    whether that is all of them; None asks for none.

    When the query's newest batch is below `after_batch` (a restart from an older checkpoint
    superseded what the page has), the answer is none, and not complete.
    """
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
    return newest[:CATCH_UP_LIMIT], len(newest) <= CATCH_UP_LIMIT


def init_app(app: Flask) -> None:
    """Give the app its watcher; it starts with the first Socket.IO connection."""
    app.extensions["wmon.live"] = Watcher(app)


def watcher(app: Flask | None = None) -> Watcher:
    """The app's watcher."""
    found: Watcher = (app or current_app).extensions["wmon.live"]
    return found


@socketio.on("connect")
def connected(_auth: Any = None) -> None:
    """Refuse a connection for a name this server does not answer to (web.hosts); start
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
    joined = [name for name in rooms() if name.startswith(QUERY_ROOM_PREFIX)]
    if room(query_id) not in joined and len(joined) >= limit:
        raise Refused(f"at most {limit} query rooms per connection: unsubscribe from one first")


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
        leave_room(room(data["query"]))


@socketio.on("subscribe_overview")
@acknowledged
def subscribe_overview(_data: Any = None) -> dict[str, Any]:
    """Join the overview room, after receiving every query's entry."""
    take_turn()
    with watcher().joining(connection_id(), OVERVIEW_ROOM) as joining:
        with so.Session(db.engine()) as session:
            entries = overview(session, list_queries(session), Lens.of(current_app))
        _send_here("overview", {"queries": entries, "full": True}, joining.sid)
    return {"queries": len(entries)}


@socketio.on("subscribe_alerts")
@acknowledged
def subscribe_alerts(_data: Any = None) -> dict[str, Any]:
    """Join the alerts room, after receiving the silences in force: every `alert` and
    `silences` event from now on, and nothing else."""
    take_turn()
    live = watcher()
    with live.joining(connection_id(), ALERTS_ROOM) as joining:
        silences = live.silences
        if live.relay is not None:  # the watching process's are not here: as stored
            with so.Session(db.engine()) as session:
                silences = silences_in_force(session, current_app.config["CLOCK"]())
        _send_here("silences", {"silences": silences}, joining.sid)
    return {"room": ALERTS_ROOM}
