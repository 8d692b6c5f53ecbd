"""Stateful operators' state read from stored batches over the window (store.state_growth),
and the rule state_growing on it."""

import sqlalchemy.orm as so

from monitor.alerts.rules import RULES
from monitor.health.facts import Thresholds
from monitor.store.read.batches import latest_batch
from monitor.store.read.read_facts import read_facts
from monitor.store.schema.models import Query
from tests.support.progress import EPOCH, QUERY, write_state_batch


def facts_now(engine, batch_id):
    with so.Session(engine) as session:
        query = session.get_one(Query, QUERY)
        now = EPOCH + batch_id * 10_000
        return read_facts(session, query, latest_batch(session, QUERY), now, Thresholds())


def test_state_that_grows_under_a_stalled_watermark_is_found_and_alerted(engine):
    for b in range(6):
        snapshot = {"SnapshotLastUploaded.partition_0_default": 2, "rocksdbCommitFlushLatency": b}
        counted = ("dedupe", 100 * (b + 1), 100, snapshot)
        # trackTotalNumberOfRows=false: 0 rows however many were put in; the SST files grow.
        uncounted = ("agg", 0, 50, {"rocksdbSstFileSize": 4_096 * (b + 1)})
        write_state_batch(engine, b, 1, [counted, uncounted])
    facts = facts_now(engine, 5)
    assert facts.watermark_stalled, "the watermark has not moved for 50 s: stalled after 20"
    dedupe, agg = facts.state
    assert (dedupe.operator, dedupe.rows, dedupe.memory_bytes) == ("dedupe", 600, 1_600)
    assert dedupe.rows_per_second == 10.0 and dedupe.growing
    # Batch 5 writes version 6; the partition's last snapshot is version 2.
    assert (dedupe.commit_latency_ms, dedupe.snapshot_lag) == (5, 4)
    assert (agg.rows, agg.rows_per_second, agg.store_bytes) == (None, None, 24_576)
    assert agg.store_bytes_per_second == 409.6 and agg.growing
    finding = RULES["state_growing"].check(facts, EPOCH + 50_000, {})
    assert finding is not None and finding.value == 409.6
    assert finding.message == (
        "state grows while the watermark is stalled: dedupe #0 by 10.0 rows/s to 600 rows, "
        "agg #1 by 0.4 KiB/s (rows not counted)"
    )


def test_state_that_grows_while_the_watermark_moves_is_not_alerted(engine):
    for b in range(6):
        write_state_batch(engine, b, 1 + 10 * b, [("dedupe", 100 * (b + 1), 100, {})])
    facts = facts_now(engine, 5)
    assert not facts.watermark_stalled and facts.state[0].growing
    assert RULES["state_growing"].check(facts, EPOCH + 50_000, {}) is None
