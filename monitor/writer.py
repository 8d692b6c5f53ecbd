"""The single background writer between the listener and the store.

Callbacks hand events to `submit`, which never blocks. Events wait in a bounded buffer
while the store is unreachable and are retried in order; when the buffer is full the
oldest waiting event is dropped, counted and reported.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa
import sqlalchemy.exc as sa_exc

from monitor.events import Event
from monitor.store.engine import error_reason
from monitor.store.migrate import is_current, upgrade
from monitor.store.writes import write_event

log = logging.getLogger(__name__)

# Errors that mean "the store is not reachable now", worth retrying; anything else is a bad event.
TRANSIENT_ERRORS = (sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.TimeoutError)


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


class StoreWriter:
    """Writes submitted events to the store on one background thread, in order."""

    def __init__(
        self,
        engine: sa.Engine,
        capacity: int,
        write: Callable[[sa.Engine, Event], None] = write_event,
        prepare: Callable[[sa.Engine], None] = _ensure_schema,
        max_backoff: float = 5.0,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"the writer's capacity must be at least 1, not {capacity}")
        self._engine, self._write, self._prepare = engine, write, prepare
        self._capacity, self._max_backoff = capacity, max_backoff
        self._buffer: deque[Event] = deque()
        self._in_flight: Event | None = None
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self._prepared = False
        self._written = self._dropped = self._rejected = self._retries = 0
        self._store_available = True
        self._last_error: str | None = None
        self._thread = threading.Thread(target=self._run, name="wmon-writer", daemon=True)
        self._thread.start()

    def submit(self, event: Event) -> None:
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
            log.warning("wmon: store buffer full, %d events dropped so far", self._dropped)

    def stats(self) -> WriterStats:
        """A snapshot of the counters."""
        with self._lock:
            return WriterStats(
                written=self._written,
                pending=len(self._buffer) + (self._in_flight is not None),
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
            while self._buffer or self._in_flight is not None:
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

    def _next(self) -> Event | None:
        with self._lock:
            while not self._buffer and not self._stop.is_set():
                self._lock.wait()
            if not self._buffer:
                return None
            self._in_flight = self._buffer.popleft()
            return self._in_flight

    def _run(self) -> None:
        backoff = 0.05
        while (event := self._next()) is not None:
            while not self._attempt(event):
                if self._wait_or_close(backoff):
                    return
                backoff = min(backoff * 2, self._max_backoff)
            backoff = 0.05

    def _attempt(self, event: Event) -> bool:
        """Try to write one event; False means the store is unavailable and it should be retried."""
        try:
            if not self._prepared:
                self._prepare(self._engine)
                self._prepared = True
            self._write(self._engine, event)
        except TRANSIENT_ERRORS as error:
            self._note_unavailable(error)
            return False
        except Exception as error:
            log.error("wmon: could not store %s: %s", type(event).__name__, error)
            self._finish(error)
            return True
        self._finish(None)
        return True

    def _note_unavailable(self, error: Exception) -> None:
        with self._lock:
            if self._store_available:
                log.warning("wmon: store unavailable, retrying: %s", error_reason(error))
            self._store_available = False
            self._retries += 1
            self._last_error = error_reason(error)

    def _finish(self, error: Exception | None) -> None:
        """Done with the event in flight: written when there is no error, else rejected."""
        with self._lock:
            if error is None:
                self._written += 1
                if not self._store_available:
                    log.warning("wmon: store available again")
                self._store_available = True
            else:
                self._rejected += 1
                self._last_error = error_reason(error)
            self._in_flight = None
            self._lock.notify_all()

    def _wait_or_close(self, seconds: float) -> bool:
        """Sleep before a retry; True if the writer is closing and should give up now."""
        return self._stop.wait(seconds)
