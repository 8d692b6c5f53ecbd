"""A fleet's facts and summaries, read together a chunk of queries at a time, are exactly the
ones each query's own read gives, and take as many statements for 50 queries as for 5."""

from collections.abc import Sequence
from typing import Any

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.alerts.rules import MEANINGS
from monitor.health.facts import Thresholds
from monitor.store.packed import batch_event_times, batch_offsets
from monitor.store.read.batches import latest_batch
from monitor.store.read.read_facts import FactsAsked, fleet_facts, read_facts
from monitor.store.read.summary import summaries, summarize
from monitor.store.schema.engine import create_engine
from monitor.store.schema.models import (
    Batch,
    BatchEventTimes,
    BatchOffsets,
    Query,
    TimerSnapshotRow,
)
from monitor.store.schema.sql import among
from monitor.store.tiers import day_partitions
from tests.support.stores import emptied

NOW = 1_795_000_000_000
MINUTE = 60_000


def _query(k: int) -> Query:
    ended = k % 5 == 4
    return Query(
        id=f"{k:08d}-0000-0000-0000-000000000000",
        name=f"q{k % 4}",
        run_id=f"{k:08d}-1111-0000-0000-000000000000",
        status="failed" if ended else ("idle" if k % 3 == 1 else "active"),
        updated_at_ms=NOW - k * 1000,
        terminated_at_ms=NOW - MINUTE if ended else None,
        exception="boom" if ended else None,
    )


def _batch_time(k: int, batch_id: int, batches: int) -> int:
    at_ms = NOW - (batches - 1 - batch_id) * MINUTE - (k % 3) * 7_000
    # One query's clock went back: its batch times are not in batch id order.
    return at_ms - 3 * MINUTE if k % 7 == 3 and batch_id == batches - 2 else at_ms


def _batch(k: int, batch_id: int, at_ms: int) -> Batch:
    return Batch(
        query_id=_query(k).id,
        batch_id=batch_id,
        run_id=_query(k).run_id,
        batch_time_ms=at_ms,
        watermark_ms=None if batch_id == 0 else at_ms - 10_000 * (batch_id % 4),
        durations_ms={},
        watermark_stalled=(batch_id + k) % 3 == 0,
        watermark_rewound=(batch_id * k) % 5 == 1,
        watermark_skew_ms=batch_id * 10 if k % 2 else None,
    )


def _partition(k: int, batch_id: int, at_ms: int, index: int, name: str) -> dict[str, Any]:
    lag = None if (batch_id + index) % 4 == 0 else (batch_id * 3 + index + k) % 11
    return {
        "query_id": _query(k).id,
        "batch_id": batch_id,
        "batch_time_ms": at_ms,
        "source_index": index % 2,
        "partition": name,
        "topic": None,
        "start_offset": None,
        "end_offset": 100,
        "latest_offset": None if lag is None else 100 + lag,
        "offset_lag": lag,
        "last_arrival_ms": None,
        "last_advance_ms": None,
        "idle": (batch_id + index) % 5 == 0,
        "stalled": (batch_id + index + k) % 6 == 0,
        "rewound": (batch_id + index) % 4 == k % 4,
    }


def _event_time(
    k: int, batch_id: int, at_ms: int, name: str, j: int, totals: dict[str, int]
) -> dict[str, Any]:
    """Partition `name`'s figures, its running totals (`totals`, by figure) carried on."""
    future = (batch_id + k + j) % 6 == 0
    row = {
        "query_id": _query(k).id,
        "batch_id": batch_id,
        "batch_time_ms": at_ms,
        "partition": name,
        "records": 10,
        "min_event_ms": None,
        "max_event_ms": None,
        "late_records": (batch_id * j + k) % 3,
        "late_watermark_ms": None,
        "delay_ms": 0,
        "max_event_time_ms": None,
        "max_event_time_record": None,
        "max_event_time_batch": None,
        "late_samples": [],
        "future_records": (batch_id % 3) + 1 if future else 0,
        "future_lead_ms": batch_id * 1000 + j if future else None,
        "future_samples": [["key", at_ms + n, n] for n in range(j + 2)] if future else None,
        "late_buckets": None,
        "slack_buckets": None,
        "late_buckets_total": None,
        "slack_buckets_total": None,
    }
    for figure in ("records", "late_records", "future_records"):
        totals[figure] = row[f"{figure}_total"] = totals.get(figure, 0) + row[figure]
    return row


def _partition_names(k: int, batch_id: int, batches: int) -> list[str]:
    names = [f"t/{n}" for n in range(k % 3 + 1)]
    # A partition that left the source: in older batches only.
    return names + ["gone/0"] if batch_id < batches - 3 else names


def _store_query(session: so.Session, k: int) -> None:
    """Query `k`: none to 44 batches a minute apart up to now, varied flags, late and
    future-dated records, a partition that left, and for some a pending-timer snapshot."""
    batches = (k * 7) % 45 if k % 6 else 0
    totals: dict[str, dict[str, int]] = {}
    for batch_id in range(batches):
        at_ms = _batch_time(k, batch_id, batches)
        session.add(_batch(k, batch_id, at_ms))
        names = _partition_names(k, batch_id, batches)
        offsets = [_partition(k, batch_id, at_ms, j, name) for j, name in enumerate(names)]
        session.add_all(BatchOffsets(**row) for row in batch_offsets.packed(offsets))
        measured = [
            _event_time(k, batch_id, at_ms, name, j, totals.setdefault(name, {}))
            for j, name in enumerate(names)
        ]
        session.add_all(BatchEventTimes(**row) for row in batch_event_times.packed(measured))
    for n in range(k % 3):
        taken = NOW - (n // 2) * MINUTE  # two snapshots taken at the same time
        snapshot = TimerSnapshotRow(
            query_id=_query(k).id, taken_at_ms=taken, pending=k + n, due_within_ms=0, due=n
        )
        session.add(snapshot)


def _thresholds(k: int) -> Thresholds:
    """Windows that differ from query to query, as rules files set them."""
    return Thresholds(
        late_window_ms=(k % 4 + 1) * 2 * MINUTE,
        rewound_window_ms=(k % 3 + 1) * 3 * MINUTE,
        future_window_ms=(k % 5 + 1) * 4 * MINUTE,
    )


def _store(engine: sa.Engine, count: int, keys: Sequence[int] | None = None) -> None:
    """Queries 0 to `count` - 1, or those of `keys`."""
    with so.Session(engine) as session:
        ks = range(count) if keys is None else keys
        session.add_all(_query(k) for k in ks)
        session.flush()  # no relationship tells the unit of work to store queries first
        day_partitions.prepare(session.connection(), [NOW - 60 * MINUTE, NOW])
        for k in ks:
            _store_query(session, k)
        session.commit()


def _asked(session: so.Session) -> list[FactsAsked]:
    queries = session.scalars(sa.select(Query).order_by(Query.id)).all()
    return [
        FactsAsked(query, _thresholds(k), frozenset({"silence"} if k % 2 else ()))
        for k, query in enumerate(queries)
    ]


def test_a_fleet_read_gives_each_query_its_own_read(engine):
    _store(engine, 24)
    with so.Session(engine) as session:
        asked = _asked(session)
        fleet = fleet_facts(session, asked, NOW)
        for item in asked:
            latest = latest_batch(session, item.query.id)
            one = read_facts(session, item.query, latest, NOW, item.thresholds, item.alerting)
            assert fleet[item.query.id] == one
    facts = list(fleet.values())
    # The store is as varied as meant: every kind of fact shows in some query, not in all.
    assert {len(f.trend) for f in facts} >= {0, 30}
    for varied in (
        lambda f: f.watermark_rewound,
        lambda f: any(p.rewound for p in f.partitions),
        lambda f: f.late_records > 0,
        lambda f: any(p.future for p in f.partitions),
        lambda f: any(not p.in_latest_batch for p in f.partitions),
    ):
        assert 0 < sum(map(varied, facts)) < len(facts)


def test_the_overview_of_a_fleet_gives_each_query_its_own_summary(engine):
    _store(engine, 24)
    with so.Session(engine) as session:
        asked = [FactsAsked(item.query, item.thresholds) for item in _asked(session)]
        overview = summaries(session, asked, NOW, MEANINGS)
        assert [s.query.id for s in overview] == [item.query.id for item in asked]
        for item, summary in zip(asked, overview, strict=True):
            assert summary == summarize(session, item.query, NOW, item.thresholds, MEANINGS)
        assert 0 < sum(s.timers is not None for s in overview) < len(overview)


def _statements(engine: sa.Engine, read) -> int:
    """How many statements `read(session)` runs."""
    statements: list[str] = []
    listener = lambda *args: statements.append(args[2])  # noqa: E731
    with so.Session(engine) as session:
        asked = _asked(session)
        sa.event.listen(engine, "before_cursor_execute", listener)
        try:
            read(session, asked)
        finally:
            sa.event.remove(engine, "before_cursor_execute", listener)
    return len(statements)


@pytest.mark.parametrize(
    "read",
    [
        lambda session, asked: fleet_facts(session, asked, NOW),
        lambda session, asked: summaries(session, asked, NOW, MEANINGS),
    ],
    ids=["facts", "summaries"],
)
def test_a_fleet_is_read_in_as_many_statements_for_50_queries_as_for_5(
    database_url, tmp_path, read
):
    """The five have the fifty's longest history among them (query 32's 44 batches): the
    bisection for the backlogs' heads takes a statement per step, as many steps as the
    longest history needs, whatever the number of queries."""
    counts = []
    for keys in ([1, 7, 12, 20, 32], range(50)):
        engine = create_engine(database_url)
        emptied(engine)
        _store(engine, len(keys), keys)
        counts.append(_statements(engine, read))
        engine.dispose()
    assert counts[0] == counts[1], counts


def test_a_statement_over_a_list_of_queries_runs_with_each_call_s_own_list(engine):
    """`among` is compiled once and cached, like any statement; each run has its own values,
    on PostgreSQL as one array, however many."""
    _store(engine, 12)
    statements: list[str] = []
    listener = lambda *args: statements.append(args[2])  # noqa: E731
    with so.Session(engine) as session:
        ids = session.scalars(sa.select(Query.id).order_by(Query.id)).all()
        sa.event.listen(engine, "before_cursor_execute", listener)
        try:
            for wanted in (ids[:2], ids[3:10], ids[11:], [], ["no-such-query"], ids[:2]):
                found = session.scalars(sa.select(Query.id).where(among(Query.id, wanted)))
                assert sorted(found) == sorted(set(wanted) & set(ids))
        finally:
            sa.event.remove(engine, "before_cursor_execute", listener)
    if engine.dialect.name == "postgresql":
        assert {statement.count("%(") for statement in statements} == {1}, statements
