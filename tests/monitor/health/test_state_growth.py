"""A stateful operator's state over a window (health.state_growth)."""

from monitor.health.state_growth import (
    OperatorPoint,
    assess_operator,
    commit_latency_ms,
    growing_while_stalled,
    rows_in_state,
    snapshot_lag,
)


def points(rows, store=None):
    store = store or [None] * len(rows)
    return [
        OperatorPoint(i * 10_000, r, 1_000 * (i + 1), s)
        for i, (r, s) in enumerate(zip(rows, store, strict=True))
    ]


def test_a_total_of_0_from_a_batch_that_put_rows_in_is_not_counted():
    assert rows_in_state(0, 50, 0) is None  # trackTotalNumberOfRows=false
    assert rows_in_state(0, 5, 5) == 0  # every row put in was taken out again
    assert rows_in_state(0, 0, 0) == 0
    assert rows_in_state(350, 50, 0) == 350


def test_rocksdb_s_commit_latencies_add_up_and_the_oldest_snapshot_gives_the_lag():
    custom = {
        "rocksdbCommitFlushLatency": 8,
        "rocksdbCommitCheckpointLatency": 14,
        "rocksdbCommitCompactLatency": 0,
        "rocksdbGetLatency": 3,
        "SnapshotLastUploaded.partition_0_default": 6,
        "SnapshotLastUploaded.partition_1_default": 4,
    }
    assert commit_latency_ms(custom) == 22
    # Batch 9 writes version 10; partition 1's last snapshot is version 4.
    assert snapshot_lag(custom, 9) == 6
    assert commit_latency_ms({"numDroppedDuplicateRows": 0}) is None
    assert snapshot_lag({"SnapshotLastUploaded.partition_0_default": -1}, 9) is None


def test_state_that_never_falls_and_ends_higher_grows():
    growing = assess_operator(0, "dedupe", points([100, 150, 150, 240]), 20, 2)
    assert growing.growing and growing.rows == 240
    assert growing.rows_per_second == 4.2  # least squares over the four
    evicting = assess_operator(0, "dedupe", points([100, 150, 90, 240]), None, None)
    assert not evicting.growing


def test_uncounted_rows_grow_by_the_store_s_size():
    uncounted = assess_operator(1, "agg", points([None, None, None], [1_000, 2_000, 3_000]), 0, 0)
    assert uncounted.rows is None and uncounted.rows_per_second is None
    assert uncounted.growing and uncounted.store_bytes_per_second == 100.0


def test_growth_counts_only_while_the_watermark_is_stalled():
    grows = assess_operator(0, "dedupe", points([1, 2, 3]), None, None)
    still = assess_operator(1, "agg", points([3, 3, 3]), None, None)
    assert growing_while_stalled([grows, still], watermark_stalled=True) == [grows]
    assert growing_while_stalled([grows, still], watermark_stalled=False) == []
