"""Health derived as batches are stored: idle, stalled, rewound, skew, Flink's watermark."""

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.schema.models import Batch, Query
from tests.support.progress import EPOCH, QUERY, write
from tests.support.stores import stored_event_times, stored_partitions


def flags(engine, batch_id):
    rows = [row for row in stored_partitions(engine) if row.batch_id == batch_id]
    return [(r.partition, r.idle, r.stalled, r.rewound) for r in sorted(rows)]


def batch(engine, batch_id):
    with so.Session(engine) as session:
        return session.scalars(sa.select(Batch).where(Batch.batch_id == batch_id)).one()


def test_a_caught_up_partition_with_no_new_data_becomes_idle(engine):
    write(engine, 0, 0, ends=[10, 10], latests=[10, 10])
    write(engine, 1, 5, ends=[20, 10], latests=[20, 10])
    write(engine, 2, 11, ends=[30, 10], latests=[30, 10])
    assert flags(engine, 1) == [("t/0", False, False, False), ("t/1", False, False, False)]
    assert flags(engine, 2) == [("t/0", False, False, False), ("t/1", True, False, False)]


def test_a_partition_with_a_backlog_that_does_not_advance_is_stalled_never_idle(engine):
    write(engine, 0, 0, ends=[10, 10], latests=[10, 50])
    write(engine, 1, 15, ends=[20, 10], latests=[20, 50])
    write(engine, 2, 25, ends=[30, 10], latests=[30, 50])
    assert flags(engine, 1)[1] == ("t/1", False, False, False)
    assert flags(engine, 2)[1] == ("t/1", False, True, False)


def test_an_offset_that_goes_back_is_rewound(engine):
    write(engine, 0, 0, ends=[10, 10], latests=[10, 10])
    write(engine, 1, 1, ends=[4, 10], latests=[10, 10])
    assert flags(engine, 1)[0] == ("t/0", False, False, True)


def stored_batches(engine):
    with so.Session(engine) as session:
        batch_ids = session.scalars(sa.select(Batch.batch_id).order_by(Batch.batch_id)).all()
        return batch_ids, session.get_one(Query, QUERY).last_batch_id


def read_ten_a_batch(engine, batches):
    for n in range(batches):
        offsets = dict(starts=[10 * n] * 2, ends=[10 * (n + 1)] * 2, latests=[50, 50])
        write(engine, n, n, watermark_s=n, **offsets)


def test_a_restore_from_an_older_checkpoint_is_rewound_and_supersedes_later_batches(engine):
    read_ten_a_batch(engine, 4)
    # Restarted from the checkpoint of batch 1: batch 2 again, from offset 20, with its W.
    again = dict(starts=[20, 20], ends=[30, 30], latests=[50, 50], watermark_s=2, run="r2")
    write(engine, 2, 10, **again)
    assert flags(engine, 2) == [("t/0", False, False, True), ("t/1", False, False, True)]
    assert batch(engine, 2).watermark_rewound
    assert stored_batches(engine) == ([0, 1, 2], 2), "batch 3 was superseded"
    write(engine, 3, 11, starts=[30, 30], ends=[40, 40], latests=[50, 50], watermark_s=3, run="r2")
    assert [f[3] for f in flags(engine, 3)] == [False, False]
    assert not batch(engine, 3).watermark_rewound


def test_a_batch_replayed_after_a_crash_is_not_rewound(engine):
    read_ten_a_batch(engine, 3)
    write(engine, 2, 5, starts=[20, 20], ends=[30, 30], latests=[50, 50], watermark_s=2, run="r2")
    assert [f[3] for f in flags(engine, 2)] == [False, False]
    assert not batch(engine, 2).watermark_rewound
    assert stored_batches(engine) == ([0, 1, 2], 2)


def test_the_query_watermark_stalls_while_input_arrives_and_rewinds(engine):
    write(engine, 0, 0, ends=[10], latests=[10], watermark_s=5)
    write(engine, 1, 10, ends=[20], latests=[20], watermark_s=5)
    write(engine, 2, 21, ends=[30], latests=[30], watermark_s=5)
    write(engine, 3, 22, ends=[40], latests=[40], watermark_s=9)
    write(engine, 4, 23, ends=[50], latests=[50], watermark_s=3)
    assert [batch(engine, n).watermark_stalled for n in range(5)] == [
        False,
        False,
        True,
        False,
        False,
    ]
    assert [batch(engine, n).watermark_rewound for n in range(5)] == [
        False,
        False,
        False,
        False,
        True,
    ]


def test_skew_flink_watermark_and_time_lag_leave_idle_partitions_out(engine):
    write(
        engine,
        0,
        0,
        ends=[10, 10, 10],
        latests=[10, 10, 10],
        event_max={0: EPOCH + 9_000, 1: EPOCH + 5_000, 2: EPOCH + 1_000},
    )
    first = batch(engine, 0)
    assert (first.watermark_skew_ms, first.flink_watermark_ms) == (8_000, EPOCH)
    write(
        engine,
        1,
        12,
        ends=[20, 20, 10],
        latests=[20, 20, 10],
        event_max={0: EPOCH + 11_000, 1: EPOCH + 6_000},
    )
    second = batch(engine, 1)
    assert flags(engine, 1)[2] == ("t/2", True, False, False)
    assert (second.watermark_skew_ms, second.flink_watermark_ms) == (5_000, EPOCH + 5_000)
    lags = {
        row.partition: row.time_lag_ms for row in stored_event_times(engine) if row.batch_id == 1
    }
    assert lags == {"t/0": 1_000, "t/1": 6_000, "t/2": 11_000}


def test_skew_counts_the_idle_partition_that_drives_the_watermark(engine):
    # A skewed backfill: t/0 read a minute ahead of the others, caught up and went idle; its
    # record still sets Spark's watermark, a minute ahead of where t/1 and t/2 are.
    ahead = {0: EPOCH + 60_000, 1: EPOCH + 1_000, 2: EPOCH + 2_000}
    write(engine, 0, 0, ends=[10, 10, 10], latests=[10, 20, 20], event_max=ahead)
    behind = {1: EPOCH + 3_000, 2: EPOCH + 3_500}
    write(engine, 1, 12, ends=[10, 20, 20], latests=[10, 30, 30], event_max=behind)
    second = batch(engine, 1)
    assert flags(engine, 1)[0] == ("t/0", True, False, False)
    assert second.watermark_driver_partition == "t/0"
    # W_p = M_p - 1 s: t/0's 59 s against t/1's 2 s; Flink's W leaves the idle t/0 out.
    assert (second.watermark_skew_ms, second.flink_watermark_ms) == (57_000, EPOCH + 2_000)
