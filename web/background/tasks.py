"""Work the dashboard server does in the background, as Socket.IO background tasks: each
started once however many callers ask, and stopped and waited for."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from monitor.store.schema.engine import STORE_FAILURES, error_reason
from web.sockets import socketio


class Task:
    """`run(stopping)` as a background task, until `stop` sets `stopping`."""

    def __init__(self, run: Callable[[threading.Event], object]) -> None:
        self.stopping = threading.Event()
        self._run = run
        self._lock = threading.Lock()
        self._task: Any = None

    def start(self) -> None:
        """Start the task, once however many callers ask."""
        with self._lock:
            if self._task is None:
                self._task = socketio.start_background_task(self._run, self.stopping)

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the task to stop and wait for it to end, `timeout` seconds at most."""
        self.stopping.set()
        if self._task is not None:
            self._task.join(timeout)


def _sleep(seconds: float, stopping: threading.Event) -> object:
    # Waiting on the event rather than sleeping lets `stop` end a long wait (an hour between
    # prunes) at once; the app's Socket.IO runs in threading mode.
    return stopping.wait(seconds)


class Periodic(Task):
    """`work()` every `every()` seconds as a background task, or sooner when `wait` (given the
    seconds and the stopping event) returns early. A failed pass is logged to `log` (`cannot`,
    with the reason, when the store cannot be used; `failed` and the traceback for anything
    else) and the next pass still comes."""

    def __init__(
        self,
        work: Callable[[], object],
        every: Callable[[], float],
        log: logging.Logger,
        *,
        cannot: str,
        failed: str,
        wait: Callable[[float, threading.Event], object] = _sleep,
    ) -> None:
        super().__init__(self._repeat)
        self.work, self.every, self.log, self.wait = work, every, log, wait
        self.cannot, self.failed = cannot, failed

    def _pass(self) -> None:
        try:
            self.work()
        except STORE_FAILURES as error:
            self.log.warning("%s: %s", self.cannot, error_reason(error))
        except Exception:
            # The task must outlive any one failed pass, or its work would end silently.
            self.log.exception(self.failed)

    def _repeat(self, stopping: threading.Event) -> None:
        while not stopping.is_set():
            self._pass()
            self.wait(self.every(), stopping)
