"""Watermark Monitor: per-partition watermark monitoring for Spark Structured Streaming."""

from monitor.attach import MonitorHandle, attach
from monitor.instrument import instrument

__all__ = ["MonitorHandle", "attach", "instrument"]
