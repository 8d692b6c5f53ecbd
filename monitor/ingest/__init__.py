"""Reading Spark's event logs from outside the job (`wmon ingest`): files, codecs, lines.

``logfiles`` finds the applications' log files by Spark's naming, ``codecs`` decompresses
Spark's formats as the bytes arrive, ``reader`` returns the complete lines from a position.
"""
