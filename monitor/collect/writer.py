"""The single background writer between the listener and where its events go.

Callbacks hand events to `submit`, which never blocks. Events wait in a bounded buffer
while their destination (the store, or the collector over HTTP) is unreachable and are
retried in order; when the buffer is full the oldest waiting event is dropped, counted and
reported.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
import sqlalchemy.exc as sa_exc
import sqlalchemy.orm as so

from monitor.collect.spark_events import spark_event
from monitor.events import Event
from monitor.store.schema.engine import error_reason
from monitor.store.schema.migrate import is_current, upgrade
from monitor.store.write.rejected import set_aside
from monitor.store.write.writes import Written, write_events

log = logging.getLogger(__name__)

# Errors that mean "the store is not reachable now", worth retrying; anything else is a bad event.
TRANSIENT_ERRORS = (sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.TimeoutError)


@dataclass(frozen=True)
class Refusal:
    """How many of the items delivered the destination refused and set aside itself, and
    why (the first reason it gave)."""

    count: int
    reason: str


@dataclass(frozen=True)
class WriterStats:
    """What the writer has done so far."""

    written: int
    pending: int
    dropped: int
    rejected: int
    retries: int
    store_available: bool
    last_error: str | None


def _ensure_schema(engine: sa.Engine) -> None:
    if not is_current(engine):
        upgrade(engine)


class BufferedWriter:
    """Delivers submitted items on one background thread, in order, in groups: `deliver`
    raises one of `transient` while the destination is unavailable (retried with backoff),
    any other error to reject the items, and may return a Refusal of some of them that the
    destination set aside itself. `describe` says an error in one line; `destination` names
    where the items go, in messages."""

    def __init__(
        self,
        deliver: Callable[[list[Any]], Refusal | None],
        capacity: int,
        transient: tuple[type[Exception], ...],
        group_size: int = 100,
        max_backoff: float = 5.0,
        describe: Callable[[Exception], str] = str,
        destination: str = "store",
    ) -> None:
        if capacity < 1:
            raise ValueError(f"the writer's capacity must be at least 1, not {capacity}")
        self._deliver, self._transient, self._describe = deliver, transient, describe
        self._destination = destination
        self._capacity, self._max_backoff = capacity, max_backoff
        self._group_size = group_size
        self._buffer: deque[Any] = deque()
        self._in_flight: list[Any] = []
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self._written = self._dropped = self._rejected = self._retries = 0
        self._store_available = True
        self._last_error: str | None = None
        self._thread = threading.Thread(target=self._run, name="wmon-writer", daemon=True)
        self._thread.start()

    def submit(self, event: Any) -> None:
        """Queue an event; returns at once, dropping the oldest if the buffer is full."""
        with self._lock:
            if self._stop.is_set():
                self._dropped += 1
                log.warning(
                    "wmon: %s arrived after the writer closed; not stored", type(event).__name__
                )
                return
            if len(self._buffer) >= self._capacity:
                self._buffer.popleft()
                self._count_drop()
            self._buffer.append(event)
            self._lock.notify_all()

    def _count_drop(self) -> None:
        self._dropped += 1
        if self._dropped == 1 or self._dropped % 1000 == 0:
            log.warning(
                "wmon: %s buffer full, %d events dropped so far", self._destination, self._dropped
            )

    def stats(self) -> WriterStats:
        """A snapshot of the counters."""
        with self._lock:
            return WriterStats(
                written=self._written,
                pending=len(self._buffer) + len(self._in_flight),
                dropped=self._dropped,
                rejected=self._rejected,
                retries=self._retries,
                store_available=self._store_available,
                last_error=self._last_error,
            )

    def flush(self, timeout: float) -> bool:
        """Wait until every submitted event is written; False if the timeout ran out first."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._buffer or self._in_flight:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._lock.wait(remaining)
        return True

    def close(self, timeout: float) -> bool:
        """Write what is pending (within the timeout), then stop; False if events were left."""
        flushed = self.flush(timeout)
        self._stop.set()
        with self._lock:
            self._lock.notify_all()
        self._thread.join(timeout=max(self._max_backoff, 1.0) + 1.0)
        if not flushed:
            log.warning("wmon: writer closed with %d events not written", self.stats().pending)
        return flushed

    def _next(self) -> list[Any] | None:
        """The next events to write together: all waiting, up to the group size."""
        with self._lock:
            while not self._buffer and not self._stop.is_set():
                self._lock.wait()
            if not self._buffer:
                return None
            count = min(len(self._buffer), self._group_size)
            self._in_flight = [self._buffer.popleft() for _ in range(count)]
            return self._in_flight

    def _run(self) -> None:
        while (events := self._next()) is not None:
            try:
                self._store(events)
            except _Closing:
                return
            with self._lock:
                self._in_flight = []
                self._lock.notify_all()

    def _store(self, events: list[Any]) -> None:
        """Deliver events together; if the destination rejects them, one at a time."""
        error, refusal = self._retrying(events)
        if error is None:
            self._count_written(len(events) - (refusal.count if refusal else 0))
            if refusal:
                log.warning(
                    "wmon: %s refused %d events: %s",
                    self._destination,
                    refusal.count,
                    refusal.reason,
                )
                self._count_rejected(refusal.count, refusal.reason)
        elif len(events) == 1:
            log.error("wmon: could not store %s: %s", type(events[0]).__name__, error)
            self._count_rejected(1, self._describe(error))
            self._refused(events[0], self._describe(error))
        else:
            # One bad event must not cost the others their place in the store.
            for event in events:
                self._store([event])

    def _retrying(self, events: list[Any]) -> tuple[Exception | None, Refusal | None]:
        """Deliver until done while the destination is unavailable: what it refused of the
        events and set aside itself, or the error if it rejects them all."""
        backoff = 0.05
        while True:
            try:
                return None, self._deliver(events)
            except self._transient as error:
                self._note_unavailable(error)
            except Exception as error:
                return error, None
            if self._stop.wait(backoff):
                raise _Closing
            backoff = min(backoff * 2, self._max_backoff)

    def _note_unavailable(self, error: Exception) -> None:
        with self._lock:
            if self._store_available:
                log.warning(
                    "wmon: %s unavailable, retrying: %s", self._destination, self._describe(error)
                )
            self._store_available = False
            self._retries += 1
            self._last_error = self._describe(error)

    def _count_written(self, count: int) -> None:
        with self._lock:
            self._written += count
            if not self._store_available:
                log.warning("wmon: %s available again", self._destination)
            self._store_available = True

    def _count_rejected(self, count: int, reason: str) -> None:
        with self._lock:
            self._rejected += count
            self._last_error = reason

    def _refused(self, item: Any, reason: str) -> None:
        """What becomes of an item the destination refused, beyond counting it: by default,
        nothing more (a collector sets refused events aside itself)."""


def write_arriving(engine: sa.Engine, events: Sequence[Event]) -> Written:
    """Write events as they come from the job, which was heard of as they are written."""
    return write_events(engine, events, arrived_at_ms=time.time_ns() // 1_000_000)


class StoreWriter(BufferedWriter):
    """Writes submitted events to the store, migrating it first if it is behind. An item is
    one of Spark's events in its JSON form (as the listener submits them), turned into ours
    here, or one of ours (a timer snapshot); one that cannot be read or stored is set aside
    in the store (`wmon rejected`) when it is Spark's JSON, else logged."""

    def __init__(
        self,
        engine: sa.Engine,
        capacity: int,
        write: Callable[[sa.Engine, Sequence[Event]], object] = write_arriving,
        group_size: int = 100,
        prepare: Callable[[sa.Engine], None] = _ensure_schema,
        max_backoff: float = 5.0,
    ) -> None:
        self._engine, self._write, self._prepare = engine, write, prepare
        self._prepared = False
        super().__init__(
            self._write_events, capacity, TRANSIENT_ERRORS, group_size, max_backoff, error_reason
        )

    def _write_events(self, items: list[Event | dict[str, Any]]) -> None:
        if not self._prepared:
            self._prepare(self._engine)
            self._prepared = True
        events = [_event(item) for item in items]
        self._write(self._engine, [event for event in events if event is not None])

    def _refused(self, item: Any, reason: str) -> None:
        if not isinstance(item, dict):
            return
        try:
            with so.Session(self._engine) as session, session.begin():
                set_aside(
                    session, time.time_ns() // 1_000_000, "in-process listener", [(item, reason)]
                )
        except Exception as error:  # the writer's thread must go on, whatever happened
            log.error("wmon: could not set the refused event aside: %s", error_reason(error))


def _event(item: Event | dict[str, Any]) -> Event | None:
    """Our event from one of Spark's in its JSON form; one of ours as it is."""
    return spark_event(item, None) if isinstance(item, dict) else item


class _Closing(Exception):
    """The writer was closed while it waited to retry."""
