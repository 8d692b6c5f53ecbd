"""The instrumented operator: measures event time and late records per partition inside tasks.

Two implementations measure the same figures and hand the listener the same JSON through
`observe`: in the JVM (operator_jvm.py, when the session loaded wmon-spark.jar) and in Python
(operator_python.py, an Arrow UDF). Executors never touch the store: the
listener on the driver reads the figures from `observedMetrics`.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from monitor.config import load_settings
from monitor.spark.measuring import Measuring, check_columns, measured_columns
from monitor.spark.operator_jvm import jvm_operator, measured_in_jvm
from monitor.spark.operator_python import measured_in_python
from monitor.spark.sessions import is_connect

log = logging.getLogger(__name__)

_UNITS_MS = {
    "millisecond": 1,
    "second": 1_000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
}
_INTERVAL_PART = re.compile(r"(\d+)\s*(millisecond|second|minute|hour|day)s?", re.IGNORECASE)


def interval_ms(text: str) -> int:
    """Milliseconds of a Spark interval string such as '10 minutes' or '1 hour 30 seconds'."""
    parts = _INTERVAL_PART.findall(text)
    if not parts or _INTERVAL_PART.sub("", text).strip():
        raise ValueError(f"not an interval: {text!r} (expected e.g. '10 minutes')")
    return sum(int(number) * _UNITS_MS[unit.lower()] for number, unit in parts)


def chosen_operator(spark: Any, setting: str) -> Any | None:
    """The JVM operator's class, or None for the Python operator, as WMON_OPERATOR says."""
    if setting == "python":
        return None
    if is_connect(spark):
        if setting == "jvm":
            raise RuntimeError(
                "wmon: WMON_OPERATOR=jvm, but this is a Spark Connect session: its client "
                "cannot reach the server's JVM, wmon-spark.jar in the server's spark.jars or "
                "not; unset WMON_OPERATOR to measure in Python on the server's workers"
            )
        return None
    operator = jvm_operator(spark)
    if operator is None and setting == "jvm":
        raise RuntimeError(
            "wmon: WMON_OPERATOR=jvm, but this Spark session has no wmon-spark.jar: "
            "add it with spark.jars (`wmon spark-conf` prints the setting) or unset WMON_OPERATOR"
        )
    return operator


def instrument(
    df: Any,
    event_time: str = "timestamp",
    partition: str | None = "partition",
    delay: str = "10 minutes",
    *,
    checkpoint: str,
    window: str | None = None,
    topic: str | None = "topic",
    key: str | None = "key",
    offset: str | None = "offset",
) -> Any:
    """The same rows and columns as `df`, measured per partition for the monitor.

    `checkpoint` is the query's checkpoint location (the late-record threshold of each batch
    is read from its offset log), or, measured in Python, a directory above it such as a
    Declarative Pipeline's storage root (monitor.spark.checkpoints); `window` is the length
    of the event-time windows the job aggregates in, if any, so that late records are counted
    as Spark drops them.
    """
    settings = load_settings()
    operator = chosen_operator(df.sparkSession, settings.operator)
    measuring = Measuring(
        checkpoint=checkpoint,
        event_time=event_time,
        partition=partition,
        topic=topic,
        key=key,
        offset=offset,
        delay_ms=interval_ms(delay),
        window_ms=interval_ms(window) if window else None,
        future_tolerance_ms=settings.future_tolerance_s * 1000,
    )
    if is_connect(df.sparkSession):
        # Analysing df would be a round trip to the server, and a pipeline's flow function may
        # not: the Python operator checks the columns when the rows arrive.
        log.info(
            "wmon: instrument() measures in Python, in the Spark Connect server's Python "
            "workers (an Arrow UDF): they need watermark-monitor installed; the JVM operator "
            "cannot be used from a Connect client"
        )
        return measured_in_python(df, measuring)
    columns = df.columns
    check_columns(columns, measuring)
    if operator is None:
        log.info("wmon: instrument() measures in Python (an Arrow UDF): no wmon-spark.jar in use")
        present = [name for name in measured_columns(measuring) if name in columns]
        return measured_in_python(df, measuring, present)
    log.info("wmon: instrument() measures in the JVM (wmon-spark.jar)")
    return measured_in_jvm(operator, df, measuring)
