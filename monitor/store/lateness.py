"""What explains dropped data over a range of batches, from what the instrumented operator
measured: who drove the watermark, which records were future-dated, and how late and how close
the records were (the per-batch lateness histograms, summed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.health.lateness import Histogram, smallest_delay, summed
from monitor.store.models import Batch, PartitionEventTime

# Future-dated samples kept per partition: the newest batches' first ones.
FUTURE_SAMPLES = 5


@dataclass(frozen=True)
class Lateness:
    """A partition's (or, with partition None, the whole query's) histograms over a range,
    with the delay in force at its end."""

    partition: str | None
    delay_ms: int
    late: Histogram
    slack: Histogram

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


def lateness(
    session: so.Session, query_id: str, from_ms: int | None = None, to_ms: int | None = None
) -> list[Lateness]:
    """The query's lateness over its batches from `from_ms` to `to_ms` (batch times, either
    open): the whole query first, then each partition by name; [] where none was measured."""
    table = PartitionEventTime
    statement = (
        sa.select(table.partition, table.delay_ms, table.late_buckets, table.slack_buckets)
        .where(table.query_id == query_id, table.late_buckets.is_not(None))
        .order_by(table.batch_id)
    )
    if from_ms is not None:
        statement = statement.where(table.batch_time_ms >= from_ms)
    if to_ms is not None:
        statement = statement.where(table.batch_time_ms <= to_ms)
    late: dict[str, list[Histogram]] = {}
    slack: dict[str, list[Histogram]] = {}
    delays: dict[str, int] = {}
    for partition, delay_ms, late_buckets, slack_buckets in session.execute(statement):
        late.setdefault(partition, []).append(late_buckets or {})
        slack.setdefault(partition, []).append(slack_buckets or {})
        delays[partition] = delay_ms
    if not delays:
        return []
    names = sorted(delays)
    whole = Lateness(
        None,
        max(delays.values()),
        summed(h for name in names for h in late[name]),
        summed(h for name in names for h in slack[name]),
    )
    return [whole] + [
        Lateness(name, delays[name], summed(late[name]), summed(slack[name])) for name in names
    ]


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


@dataclass(frozen=True)
class FutureDated:
    """A partition's future-dated records over a range: how many, the largest lead ahead of
    their batch's time, and samples ([key, event ms, offset]) from its newest such batches."""

    partition: str
    records: int
    lead_ms: int | None
    samples: list[list[Any]]


def _future_samples(
    session: so.Session, query_id: str, from_ms: int, to_ms: int
) -> dict[str, list[list[Any]]]:
    table = PartitionEventTime
    newest = (
        sa.func.row_number()
        .over(partition_by=table.partition, order_by=table.batch_id.desc())
        .label("newest")
    )
    ranked = (
        sa.select(table.partition, table.batch_id, table.future_samples, newest)
        .where(table.query_id == query_id, table.future_records > 0)
        .where(table.batch_time_ms >= from_ms, table.batch_time_ms < to_ms)
        .subquery()
    )
    rows = session.execute(
        sa.select(ranked.c.partition, ranked.c.future_samples)
        .where(ranked.c.newest <= FUTURE_SAMPLES)
        .order_by(ranked.c.partition, ranked.c.batch_id.desc())
    )
    samples: dict[str, list[list[Any]]] = {}
    for partition, batch_samples in rows:
        kept = samples.setdefault(partition, [])
        kept.extend((batch_samples or [])[: FUTURE_SAMPLES - len(kept)])
    return samples


def future_dated(session: so.Session, query_id: str, from_ms: int, to_ms: int) -> list[FutureDated]:
    """Per partition with any, by name, the future-dated records of the batches from
    `from_ms` to `to_ms` (batch times, half-open)."""
    table = PartitionEventTime
    rows = session.execute(
        sa.select(
            table.partition, sa.func.sum(table.future_records), sa.func.max(table.future_lead_ms)
        )
        .where(table.query_id == query_id, table.future_records > 0)
        .where(table.batch_time_ms >= from_ms, table.batch_time_ms < to_ms)
        .group_by(table.partition)
        .order_by(table.partition)
    ).all()
    if not rows:
        return []
    samples = _future_samples(session, query_id, from_ms, to_ms)
    return [
        FutureDated(partition, int(records), lead_ms, samples.get(partition, []))
        for partition, records, lead_ms in rows
    ]
