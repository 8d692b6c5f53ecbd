"""The watcher: looks at the store in the background and sends what changed to the rooms, and
lets connections into rooms after their catch-up.

It looks as soon as a writer commits (monitor.store.notify: PostgreSQL's notifications,
SQLite's data version) and at least every POLL_INTERVAL_S (0.25 s by default), so it sees rows
written by any listener, in this process or on another machine. With several processes
(web.live.relay), the one holding the live lease in the store looks for all, and a catch-up is
asked of it; alone, this process looks and answers itself, through the same steps.
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

from monitor.store.batches import batches_after
from monitor.store.engine import STORE_FAILURES, unusable
from monitor.store.leases import acquire, new_holder, release
from monitor.store.notify import ChangeSignal
from monitor.store.queries import queries_by_id
from web import db
from web.api.payloads import Lens, batch_events
from web.background.tasks import Periodic
from web.live.events import Event
from web.live.fanout import Fanout, LiveUnavailable, LocalFanout
from web.live.relay import Relay
from web.live.rooms import Joining, Rooms, emit
from web.live.store_events import StoreWatch

# With several processes: the lease of the one that watches the store, renewed every
# LEASE_RENEW_S, and how long a joining connection waits for its catch-up from that process.
LIVE_LEASE = "live-watch"
LEASE_TTL_MS = 5_000
LEASE_RENEW_S = 1.0
CATCH_UP_TIMEOUT_S = 15.0

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
        self.fanout.stop()
        if self.fanout.shared and self._leading:
            with contextlib.suppress(sa.exc.DBAPIError):
                release(db.engine(self.app), LIVE_LEASE, self.holder)

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
            if leading and not self._leading:
                with self.lock:
                    self.watch.fresh()
            self._leading = leading
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
        """A process asked for a catch-up, or sent one (the fan-out hands it over)."""
        if message == "catch_up":
            self._serve_catch_up(payload)
        elif message == "caught_up":
            self._caught_up(payload)

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

    def _serve_catch_up(self, request: dict[str, Any]) -> None:
        """A process asked for a joining connection's catch-up: if this one watches the store,
        send it (the batches, then the answer)."""
        if not self._leading:
            return
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
            lens = Lens.of(self.app)
            [summary] = lens.summaries(session, queries_by_id(session, [query_id]), False)
            payloads = batch_events(session, sent[::-1], summary.facts)
        return [Event("batch", payload, [sid]) for payload in payloads], complete

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
