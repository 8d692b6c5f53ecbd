"""The set-based write path: events written together as one group, or in groups of any size, store
exactly what they store written one at a time, in every table, replays and restarts included."""

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from monitor.store.schema.engine import create_engine
from monitor.store.write.writes import write_event, write_events
from tests.support.databases import create_database, drop_database
from tests.support.group_events import MINUTE, T0, A, B, events, progress
from tests.support.stores import POSTGRES_SERVER, migrated, stored_rows

TABLES = (
    "queries",
    "runs",
    "batches",
    "state_operators",
    "sources",
    "batch_offsets",
    "batch_event_times",
    "partition_minutes",
    "partition_hours",
    "timer_snapshots",
)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_urls(request, tmp_path, postgres_template) -> Iterator[list[str]]:
    """Three migrated, empty stores on one backend."""
    if request.param == "sqlite":
        yield [migrated(f"sqlite:///{tmp_path / f'store{n}.db'}") for n in range(3)]
        return
    urls = [
        create_database(POSTGRES_SERVER, "wmon_test", template=postgres_template) for _ in range(3)
    ]
    yield urls
    for url in urls:
        drop_database(url)


def contents(url):
    engine = create_engine(url)
    try:
        return {query: stored_rows(engine, query, tables=TABLES) for query in (A, B)}
    finally:
        engine.dispose()


def test_one_group_and_groups_of_three_store_what_single_events_store(store_urls):
    one_by_one, whole, by_three = store_urls
    written = events()
    engine = create_engine(one_by_one)
    for event in written:
        write_event(engine, event)
    engine.dispose()
    engine = create_engine(whole)
    write_events(engine, written)
    engine.dispose()
    engine = create_engine(by_three)
    for start in range(0, len(written), 3):
        write_events(engine, written[start : start + 3])
    engine.dispose()

    expected = contents(one_by_one)
    assert contents(whole) == expected
    assert contents(by_three) == expected

    # What the comparison covered: the restart replaced batches 4 to 7 with 4 to 6, and each
    # health flag was derived somewhere.
    alpha, beta = expected[A], expected[B]
    assert [row["batch_id"] for row in alpha["batches"]] == [0, 1, 2, 3, 4, 5, 6]
    assert {row["run_id"] for row in alpha["batches"] if row["batch_id"] >= 4} == {"a3"}
    assert any(row["stalled"] for row in alpha["batch_offsets"])
    assert any(row["rewound"] for row in alpha["batch_offsets"])
    assert any(row["records"] == 0 for row in alpha["batch_event_times"])
    assert sum(row["late_records"] for row in alpha["batch_event_times"]) > 0
    assert len(alpha["timer_snapshots"]) == 1 and len(beta["batches"]) == 5
    assert [row["status"] for row in alpha["queries"] + beta["queries"]] == ["active", "failed"]


# Reads a group makes: query rows, runs, the newest batch, its partitions and event times,
# the stored minutes and hours of the queries and of their partitions that its batches fold
# into (store.minutes: four reads), and one to spare, which PostgreSQL uses.
READS = 10


def reads(statements):
    """The statements that read rows; the one that waits for the group's turn is not one, nor
    the look whether its batches' day partitions exist (PostgreSQL: store.day_partitions)."""
    return [
        text
        for text in statements
        if text.lstrip().upper().startswith("SELECT")
        and "pg_advisory_xact_lock" not in text
        and "pg_class" not in text
    ]


def test_a_group_reads_each_query_once_however_many_batches_it_holds(engine):
    statements = []
    sa.event.listen(engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    write_events(engine, [progress(A, "a1", n, T0 + n * MINUTE) for n in range(50)])
    assert len(reads(statements)) <= READS, reads(statements)


def test_a_group_reads_the_state_of_all_its_queries_together(engine):
    """A fleet's group holds one batch of each of many queries: their query and run rows and
    latest state are read in a few statements for all of them, not a few per query."""
    queries = [f"{n:08d}-0000-0000-0000-000000000000" for n in range(30)]
    runs = {query: query.replace("-0000-", "-1111-", 1) for query in queries}
    write_events(engine, [progress(query, runs[query], 0, T0) for query in queries])
    statements = []
    sa.event.listen(engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    write_events(engine, [progress(query, runs[query], 1, T0 + MINUTE) for query in queries])
    assert len(reads(statements)) <= READS, reads(statements)
    stored = stored_rows(engine, queries[7], tables=("batches", "batch_offsets"))
    assert [row["batch_id"] for row in stored["batches"]] == [0, 1]
    # Partition 2 stalls from batch 2 on; until then every partition advanced in each batch.
    advanced = [row["last_advance_ms"] for row in stored["batch_offsets"]]
    assert advanced == [T0] * 4 + [T0 + MINUTE] * 4
