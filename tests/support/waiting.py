"""Waiting in tests: poll until something holds, or fail naming what never came."""

import time
from collections.abc import Callable
from typing import Any


def wait_until(
    predicate: Callable[[], Any], timeout: float, what: str | Callable[[], str]
) -> Any:
    """Poll until `predicate` returns something true; fail loudly naming `what` on timeout
    (or what `what` returns then, to say what there was instead)."""
    deadline = time.monotonic() + timeout
    while not (result := predicate()):
        if time.monotonic() > deadline:
            named = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout:g} s waiting for {named}")
        time.sleep(0.2)
    return result
