"""How late and how close a query's records were over a range of batches, summed from the
per-batch lateness histograms the instrumented operator measured."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.health.lateness import Histogram, smallest_delay, summed
from monitor.store.models import PartitionEventTime


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
