"""The instrumented operator in the JVM: an aggregate inside `observe`, from wmon-spark.jar.

`wmon.spark.operator.Instrument` (jvm/src/wmon/spark/operator/) measures the same figures as
the Python operator and hands the listener the same JSON, at a fraction of the cost: no rows
leave the JVM. It is there when the session loaded the jar (`spark.jars`, as `wmon submit` and
`wmon spark-conf` set it) and PySpark talks to its JVM through Py4J (not Spark Connect).
"""

from __future__ import annotations

from typing import Any

from monitor.events import OBSERVATION, SAMPLES_PER_PARTITION
from monitor.spark.measuring import Measuring

JVM_CLASS = "wmon.spark.operator.Instrument"


def jvm_operator(spark: Any) -> Any | None:
    """The operator's Java class when the session's JVM has it, else None."""
    from py4j.java_gateway import JavaClass

    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return None
    found = jvm
    for part in JVM_CLASS.split("."):
        found = getattr(found, part)
    return found if isinstance(found, JavaClass) else None


def measured_in_jvm(operator: Any, df: Any, measuring: Measuring) -> Any:
    """`df` observed as OBSERVATION by the JVM operator's aggregate."""
    from pyspark.sql import DataFrame

    observed = operator.observe(
        df._jdf,
        OBSERVATION,
        SAMPLES_PER_PARTITION,
        measuring.checkpoint,
        measuring.event_time,
        measuring.partition,
        measuring.topic,
        measuring.key,
        measuring.offset,
        measuring.delay_ms,
        measuring.window_ms or 0,
        measuring.future_tolerance_ms,
    )
    return DataFrame(observed, df.sparkSession)
