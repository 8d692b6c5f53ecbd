"""Watermark Monitor: per-partition watermark monitoring for Spark Structured Streaming."""

from monitor.attach import MonitorHandle, attach

__all__ = ["MonitorHandle", "attach"]
