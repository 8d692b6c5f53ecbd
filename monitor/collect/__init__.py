"""Collect: Spark's listener events turned into our records and written to the store.

Nothing here imports Spark: the same parsing serves every way events come in.
"""
