"""A request's time, for the benchmarks of the dashboard's answers."""

from __future__ import annotations

import time
import urllib.request


def fetched(url: str) -> float:
    """Seconds a GET of `url` takes, until the whole answer arrived."""
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as answer:
        answer.read()
    return time.perf_counter() - started
