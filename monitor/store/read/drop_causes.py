"""What explains dropped data over a range of batches, from what the instrumented operator
measured: who drove the watermark, which records were future-dated, and how late and how close
the records were (the per-batch lateness histograms, summed)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.config import DEFAULT_FUTURE_TOLERANCE_S
from monitor.events import SAMPLES_PER_PARTITION, Record
from monitor.health.facts import FutureDated
from monitor.health.lateness import SHARES, Histogram, difference, smallest_delay, summed
from monitor.store.packed import batch_event_times
from monitor.store.packed.batch_event_times import StoredEventTimes
from monitor.store.schema.models import Batch
from monitor.store.schema.sql import among, per_query

# What the advisor says instead of a delay where a future-dated record drove the watermark.
NO_DELAY_KEEPS = (
    "no delay keeps these records: a future-dated record drove the watermark;"
    " fix the producer's clock"
)


@dataclass(frozen=True)
class Lateness:
    """A partition's (or, with partition None, the whole query's) histograms over a range,
    with the delay in force at its end, and whether a future-dated record (more than
    `future_tolerance_ms` ahead of its batch) drove the watermark in the range."""

    partition: str | None
    delay_ms: int
    late: Histogram
    slack: Histogram
    future_driven: bool = False
    future_tolerance_ms: int = DEFAULT_FUTURE_TOLERANCE_S * 1000

    @property
    def late_records(self) -> int:
        """Records measured late."""
        return sum(self.late.values())

    @property
    def records(self) -> int:
        """Records measured against a watermark, late or on time."""
        return self.late_records + sum(self.slack.values())

    def smallest_delay(self, share: float) -> int | None:
        """The smallest delay that would have kept `share` of the records (health.lateness)."""
        return smallest_delay(self.late, self.slack, self.delay_ms, share)

    def no_delay_keeps(self, share: float) -> bool:
        """Whether keeping `share` of the records is for the producer's clock to fix, not a
        delay: a future-dated record drove the watermark in the range, and the delay it would
        take is longer than the future tolerance (records that late are the ones a watermark
        dragged ahead by such a record dropped)."""
        delay = self.smallest_delay(share)
        return self.future_driven and delay is not None and delay > self.future_tolerance_ms

    def advice(self) -> dict[str, Any]:
        """The advisor's answer as JSON: the counts, the delay in force, and for each share
        the smallest delay that would have kept it, or none and `no_delay` saying why
        (`wmon advise --json`, the API)."""
        return {
            "partition": self.partition,
            "records": self.records,
            "late_records": self.late_records,
            "delay_ms": self.delay_ms,
            "delays": [self._delay(share) for share in SHARES],
        }

    def _delay(self, share: float) -> dict[str, Any]:
        if self.no_delay_keeps(share):
            return {"share": share, "delay_ms": None, "no_delay": NO_DELAY_KEEPS}
        return {"share": share, "delay_ms": self.smallest_delay(share), "no_delay": None}


def lateness(
    session: so.Session,
    query_id: str,
    from_ms: int | None = None,
    to_ms: int | None = None,
    tolerance_ms: int = DEFAULT_FUTURE_TOLERANCE_S * 1000,
) -> list[Lateness]:
    """The query's lateness over its batches from `from_ms` to `to_ms` (batch times, both
    included, either open): the whole query first, then each partition by name; [] where none
    was measured. Two batches' rows whatever the range: each row holds its histograms so far,
    so the range's are the last batch's totals less what came before the first. A record
    more than `tolerance_ms` ahead of its batch is future-dated."""
    first, last = _first_and_last(session, query_id, from_ms, to_ms)
    if first is None or last is None:
        return []
    at_first, at_last = {}, {}
    for row in batch_event_times.of_batches(session, query_id, {first, last}):
        if row.batch_id == first:
            at_first[row.partition] = row
        if row.batch_id == last:
            at_last[row.partition] = row
    # Rows stored before the histograms were measured have none.
    measured = [
        (n, end) for n, end in sorted(at_last.items()) if end.late_buckets_total is not None
    ]
    if not measured:
        return []
    driven = future_driven(session, query_id, from_ms, to_ms, tolerance_ms)
    found = [
        Lateness(
            name,
            end.delay_ms,
            _in_range("late", end, at_first.get(name)),
            _in_range("slack", end, at_first.get(name)),
            driven,
            tolerance_ms,
        )
        for name, end in measured
    ]
    return with_whole_query(found)


def with_whole_query(partitions: list[Lateness]) -> list[Lateness]:
    """Partitions' lateness (at least one) with the whole query's first: their histograms
    summed, with the largest delay."""
    first = partitions[0]
    whole = Lateness(
        None,
        max(item.delay_ms for item in partitions),
        summed(item.late for item in partitions),
        summed(item.slack for item in partitions),
        first.future_driven,
        first.future_tolerance_ms,
    )
    return [whole, *partitions]


def _in_range(kind: str, end: StoredEventTimes, start: StoredEventTimes | None) -> Histogram:
    """A partition's `kind` histogram (late or slack) over a range: its total at the range's
    last batch less what came before the first (that batch's total less its own)."""
    total: Histogram = getattr(end, f"{kind}_buckets_total") or {}
    if start is None:
        return total
    own, so_far = getattr(start, f"{kind}_buckets"), getattr(start, f"{kind}_buckets_total")
    return difference(total, difference(so_far or {}, own or {}))


def _batches_in(
    query_id: str, from_ms: int | None, to_ms: int | None
) -> list[sa.ColumnElement[bool]]:
    """The conditions of the query's batches with batch times from `from_ms` to `to_ms` (both
    included, either open)."""
    conditions = [Batch.query_id == query_id]
    if from_ms is not None:
        conditions.append(Batch.batch_time_ms >= from_ms)
    if to_ms is not None:
        conditions.append(Batch.batch_time_ms <= to_ms)
    return conditions


def future_driven(
    session: so.Session, query_id: str, from_ms: int | None, to_ms: int | None, tolerance_ms: int
) -> bool:
    """Whether a future-dated record drove the watermark of one of the query's batches from
    `from_ms` to `to_ms` (batch times, both included, either open): the record that set it
    was more than `tolerance_ms` ahead of that batch's time."""
    # The driver record is [key, event ms, offset]; ->> and a cast read its event time on
    # SQLite and PostgreSQL alike (as_integer() would cast to a 32-bit integer there).
    event_ms = sa.cast(Batch.watermark_driver_record[1].as_string(), sa.BigInteger)
    driven = sa.select(Batch.batch_id).where(
        *_batches_in(query_id, from_ms, to_ms), event_ms - Batch.batch_time_ms > tolerance_ms
    )
    return session.scalar(driven.limit(1)) is not None


def _first_and_last(
    session: so.Session, query_id: str, from_ms: int | None, to_ms: int | None
) -> tuple[int | None, int | None]:
    """The ids of the query's first and last batches with batch times in the range."""
    batch_ids = sa.select(Batch.batch_id).where(*_batches_in(query_id, from_ms, to_ms))
    first = session.scalar(batch_ids.order_by(Batch.batch_time_ms, Batch.batch_id).limit(1))
    last = session.scalar(
        batch_ids.order_by(Batch.batch_time_ms.desc(), Batch.batch_id.desc()).limit(1)
    )
    return first, last


def latest_batch_in(session: so.Session, query_id: str, from_ms: int, to_ms: int) -> Batch | None:
    """The query's newest batch with a batch time from `from_ms` to `to_ms` (half-open)."""
    return session.scalars(
        sa.select(Batch)
        .where(Batch.query_id == query_id, Batch.batch_time_ms >= from_ms)
        .where(Batch.batch_time_ms < to_ms)
        .order_by(Batch.batch_time_ms.desc(), Batch.batch_id.desc())
        .limit(1)
    ).first()


def driver_shares(session: so.Session, query_id: str, from_ms: int, to_ms: int) -> dict[str, int]:
    """How many batches from `from_ms` to `to_ms` (batch times, half-open) each partition drove
    the watermark in, by partition name; batches whose driver was not measured are left out."""
    partition = Batch.watermark_driver_partition
    rows = session.execute(
        sa.select(partition, sa.func.count())
        .where(Batch.query_id == query_id)
        .where(Batch.batch_time_ms >= from_ms, Batch.batch_time_ms < to_ms)
        .group_by(partition)
        .order_by(partition)
    )
    return {name: count for name, count in rows if name is not None}


def _future_rows(
    session: so.Session, from_ms: Mapping[str, int], to_ms: int | None
) -> list[StoredEventTimes]:
    """The partitions with future-dated records of the range's batches that have any (few:
    their own index serves), by query, newest batch first."""
    table = batch_event_times.TABLE
    conditions = [
        among(table.c.query_id, list(from_ms)),
        table.c.future_records > 0,
        table.c.batch_time_ms >= per_query(table.c.query_id, from_ms),
    ]
    if to_ms is not None:
        conditions.append(table.c.batch_time_ms < to_ms)
    statement = (
        sa.select(table).where(*conditions).order_by(table.c.query_id, table.c.batch_id.desc())
    )
    return [
        row for row in batch_event_times.partitions_in(session, statement) if row.future_records > 0
    ]


def future_dated(
    session: so.Session, query_id: str, from_ms: int, to_ms: int | None = None
) -> dict[str, FutureDated]:
    """Per partition with any, by name, the future-dated records of the batches from
    `from_ms` to `to_ms` (batch times, half-open; open without `to_ms`)."""
    return future_dated_since(session, {query_id: from_ms}, to_ms).get(query_id, {})


def future_dated_since(
    session: so.Session, from_ms: Mapping[str, int], to_ms: int | None = None
) -> dict[str, dict[str, FutureDated]]:
    """:func:`future_dated` of many queries (at most IN_CHUNK), each from its own `from_ms`,
    by query id: those with none are left out. Each partition keeps the samples of its newest
    batches, up to SAMPLES_PER_PARTITION."""
    partitions: dict[tuple[str, str], list[StoredEventTimes]] = {}
    for row in _future_rows(session, from_ms, to_ms):
        partitions.setdefault((row.query_id, row.partition), []).append(row)
    found: dict[str, dict[str, FutureDated]] = {}
    for (query_id, name), rows in sorted(partitions.items()):
        leads = [row.future_lead_ms for row in rows if row.future_lead_ms is not None]
        samples: list[Record] = []
        for row in rows:
            room = SAMPLES_PER_PARTITION - len(samples)
            samples.extend(tuple(sample) for sample in (row.future_samples or [])[:room])
        found.setdefault(query_id, {})[name] = FutureDated(
            sum(row.future_records for row in rows), max(leads, default=None), tuple(samples)
        )
    return found
