"""The lateness over ranges older than the batches kept, read from the partitions' rollups."""

import random

import pytest
import sqlalchemy.orm as so

from monitor.store.read.drop_causes import lateness
from monitor.store.read.lateness_reads import lateness_over, rollup_lateness
from monitor.store.schema.models import Query
from monitor.store.tiers.minutes import MINUTE_MS, PARTITION_HOURS, PARTITION_MINUTES
from monitor.store.tiers.prune import Cutoffs, prune
from monitor.store.write.writes import write_events
from tests.support.group_events import T0, A, B, events

FIRST_MINUTE = T0 - T0 % MINUTE_MS


def test_the_lateness_of_any_range_of_minutes_is_the_batches_lateness(engine):
    write_events(engine, events())
    rng = random.Random(3)
    with so.Session(engine) as session:
        for query_id in (A, B):
            for _ in range(10):
                first, last = sorted(rng.sample(range(16), 2))
                from_ms, to_ms = FIRST_MINUTE + first * MINUTE_MS, FIRST_MINUTE + last * MINUTE_MS
                expected = lateness(session, query_id, from_ms, to_ms - 1)
                read = rollup_lateness(session, query_id, PARTITION_MINUTES, from_ms, to_ms - 1)
                assert read == expected, (query_id, first, last)
            whole = lateness(session, query_id)
            assert whole[0].late_records > 0
            assert rollup_lateness(session, query_id, PARTITION_HOURS) == whole


# A cutoff within a day: PostgreSQL's batches expire by whole days (test_prune covers them).
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_range_older_than_the_batches_kept_is_read_from_the_finest_rollups_kept(engine):
    write_events(engine, events())
    with so.Session(engine) as session:
        whole = lateness(session, B)
    prune(engine, Cutoffs(FIRST_MINUTE + 2 * MINUTE_MS, 0, 0))
    with so.Session(engine) as session:
        query = session.get_one(Query, B)
        read = lateness_over(session, query)
        assert (read.resolution, read.items) == ("minute", whole)
        kept = lateness_over(session, query, FIRST_MINUTE + 2 * MINUTE_MS)
        assert kept.resolution == "batch"
        assert kept.items[0].records < whole[0].records
    prune(engine, Cutoffs(FIRST_MINUTE + 2 * MINUTE_MS, FIRST_MINUTE + MINUTE_MS, 0))
    with so.Session(engine) as session:
        read = lateness_over(session, session.get_one(Query, B))
        assert (read.resolution, read.items) == ("hour", whole)
