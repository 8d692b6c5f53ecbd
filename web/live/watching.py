"""The watcher: looks at the store in the background and sends what changed to the rooms, and
lets connections into rooms after their catch-up.

It looks as soon as a writer commits (monitor.store.signals.notify: PostgreSQL's notifications,
SQLite's data version) and at least every POLL_INTERVAL_S (0.25 s by default), so it sees rows
written by any listener, in this process or on another machine. With several processes
(web.live.relay), the one holding the live lease in the store looks for all, and a catch-up is
asked of it; alone, this process looks and answers itself, through the same steps.

A process that stops (Ctrl-C, SIGTERM, the end of gunicorn's worker) hands the watching on:
it answers the catch-ups it took on, gives the lease up and says so with what its looks had
sent ("released"), and another process takes the lease at its next look rather than once it
expires, and goes on from there: its first look sends what was stored meanwhile, so a client
misses nothing. (One that takes over from a process that died takes the store as it finds
it.) The one that takes it says so ("watching"), and every process asks again for the
catch-ups of its joining connections that no one answered: a subscribe during a hand-over
waits for the new watcher.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import redis
import sqlalchemy as sa
import sqlalchemy.orm as so
from flask import Flask

from monitor.store.read.batches import batches_after
from monitor.store.read.queries import queries_by_id
from monitor.store.schema.engine import STORE_FAILURES, unusable
from monitor.store.signals.leases import acquire, new_holder, release
from monitor.store.signals.notify import ChangeSignal
from web import db
from web.api.payloads import Summarizer, batch_events
from web.background.tasks import Periodic
from web.live.fanout import Fanout, LiveUnavailable, LocalFanout
from web.live.relay import Relay
from web.live.rooms import Joining, Rooms, emit
from web.live.socket_events import Event
from web.live.store_events import StoreWatch

# With several processes: the lease of the one that watches the store, renewed every
# LEASE_RENEW_S, and how long a joining connection waits for its catch-up from that process.
LIVE_LEASE = "live-watch"
LEASE_TTL_MS = 5_000
LEASE_RENEW_S = 1.0
CATCH_UP_TIMEOUT_S = 15.0
# How long the watching process remembers a catch-up it served, so that the same one asked
# again (by a process that heard of a new watcher before the answer) is served once.
SERVED_KEPT_S = 2 * CATCH_UP_TIMEOUT_S

log = logging.getLogger(__name__)


class Watcher:
    """The background task that looks at the store and sends what changed to the rooms.

    Looks and joins take turns under `lock`, briefly, so that each event reaches a client
    exactly once and in order, catch-up first: a joining client leaves the room and is
    registered as joining (one turn), is sent its catch-up without the lock while the looks
    go on sending to everyone else and keep what they send that room for it, and at last
    (another turn) is sent what was kept, less the batches its catch-up already had, and
    enters the room. A look takes a connection of the store with the lock held, so nothing
    waits for the lock while it holds a connection: a full pool would deadlock them.
    """

    def __init__(self, app: Flask) -> None:
        self.app = app
        # Reentrant: alone, what a look sends is delivered here under the look's turn.
        self.lock = threading.RLock()
        self.rooms = Rooms()
        self.watch = StoreWatch(app)
        queue = app.config.get("MESSAGE_QUEUE")
        self.fanout: Fanout = (
            Relay(queue, app.config["MESSAGE_QUEUE_CHANNEL"], self) if queue else LocalFanout(self)
        )
        self.holder = new_holder()
        self._leading = not self.fanout.shared
        self._renew_at = 0.0
        # The catch-ups being served, counted under `_serving`, and those served lately.
        self._serving = threading.Condition()
        self._in_flight = 0
        self._served: dict[str, float] = {}
        # What the process that last gave the watching up had sent, until one takes it.
        self._handed: dict[str, Any] | None = None
        self._changes = ChangeSignal(lambda: db.engine(app))
        self._task = Periodic(
            self.look,
            lambda: app.config["POLL_INTERVAL_S"],
            log,
            cannot="wmon live: cannot read the store",
            failed="wmon live: a look at the store failed",
            wait=self._changes.wait,
        )

    def start(self) -> None:
        """Start hearing the other processes and looking at the store, once however many
        callers ask."""
        self.fanout.start()
        self._task.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop looking and hearing, and hand the watching on."""
        self._task.stop(timeout)
        self._changes.close()
        if self.fanout.shared and self._leading:
            self._hand_over(timeout)
        self.fanout.stop()

    def _hand_over(self, timeout: float) -> None:
        """Serve no more catch-ups and finish those begun (their answers go out before any
        new watcher's word), give the lease up and tell the others they may take it now, and
        what the looks had sent."""
        with self._serving:
            self._leading = False
            self._serving.wait_for(lambda: self._in_flight == 0, timeout)
        with self.lock:
            handed = self.watch.handed()
        try:
            release(db.engine(self.app), LIVE_LEASE, self.holder)
            self.fanout.tell("released", {"watch": handed})
        except sa.exc.DBAPIError:
            pass  # the lease expires by itself
        except redis.RedisError as error:
            log.warning("wmon live: cannot say the watching is handed on: %s", error)

    def look(self) -> None:
        """One look at the store, if this process watches it, sending what changed to the
        rooms someone is in; every process tells which rooms it has someone in."""
        try:
            self.fanout.share_rooms(self._here)
            if not self._lead():
                return
            with self.lock, so.Session(db.engine(self.app)) as session:
                # Under the lock, as a catch-up decides what the looks have sent: a room
                # joined before that is heard by every look after it.
                heard = self.fanout.heard(self.rooms.here())
                for event in self.watch.look(session, heard.__contains__):
                    self.fanout.send(event)
                self.watch.accept()
        except redis.RedisError as error:
            log.warning("wmon live: cannot reach the message queue: %s", error)

    def _here(self) -> set[str]:
        with self.lock:
            return self.rooms.here()

    def _lead(self) -> bool:
        """Whether this process watches the store: alone, always; with others, while it holds
        the live lease, renewed every LEASE_RENEW_S. One that takes the lease over watches the
        store afresh."""
        if not self.fanout.shared:
            return True
        now = time.monotonic()
        if now >= self._renew_at:
            self._renew_at = now + LEASE_RENEW_S
            clock = self.app.config["CLOCK"]
            leading = acquire(db.engine(self.app), LIVE_LEASE, self.holder, clock(), LEASE_TTL_MS)
            taken = leading and not self._leading
            if taken:
                with self.lock:
                    handed, self._handed = self._handed, None
                    if handed is None:
                        self.watch.fresh()
                    else:
                        self.watch.go_on_from(handed)
            with self._serving:
                self._leading = leading
            if taken:
                self.fanout.tell("watching", {})
        return self._leading

    def deliver(self, event: Event) -> None:
        """Send `event` to its rooms here (the fan-out hands it over). An event to connections
        alone (a catch-up's batches) is kept for no one joining, so it does not wait for the
        looks' turn."""
        if not event.to_rooms:
            emit(event)
            return
        with self.lock:
            self.rooms.send(event)

    def told(self, message: str, payload: dict[str, Any]) -> None:
        """A process asked for a catch-up or sent one, gave the watching up or took it (the
        fan-out hands them over in the order they came)."""
        if message == "catch_up":
            if not self._begin_serving(payload["join"]):
                return
            if not self.fanout.shared:
                self._serve_catch_up(payload)  # on the asker's thread, which waits for it
                return
            # Heard on the channel's listener: served on a thread of its own, so that what
            # comes after it is heard meanwhile.
            threading.Thread(
                target=self._serve_catch_up, args=(payload,), name="wmon-catch-up", daemon=True
            ).start()
        elif message == "caught_up":
            self._caught_up(payload)
        elif message == "released":
            with self.lock:
                if not self._leading:
                    self._handed = payload["watch"]
            self._renew_at = 0.0  # take the lease at the next look
        elif message == "watching":
            with self.lock:
                self._handed = None  # taken, by this process or another
            self._ask_again()

    @contextlib.contextmanager
    def joining(self, sid: str, name: str) -> Iterator[Joining]:
        """Put connection `sid` into room `name` once the with-block has sent its catch-up.

        The block runs without the lock; what the looks send the room meanwhile reaches
        `sid` after it, less the batches it sent (recorded in `Joining.sent`). If the block
        fails, `sid` is left out of the room.
        """
        with self.lock:
            if self._leading:
                # Primed before the catch-up reads, so that a look reports whatever that read
                # might have missed (with others, the watching process primes).
                with so.Session(db.engine(self.app)) as session:
                    self.watch.prime(session)
            joining = self.rooms.begin(sid, name)
        entered = False
        try:
            # Before the catch-up is asked for: the looks after that send to this room.
            try:
                self.fanout.share_rooms(self._here, now=True)
            except redis.RedisError as error:
                raise LiveUnavailable(f"cannot reach the message queue: {error}") from None
            yield joining
            entered = True
        finally:
            with self.lock:
                self.rooms.end(joining, name, entered)

    def leave(self, sid: str, name: str) -> None:
        """Take connection `sid` out of room `name`."""
        with self.lock:
            self.rooms.leave(sid, name)

    def rooms_of(self, sid: str) -> set[str]:
        """The rooms connection `sid` is in."""
        with self.lock:
            return self.rooms.of(sid)

    def forget(self, sid: str) -> None:
        """Connection `sid` has ended: whatever room it was joining, it is not put in."""
        with self.lock:
            self.rooms.forget(sid)

    def catch_up(
        self, joining: Joining, query_id: str, after_batch: int | None
    ) -> tuple[int, bool]:
        """Have the watching process send a joining connection the batches of a query after
        `after_batch` that the looks have sent, and wait until it has; how many, and whether
        that is all of them.

        A batch is in the catch-up when the looks had sent it by the time the watching process
        checks, just after reading it, and otherwise comes with the look that sends it: kept
        for the connection or, once it is in the room, live. The batches come first, then the
        answer: the fan-out keeps a sender's order.
        """
        if after_batch is None:
            return 0, True
        request = {
            "join": joining.id,
            "host": self.fanout.host_id,
            "sid": joining.sid,
            "query": query_id,
            "after_batch": after_batch,
        }
        with self.lock:
            joining.request = request
        try:
            self.fanout.tell("catch_up", request)
        except redis.RedisError as error:
            raise LiveUnavailable(f"cannot reach the message queue: {error}") from None
        if not joining.answered.wait(CATCH_UP_TIMEOUT_S):
            raise LiveUnavailable(
                "no dashboard process is watching the store for live updates; try again"
            )
        if joining.error is not None:
            raise LiveUnavailable(joining.error)
        return joining.caught_up

    def _begin_serving(self, join: str) -> bool:
        """Whether this process serves the catch-up `join` now: it watches the store and has
        not served it already. If it does, the catch-up counts as in flight until served."""
        with self._serving:
            if not self._leading or join in self._served:
                return False
            now = time.monotonic()
            self._served = {key: at for key, at in self._served.items() if now - at < SERVED_KEPT_S}
            self._served[join] = now
            self._in_flight += 1
            return True

    def _serve_catch_up(self, request: dict[str, Any]) -> None:
        """Send a joining connection's catch-up (the batches, then the answer)."""
        try:
            self._send_catch_up(request)
        finally:
            with self._serving:
                self._in_flight -= 1
                self._serving.notify_all()

    def _send_catch_up(self, request: dict[str, Any]) -> None:
        answer: dict[str, Any] = {"join": request["join"], "host": request["host"]}
        try:
            with self.lock, so.Session(db.engine(self.app)) as session:
                self.watch.prime(session)
            events, complete = self._sent_after(
                request["query"], request["after_batch"], request["sid"]
            )
            for event in events:
                self.fanout.send(event)
            answer |= {
                "keys": [event.key for event in events],
                "caught_up": len(events),
                "complete": complete,
            }
        except STORE_FAILURES as error:
            answer["error"] = unusable(error)
        except Exception:
            log.exception("wmon live: a catch-up failed")
            answer["error"] = "the catch-up failed on the server; see its log"
        try:
            self.fanout.tell("caught_up", answer)
        except redis.RedisError as error:
            log.warning("wmon live: cannot answer a catch-up: %s", error)

    def _sent_after(self, query_id: str, after_batch: int, sid: str) -> tuple[list[Event], bool]:
        """The events, to connection `sid`, of a query's batches after `after_batch` that the
        looks have sent, oldest first; whether that is all of them."""
        with so.Session(db.engine(self.app)) as session:
            newest, complete = batches_after(session, query_id, after_batch)
            session.close()  # its connection goes back before the wait for the lock
            with self.lock:
                sent = [batch for batch in newest if self.watch.pushed(batch)]
            if not sent:
                return [], complete
            # The partitions' statuses are judged on the query's facts, as the API's.
            summarizer = Summarizer.of(self.app)
            [summary] = summarizer.summaries(session, queries_by_id(session, [query_id]), False)
            payloads = batch_events(session, sent[::-1], summary.facts)
        return [Event("batch", payload, [sid]) for payload in payloads], complete

    def _ask_again(self) -> None:
        """A process took the watching over: ask it for the catch-ups of the connections here
        that no one answered (the watcher before may have stopped without them)."""
        with self.lock:
            requests = self.rooms.unanswered()
        for request in requests:
            self.fanout.tell("catch_up", request)

    def _caught_up(self, answer: dict[str, Any]) -> None:
        """The watching process sent a joining connection's catch-up: if the connection is
        here, record what it was sent, and let it into the room."""
        if answer["host"] != self.fanout.host_id:
            return
        with self.lock:
            joining = self.rooms.joining(answer["join"])
            if joining is None or joining.answered.is_set():
                return
            joining.error = answer.get("error")
            if joining.error is None:
                joining.sent.update(tuple(key) for key in answer["keys"])
                joining.caught_up = (answer["caught_up"], answer["complete"])
            joining.answered.set()
