"""Per-partition event times in the store: running max, W_p, late totals, replayed batches."""

from collections import Counter

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.schema.models import Batch
from monitor.store.write.writes import write_event
from tests.support.progress import fixture_batch, operator_observation
from tests.support.stores import stored_event_times

QUERY, OTHER_QUERY, RUN = "22222222-2222-2222-2222-222222222222", "other-query", "run-1"
T0 = 1_700_000_000_000
DELAY = 10_000
BATCH_TIME_MS = 1_795_316_400_000  # 2026-11-22T03:00:00Z, the time of batch 0
FIELDS = (
    "records",
    "min_event_ms",
    "max_event_ms",
    "late_records",
    "late_watermark_ms",
    "delay_ms",
    "max_event_time_ms",
    "partition_watermark_ms",
    "late_records_total",
)

# A carried-forward row is checked without late_watermark_ms: it repeats the previous batch's
# threshold, not this batch's; which one it should hold is not decided yet.
CARRIED = (
    "records",
    "min_event_ms",
    "max_event_ms",
    "late_records",
    "delay_ms",
    "max_event_time_ms",
    "partition_watermark_ms",
    "late_records_total",
    "batch_time_ms",
    "late_samples",
)


def part(records, min_ms, max_ms, late=0, samples=(), **more):
    """One partition's figures as a task reports them (the diagnosis figures only as given)."""
    return {
        "records": records,
        "min_ms": min_ms,
        "max_ms": max_ms,
        "late": late,
        "samples": [list(sample) for sample in samples],
    } | more


def batch(batch_id, partitions, late_watermark_ms=None, query_id=QUERY, run_id=RUN):
    """A progress event of an instrumented query whose one task measured `partitions` (another
    measured nothing); a replay comes from a run that began later (Spark restarted from its
    checkpoint)."""
    observed = operator_observation(batch_id, partitions, DELAY, late_watermark_ms, 1)
    timestamp = f"2026-11-22T03:00:{batch_id:02d}.000Z"
    return fixture_batch(query_id, batch_id, run_id, timestamp=timestamp, observedMetrics=observed)


def rows(engine, fields=FIELDS, query_id=QUERY):
    """The stored rows as {(batch, partition): (fields...)}; fails on a duplicated key."""
    stored = stored_event_times(engine, query_id)
    keys = Counter((row.batch_id, row.partition) for row in stored)
    assert [key for key, n in keys.items() if n > 1] == []
    return {
        (row.batch_id, row.partition): tuple(getattr(row, name) for name in fields)
        for row in stored
    }


# Batch 0: no late watermark yet. Batch 1: the late watermark is batch 0's query watermark,
# max event time (T0 + 30 s) - delay; b is behind it. Batch 2: only a has new records.
BATCH_0 = {
    "a": part(3, T0, T0 + 30_000),
    "b": part(2, T0 + 5_000, T0 + 20_000),
}
BATCH_1 = {
    "a": part(2, T0 + 31_000, T0 + 40_000),
    "b": part(4, T0 + 12_000, T0 + 25_000, late=3),
}
BATCH_2 = {"a": part(2, T0 + 29_000, T0 + 45_000, late=1)}


def write_three_batches(engine):
    write_event(engine, batch(0, BATCH_0))
    write_event(engine, batch(1, BATCH_1, late_watermark_ms=T0 + 20_000))
    write_event(engine, batch(2, BATCH_2, late_watermark_ms=T0 + 30_000))


def test_running_max_partition_watermark_and_late_totals(engine):
    write_three_batches(engine)
    stored = rows(engine)
    del stored[(2, "b")]  # the carried-forward row has its own test
    assert stored == {
        (0, "a"): (3, T0, T0 + 30_000, 0, None, DELAY, T0 + 30_000, T0 + 20_000, 0),
        (0, "b"): (2, T0 + 5_000, T0 + 20_000, 0, None, DELAY, T0 + 20_000, T0 + 10_000, 0),
        (1, "a"): (
            *(2, T0 + 31_000, T0 + 40_000, 0, T0 + 20_000, DELAY),
            *(T0 + 40_000, T0 + 30_000, 0),
        ),
        (1, "b"): (
            *(4, T0 + 12_000, T0 + 25_000, 3, T0 + 20_000, DELAY),
            *(T0 + 25_000, T0 + 15_000, 3),
        ),
        (2, "a"): (
            *(2, T0 + 29_000, T0 + 45_000, 1, T0 + 30_000, DELAY),
            *(T0 + 45_000, T0 + 35_000, 1),
        ),
    }


def test_a_partition_without_records_is_carried_forward(engine):
    write_three_batches(engine)
    assert rows(engine, CARRIED)[(2, "b")] == (
        *(0, None, None, 0, DELAY),
        *(T0 + 25_000, T0 + 15_000, 3, BATCH_TIME_MS + 2_000, []),
    )
    assert set(rows(engine)) == {(batch_id, name) for batch_id in range(3) for name in "ab"}


def test_out_of_order_data_never_moves_the_partition_watermark_back(engine):
    write_three_batches(engine)
    behind = {"a": part(1, T0 + 33_000, T0 + 33_000), "b": part(1, T0 + 24_000, T0 + 24_000)}
    write_event(engine, batch(3, behind, late_watermark_ms=T0 + 35_000))
    stored = rows(engine)
    assert (stored[(3, "a")], stored[(3, "b")]) == (
        (1, T0 + 33_000, T0 + 33_000, 0, T0 + 35_000, DELAY, T0 + 45_000, T0 + 35_000, 1),
        (1, T0 + 24_000, T0 + 24_000, 0, T0 + 35_000, DELAY, T0 + 25_000, T0 + 15_000, 3),
    )


REPLAYED_1 = {"a": part(9, T0 + 1_000, T0 + 90_000, late=5)}


def test_a_replayed_batch_gives_identical_rows(engine):
    write_event(engine, batch(0, BATCH_0))
    write_event(engine, batch(1, BATCH_1, late_watermark_ms=T0 + 20_000))
    first = rows(engine, (*FIELDS, "batch_time_ms", "late_samples"))

    write_event(engine, batch(1, REPLAYED_1, late_watermark_ms=T0 + 20_000, run_id="run-2"))
    replayed = rows(engine)
    assert rows(engine, CARRIED)[(1, "b")] == (
        *(0, None, None, 0, DELAY),
        *(T0 + 20_000, T0 + 10_000, 0, BATCH_TIME_MS + 1_000, []),
    )
    del replayed[(1, "b")]
    assert replayed == {
        (0, "a"): first[(0, "a")][: len(FIELDS)],
        (0, "b"): first[(0, "b")][: len(FIELDS)],
        (1, "a"): (9, T0 + 1_000, T0 + 90_000, 5, T0 + 20_000, DELAY, T0 + 90_000, T0 + 80_000, 5),
    }

    write_event(engine, batch(1, BATCH_1, late_watermark_ms=T0 + 20_000, run_id="run-3"))
    assert rows(engine, (*FIELDS, "batch_time_ms", "late_samples")) == first


def test_the_batch_after_a_replay_builds_on_the_replayed_rows(engine):
    write_event(engine, batch(0, BATCH_0))
    write_event(engine, batch(1, BATCH_1, late_watermark_ms=T0 + 20_000))
    write_event(engine, batch(1, REPLAYED_1, late_watermark_ms=T0 + 20_000, run_id="run-2"))
    after = {"a": part(1, T0 + 50_000, T0 + 50_000), "b": part(2, T0 + 21_000, T0 + 26_000, 2)}
    write_event(engine, batch(2, after, late_watermark_ms=T0 + 80_000, run_id="run-2"))
    stored = rows(engine)
    assert (stored[(2, "a")], stored[(2, "b")]) == (
        (1, T0 + 50_000, T0 + 50_000, 0, T0 + 80_000, DELAY, T0 + 90_000, T0 + 80_000, 5),
        (2, T0 + 21_000, T0 + 26_000, 2, T0 + 80_000, DELAY, T0 + 26_000, T0 + 16_000, 2),
    )
    assert len(stored) == 6


@pytest.mark.parametrize(
    "observed",
    [None, {"rows": {"count": 3}}],
    ids=["no-observed-metrics", "another-observation"],
)
def test_a_query_that_is_not_instrumented_writes_no_event_times(engine, observed):
    write_event(engine, batch(0, BATCH_0, query_id=OTHER_QUERY))
    for batch_id in (0, 1):
        changes = {} if observed is None else {"observedMetrics": observed}
        write_event(engine, fixture_batch(QUERY, batch_id, RUN, **changes))
    with so.Session(engine) as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(Batch)) == 3
    assert rows(engine) == {}
    assert set(rows(engine, query_id=OTHER_QUERY)) == {(0, "a"), (0, "b")}


def test_late_samples_are_stored_as_key_time_offset_lists(engine):
    # Kept smallest first by (offset, event time, key), a missing offset first.
    samples = [("scooter-1-4", T0 + 12_000, 204), (None, T0 + 15_000, None)]
    late = {"b": part(4, T0 + 12_000, T0 + 25_000, late=2, samples=samples)}
    write_event(engine, batch(0, BATCH_0))
    write_event(engine, batch(1, late, late_watermark_ms=T0 + 20_000))
    assert rows(engine, ("late_samples",)) == {
        (0, "a"): ([],),
        (0, "b"): ([],),
        (1, "a"): ([],),
        (1, "b"): ([[None, T0 + 15_000, None], ["scooter-1-4", T0 + 12_000, 204]],),
    }


def test_a_batch_after_a_lost_one_builds_on_its_own_querys_last_rows(engine):
    write_event(engine, batch(0, BATCH_0))
    # Batch 1 of the query never reached the store; another query's batch 1 did.
    write_event(engine, batch(1, {"a": part(1, T0, T0 + 99_000)}, query_id=OTHER_QUERY))
    write_event(engine, batch(2, BATCH_2, late_watermark_ms=T0 + 20_000))
    assert rows(engine, ("records", "max_event_time_ms", "late_records_total")) == {
        (0, "a"): (3, T0 + 30_000, 0),
        (0, "b"): (2, T0 + 20_000, 0),
        (2, "a"): (2, T0 + 45_000, 1),
        (2, "b"): (0, T0 + 20_000, 0),
    }


def drivers(engine):
    """Each stored batch's watermark driver: {batch: (partition, record)}."""
    with so.Session(engine) as session:
        stored = session.execute(
            sa.select(
                Batch.batch_id, Batch.watermark_driver_partition, Batch.watermark_driver_record
            ).where(Batch.query_id == QUERY)
        )
        return {batch_id: (partition, record) for batch_id, partition, record in stored}


def test_the_watermark_driver_is_the_record_with_the_largest_event_time_read_before(engine):
    """Batch N's watermark is the largest event time of batches 0..N-1 less the delay."""
    write_event(
        engine, batch(0, {"a": part(1, T0, T0 + 30_000, max_record=["a1", T0 + 30_000, 7])})
    )
    write_event(
        engine,
        batch(1, {"b": part(1, T0, T0 + 40_000, max_record=["b1", T0 + 40_000, 3])}, T0),
    )
    # a reaches T0 + 40 s too, later than b did: b set the watermark, a only meets it.
    tie = {"a": part(1, T0 + 40_000, T0 + 40_000, max_record=["a2", T0 + 40_000, 8])}
    write_event(engine, batch(2, tie, T0 + 20_000))
    write_event(engine, batch(3, {"a": part(1, T0, T0, max_record=["a3", T0, 9])}, T0 + 30_000))
    assert drivers(engine) == {
        0: (None, None),
        1: ("a", ["a1", T0 + 30_000, 7]),
        2: ("b", ["b1", T0 + 40_000, 3]),
        3: ("b", ["b1", T0 + 40_000, 3]),
    }
    assert rows(engine, ("max_event_time_record", "max_event_time_batch"))[(3, "a")] == (
        ["a2", T0 + 40_000, 8],
        2,
    )


@pytest.mark.parametrize("order", [(0, 1, 2, 3), (3, 1, 0, 2), (2, 3, 1, 0), (1, 3, 2, 0)])
def test_the_watermark_driver_does_not_depend_on_the_order_batches_arrive_in(engine, order):
    """The issue's probe: a batch stored before its predecessor never got a driver."""
    batches = [
        batch(0, {"a": part(1, T0, T0 + 30_000, max_record=["a1", T0 + 30_000, 7])}),
        batch(1, {"b": part(1, T0, T0 + 40_000, max_record=["b1", T0 + 40_000, 3])}, T0),
        batch(2, {"a": part(1, T0, T0 + 50_000, max_record=["a2", T0 + 50_000, 8])}, T0),
        batch(3, {"b": part(1, T0, T0, max_record=["b2", T0, 9])}, T0 + 40_000),
    ]
    for batch_id in order:
        write_event(engine, batches[batch_id])
    assert drivers(engine) == {
        0: (None, None),
        1: ("a", ["a1", T0 + 30_000, 7]),
        2: ("b", ["b1", T0 + 40_000, 3]),
        3: ("a", ["a2", T0 + 50_000, 8]),
    }


def test_partitions_reaching_the_largest_event_time_in_one_batch_are_named_by_name(engine):
    both = {
        "b": part(1, T0, T0 + 9_000, max_record=["b1", T0 + 9_000, 4]),
        "a": part(1, T0, T0 + 9_000, max_record=["a1", T0 + 9_000, 5]),
    }
    write_event(engine, batch(0, both))
    write_event(engine, batch(1, {"c": part(1, T0, T0, max_record=["c1", T0, 1])}, T0))
    assert drivers(engine)[1] == ("a", ["a1", T0 + 9_000, 5])


def test_a_batch_reaching_a_partitions_max_again_keeps_the_record_that_reached_it_first(engine):
    first = {"a": part(1, T0, T0 + 5_000, max_record=["first", T0 + 5_000, 1])}
    again = {"a": part(1, T0 + 5_000, T0 + 5_000, max_record=["again", T0 + 5_000, 2])}
    write_event(engine, batch(0, first))
    write_event(engine, batch(1, again, T0))
    assert rows(engine, ("max_event_time_record",)) == {
        (0, "a"): (["first", T0 + 5_000, 1],),
        (1, "a"): (["first", T0 + 5_000, 1],),
    }
    assert drivers(engine)[1] == ("a", ["first", T0 + 5_000, 1])


def test_future_dated_records_and_lateness_buckets_are_stored_per_partition(engine):
    future = part(
        3,
        T0,
        T0 + 7_200_000,
        late=1,
        future=1,
        future_lead_ms=7_200_000,
        future_samples=[["s-17", T0 + 7_200_000, 8812]],
        late_buckets={"0": 1},
        slack_buckets={"3": 1, "23": 1},
    )
    write_event(engine, batch(0, BATCH_0))
    write_event(engine, batch(1, {"a": future}, T0 + 20_000))
    fields = ("future_records", "future_lead_ms", "future_samples", "late_buckets", "slack_buckets")
    stored = rows(engine, fields)
    assert stored[(1, "a")] == (
        1,
        7_200_000,
        [["s-17", T0 + 7_200_000, 8812]],
        {"0": 1},
        {"3": 1, "23": 1},
    )
    # Carried forward without records: nothing future-dated, nothing measured.
    assert stored[(1, "b")] == (0, None, [], {}, {})


def test_each_row_keeps_its_partitions_histograms_summed_so_far(engine):
    def measured(late, slack):
        return part(1, T0, T0, late_buckets=late, slack_buckets=slack)

    write_event(engine, batch(0, {"a": measured({}, {"3": 2})}))
    write_event(engine, batch(1, {"a": measured({"0": 1}, {"3": 1, "9": 4})}, T0))
    write_event(engine, batch(2, {"b": measured({"5": 7}, {})}, T0))
    assert rows(engine, ("late_buckets_total", "slack_buckets_total")) == {
        (0, "a"): ({}, {"3": 2}),
        (1, "a"): ({"0": 1}, {"3": 3, "9": 4}),
        (2, "a"): ({"0": 1}, {"3": 3, "9": 4}),
        (2, "b"): ({"5": 7}, {}),
    }
    # A replay of batch 1 replaces its totals, and batch 2 builds on them again.
    write_event(engine, batch(1, {"a": measured({}, {"9": 1})}, T0, run_id="run-2"))
    write_event(engine, batch(2, {"b": measured({"5": 7}, {})}, T0, run_id="run-2"))
    assert rows(engine, ("late_buckets_total", "slack_buckets_total"))[(2, "a")] == (
        {},
        {"3": 2, "9": 1},
    )
