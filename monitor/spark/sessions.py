"""What kind of SparkSession the monitor was given: a classic one, whose driver JVM PySpark
reaches through Py4J, or a Spark Connect client, whose queries run on a server out of reach."""

from __future__ import annotations

from typing import Any


def is_connect(spark: Any) -> bool:
    """True for a Spark Connect client's session (`SparkSession.builder.remote(…)`)."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def application_id(spark: Any) -> str:
    """The Spark application's id (the server's, on Spark Connect)."""
    return str(spark.conf.get("spark.app.id"))
