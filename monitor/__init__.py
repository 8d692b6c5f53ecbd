"""Watermark Monitor: per-partition watermark monitoring for Spark Structured Streaming.

The public API is :func:`attach` and :func:`instrument`. Both need Spark, so they are loaded on
first use: importing `monitor` (or its store, health and alerts) stays light for the dashboard
and the command line, which never run Spark.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from monitor.spark.attach import MonitorHandle, attach
    from monitor.spark.instrument import instrument

__all__ = ["MonitorHandle", "attach", "instrument"]

_PUBLIC = {
    "MonitorHandle": "monitor.spark.attach",
    "attach": "monitor.spark.attach",
    "instrument": "monitor.spark.instrument",
}


def __getattr__(name: str) -> Any:
    """Load a public name's Spark-side module when the name is first asked for."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'monitor' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
