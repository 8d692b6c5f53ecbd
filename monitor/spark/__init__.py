"""What runs inside a Spark application: the listener, `attach`, the instrumented operator and
the pending-timer watch. The only part of `monitor` that imports pyspark and pyarrow."""
