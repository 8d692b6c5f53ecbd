"""Waiting in tests: poll until something holds, or fail naming what never came."""

import time
from collections.abc import Callable
from typing import Any

# The longest pause between two looks.
POLL_S = 0.2


def wait_until(
    predicate: Callable[[], Any], timeout: float, what: str | Callable[[], str]
) -> Any:
    """Poll until `predicate` returns something true; fail loudly naming `what` on timeout
    (or what `what` returns then, to say what there was instead). It looks again after 10 ms,
    then twice as long each time up to every 0.2 s: what comes at once is seen at once, and a
    long wait costs no more looks than before."""
    deadline = time.monotonic() + timeout
    pause = 0.01
    while not (result := predicate()):
        if time.monotonic() > deadline:
            named = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout:g} s waiting for {named}")
        time.sleep(pause)
        pause = min(2 * pause, POLL_S)
    return result
