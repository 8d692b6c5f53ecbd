"""A query's lateness over any range, read from the finest tier that covers it: its batches
(store.drop_causes), or else its partitions' per-minute or per-hour rollups, which keep the
lateness histograms summed (store.minutes), so that the advisor and the Diagnosis answer for
ranges older than the batches kept.

From the rollups a range is read to its spans: the minute (or hour) that holds its start and
every one that starts up to its end. Whether a future-dated record drove the watermark is
judged on the batches still kept in the range: the rollups do not keep who drove it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.config import DEFAULT_FUTURE_TOLERANCE_S
from monitor.health.lateness import summed
from monitor.numbers import INT64_MIN
from monitor.store.packed.packing import unpack, unpack_histograms
from monitor.store.read.drop_causes import Lateness, future_driven, lateness, with_whole_query
from monitor.store.read.history import Kept
from monitor.store.schema.models import Query
from monitor.store.tiers.minutes import PARTITION_HOURS, PARTITION_MINUTES, Tier


@dataclass(frozen=True)
class LatenessRead:
    """The lateness over a range (the whole query first, then each partition by name; [] where
    none was measured), and what it was read from: "batch", "minute" or "hour"."""

    resolution: str
    items: list[Lateness]


def lateness_over(
    session: so.Session,
    query: Query,
    from_ms: int | None = None,
    to_ms: int | None = None,
    tolerance_ms: int = DEFAULT_FUTURE_TOLERANCE_S * 1000,
) -> LatenessRead:
    """The query's lateness over its batches from `from_ms` to `to_ms` (batch times, both
    included, either open), from the finest tier that holds all of it."""
    kept = Kept.of(query)
    start = from_ms if from_ms is not None else INT64_MIN
    if kept.batches_cover(start):
        return LatenessRead("batch", lateness(session, query.id, from_ms, to_ms, tolerance_ms))
    tier = PARTITION_MINUTES if kept.minutes_cover(start) else PARTITION_HOURS
    return LatenessRead(
        "minute" if tier is PARTITION_MINUTES else "hour",
        rollup_lateness(session, query.id, tier, from_ms, to_ms, tolerance_ms),
    )


def rollup_lateness(
    session: so.Session,
    query_id: str,
    tier: Tier,
    from_ms: int | None = None,
    to_ms: int | None = None,
    tolerance_ms: int = DEFAULT_FUTURE_TOLERANCE_S * 1000,
) -> list[Lateness]:
    """The query's lateness over the tier's spans from the one holding `from_ms` to the last
    starting at `to_ms` (either open): each measured partition's histograms summed, with the
    largest delay in force in them; then the whole query first, as store.drop_causes gives it."""
    start = tier.column(tier.start)
    conditions: list[Any] = [tier.column("query_id") == query_id]
    if from_ms is not None:
        conditions.append(start >= from_ms - from_ms % tier.width_ms)
    if to_ms is not None:
        conditions.append(start <= to_ms)
    spans = session.execute(
        sa.select(tier.column("figures"), tier.column("histograms")).where(*conditions)
    )
    figures = tier.figures
    delay = figures.index("delay_max_ms")
    measured: dict[str, list[Any]] = {}
    for packed, histograms in spans:
        found = unpack_histograms(histograms)
        if not found:
            continue
        span = unpack(packed, len(figures))
        delays = dict(zip(span.names, span.values[delay].tolist(), strict=True))
        for name, (late, slack) in found.items():
            total = measured.setdefault(name, [{}, {}, 0])
            total[0] = summed([total[0], late or {}])
            total[1] = summed([total[1], slack or {}])
            total[2] = max(total[2], delays.get(name) or 0)
    if not measured:
        return []
    driven = future_driven(session, query_id, from_ms, to_ms, tolerance_ms)
    return with_whole_query(
        [
            Lateness(name, delay_ms, late, slack, driven, tolerance_ms)
            for name, (late, slack, delay_ms) in sorted(measured.items())
        ]
    )
