"""A look-back window's late and read records per partition, read from the running totals of
its first and last measured batches (store.batch_event_times), equal the sums over every
batch stored in it: with batches replayed, superseded by an older checkpoint's run, and
arriving after later ones."""

import sqlalchemy.orm as so

from monitor.store.read.windows import late_by_partitions
from monitor.store.write.writes import write_events
from tests.support.group_events import T0, A, B, events, progress
from tests.support.stores import stored_event_times


def summed_over(rows, since_ms):
    """Late and read records per partition of the batches from the first at `since_ms` on."""
    first = min((row.batch_id for row in rows if row.batch_time_ms >= since_ms), default=None)
    sums: dict[str, tuple[int, int]] = {}
    for row in rows:
        if first is not None and row.batch_id >= first:
            late, records = sums.get(row.partition, (0, 0))
            sums[row.partition] = (late + row.late_records, records + row.records)
    return sums


def test_window_sums_from_two_batches_equal_the_sums_over_the_window(engine):
    written = events()
    # Query B's batch 3 arrives after its batch 4: the later totals take it in.
    late_arrival = progress(B, "b1", 3, T0 + 3 * 60_000 + 500)
    written = [e for e in written if not (e.query_id == B and getattr(e, "batch_id", None) == 3)]
    write_events(engine, written)
    write_events(engine, [late_arrival])
    for query_id in (A, B):
        rows = stored_event_times(engine, query_id)
        assert rows and any(row.late_records for row in rows)
        for since_ms in sorted({row.batch_time_ms for row in rows}) + [T0 - 1]:
            with so.Session(engine) as session:
                found = late_by_partitions(session, {query_id: since_ms}).get(query_id, {})
            expected = summed_over(rows, since_ms)
            assert {name: tuple(counts) for name, counts in found.items()} == expected, since_ms
