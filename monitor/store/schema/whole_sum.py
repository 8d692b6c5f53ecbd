"""Sums over stored figures that no row can make fail.

SQLite's sum() raises "integer overflow" past 64 bits, and one absurd figure (a partition
lagging 2^63 offsets, as a broken source may report) would then fail every read that adds it
up: the overview, the scrape, the alert rules of every query. `whole_sum` adds up with
total() there (exact below 2^53), saturating at the largest 64-bit integer; PostgreSQL's
sum() of a bigint is numeric and never overflows.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement


class whole_sum(FunctionElement[int]):  # noqa: N801 - read as the SQL function it stands for
    """sum(column), None over no values, never failing however large the values."""

    type = sa.BigInteger()
    inherit_cache = True
    name = "whole_sum"


@compiles(whole_sum)
def _sum(element: whole_sum, compiler: Any, **kw: Any) -> str:
    return f"sum({compiler.process(element.clauses, **kw)})"


@compiles(whole_sum, "sqlite")
def _total(element: whole_sum, compiler: Any, **kw: Any) -> str:
    values = compiler.process(element.clauses, **kw)
    return f"CASE WHEN count({values}) > 0 THEN CAST(total({values}) AS INTEGER) END"
