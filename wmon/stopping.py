"""SIGTERM stops the commands that run until stopped (`wmon serve`, `wmon alerts run`,
`wmon ingest --follow`) the way Ctrl-C does.

SIGTERM is what systemd, Kubernetes and `docker stop` send. Python's default for it ends the
process on the spot, as `kill -9` does: no `finally` runs, so a lease stays held until it
expires (another process watches the store or evaluates the rules only seconds later) and the
store's connections are dropped mid-way. Raised as a KeyboardInterrupt in the main thread,
where Ctrl-C's is, it takes every path Ctrl-C takes: the server's loop ends, background work
stops and hands its leases on, what was read is stored with its position. The command then
exits 0, as a stop that was asked for and done (systemd counts 143 as a failure).

An exception raised by a signal can be lost: one that lands in the store's driver may be
replaced by the driver's own error while it cleans up ("connection in transaction status
ACTIVE"), which a loop that outlives store failures logs and carries on from. Ctrl-C is then
pressed again; SIGTERM is sent once. So SIGTERM also sets the command's stop event, which its
loop checks: it ends at its next turn, whatever became of the exception.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import NoReturn


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: stop as Ctrl-C stops."""


@contextlib.contextmanager
def sigterm_stops(stop: threading.Event | None = None) -> Iterator[None]:
    """While the block runs, SIGTERM raises Terminated in it and sets `stop`, if given; the
    handler before is restored after. Only the main thread hears signals: elsewhere (a
    command run on a test's thread) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(_signal: int, _frame: FrameType | None) -> NoReturn:
        # Once: a second SIGTERM while the command stops would break the clean stop half way
        # (a lease not handed on). A stop that hangs is what SIGKILL, sent after a grace
        # period by systemd and Kubernetes alike, is for.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if stop is not None:
            # From a thread: the handler runs on the main thread, which may be holding the
            # event's own lock (inside its wait) at this very moment.
            threading.Thread(target=stop.set, name="wmon-sigterm", daemon=True).start()
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
