"""Evaluation over the store: alerts fire once, wait for `for`, resolve, obey the rules file."""

import re
import time

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.alerts.evaluate import evaluate
from monitor.alerts.rulefile import load_rules
from monitor.collect.progress import parse_progress
from monitor.events import QueryStarted, QueryTerminated
from monitor.store.schema.engine import create_engine
from monitor.store.schema.models import AlertEvent, AlertRow, Delivery, Query
from monitor.store.write.writes import write_event, write_events
from tests.support.alert_scenarios import at, healthy, moves_again, stalled
from tests.support.progress import QUERY, T, batch_event, progress_doc, stamp, write
from tests.support.stores import emptied

DEFAULTS = load_rules("")
# The built-in rules, partition_stalled firing as soon as it holds and resolving once it does
# not.
AT_ONCE = load_rules("rules:\n  partition_stalled: {for: 0, keep_firing_for: 0}\n")


def run(engine, seconds, rules=AT_ONCE):
    with so.Session(engine, expire_on_commit=False) as session:
        events = evaluate(session, rules, at(seconds))
        return [(e.transition, e.message) for e in events]


def alerts(engine):
    with so.Session(engine) as session:
        rows = session.scalars(sa.select(AlertRow).order_by(AlertRow.id))
        return [(r.rule, r.partitions, r.state) for r in rows]


def test_a_healthy_query_raises_nothing(engine):
    healthy(engine)
    assert run(engine, 11) == [] and alerts(engine) == []


def test_a_stalled_partition_fires_once_and_resolves_when_it_moves(engine):
    stalled(engine)
    assert run(engine, 26) == [("firing", "t/1 is stalled")]
    assert run(engine, 27) == [], "one alert per rule and subject, not one per evaluation"
    moves_again(engine)
    assert run(engine, 31) == [("resolved", "t/1 is stalled")]
    assert alerts(engine) == [("partition_stalled", ["t/1"], "resolved")]
    with so.Session(engine) as session:
        stored = session.scalars(sa.select(AlertEvent).order_by(AlertEvent.id)).all()
        assert [(e.transition, e.at_ms) for e in stored] == [
            ("firing", at(26)),
            ("resolved", at(31)),
        ]


def test_one_alert_covers_the_partitions_as_they_stall_and_move(engine):
    """Alertmanager's grouping at the source: one alert per query and rule, the partitions it
    covers updated as they come and go, without a transition of their own."""
    write(engine, 0, 0, ends=[10, 10, 10], latests=[10, 50, 50], watermark_s=0)
    write(engine, 1, 10, ends=[20, 10, 20], latests=[20, 50, 50], watermark_s=10)
    write(engine, 2, 25, ends=[30, 10, 20], latests=[30, 50, 50], watermark_s=25)
    assert run(engine, 26) == [("firing", "t/1 is stalled")]
    write(engine, 3, 35, ends=[40, 10, 20], latests=[40, 50, 50], watermark_s=35)
    assert run(engine, 36) == []
    assert alerts(engine) == [("partition_stalled", ["t/1", "t/2"], "firing")]
    write(engine, 4, 40, ends=[50, 20, 20], latests=[50, 50, 50], watermark_s=40)
    assert run(engine, 41) == []
    assert alerts(engine) == [("partition_stalled", ["t/2"], "firing")]
    with so.Session(engine) as session:
        assert session.scalars(sa.select(AlertRow.message)).one() == "t/2 is stalled"


def test_a_stall_that_clears_keeps_firing_for_its_hold_then_resolves(engine):
    """The built-in timing: partition_stalled fires once it has held 1 min, and resolves once
    it has been clear for 2 min, so a partition that moves now and then does not flap."""
    stalled(engine)
    assert run(engine, 26, DEFAULTS) == [("pending", "t/1 is stalled")]
    assert run(engine, 85, DEFAULTS) == []
    assert run(engine, 86, DEFAULTS) == [("firing", "t/1 is stalled")]
    moves_again(engine)
    assert run(engine, 91, DEFAULTS) == []
    assert run(engine, 205, DEFAULTS) == [], "clear for 1 min 59 s: still held"
    assert run(engine, 206, DEFAULTS) == [("resolved", "t/1 is stalled")]


def test_an_alert_caused_by_another_is_shown_under_it_and_not_told(engine):
    """A record two hours ahead drags the watermark, and t/1's records fall behind it: the
    late records are caused by the future-dated one, which alone is told."""
    rules = load_rules(
        "rules:\n  watermark_skew: {enabled: false}\n"
        "receivers:\n  - {name: ops, kind: webhook, url: 'http://127.0.0.1:9/'}\n"
    )
    future = {"future": 1, "future_lead_ms": 7_200_000, "future_samples": [["s-17", at(0), 8]]}
    figures = {0: (5, at(-30), at(7_200), 0, [], future), 1: (200, at(-30), at(-25), 150)}
    write_event(engine, batch_event(QUERY, 0, at(0), event_times=figures), T)
    fired = run(engine, 1, rules)
    assert sorted(transition for transition, _ in fired) == ["firing", "firing"]
    with so.Session(engine) as session:
        rows = session.execute(sa.select(AlertRow.rule, AlertRow.caused_by)).all()
        told = session.scalars(
            sa.select(AlertRow.rule)
            .join(AlertEvent, AlertEvent.alert_id == AlertRow.id)
            .join(Delivery, Delivery.alert_event_id == AlertEvent.id)
        ).all()
    assert sorted(rows) == [("future_event_time", None), ("late_records", "future_event_time")]
    assert told == ["future_event_time"]


def test_an_alert_waits_for_its_for_duration(engine):
    rules = load_rules("rules:\n  partition_stalled: {for: 10s}\n")
    stalled(engine)
    assert run(engine, 26, rules) == [("pending", "t/1 is stalled")]
    assert run(engine, 30, rules) == []
    assert run(engine, 36, rules) == [("firing", "t/1 is stalled")]
    with so.Session(engine) as session:
        row = session.scalars(sa.select(AlertRow)).one()
        assert (row.active_since_ms, row.fired_at_ms, row.severity) == (at(26), at(36), "critical")


def test_a_pass_returns_its_own_transitions_when_another_ran_at_the_same_time(engine):
    stalled(engine)
    waiting = load_rules("rules:\n  partition_stalled: {for: 10s}\n")
    assert run(engine, 26, waiting) == [("pending", "t/1 is stalled")]
    assert run(engine, 26) == [("firing", "t/1 is stalled")]
    with so.Session(engine) as session:
        stored = session.scalars(sa.select(AlertEvent).order_by(AlertEvent.id)).all()
        assert [(e.transition, e.at_ms) for e in stored] == [
            ("pending", at(26)),
            ("firing", at(26)),
        ]


def test_a_condition_that_clears_before_its_for_is_cancelled(engine):
    rules = load_rules("rules:\n  partition_stalled: {for: 1m}\n")
    stalled(engine)
    assert run(engine, 26, rules) == [("pending", "t/1 is stalled")]
    moves_again(engine)
    assert run(engine, 31, rules) == [("cancelled", "t/1 is stalled")]
    assert alerts(engine) == [("partition_stalled", ["t/1"], "cancelled")]


def test_a_disabled_rule_raises_nothing_and_resolves_what_it_raised(engine):
    stalled(engine)
    assert run(engine, 26) == [("firing", "t/1 is stalled")]
    quiet = load_rules(
        'queries:\n  - match: "*"\n    rules:\n      partition_stalled: {enabled: false}\n'
    )
    assert run(engine, 27, quiet) == [("resolved", "t/1 is stalled")]
    assert run(engine, 28, quiet) == []


def test_only_a_query_that_ended_recently_fires_and_it_fires_until_the_query_runs_again(engine):
    stalled(engine)
    write_event(engine, QueryTerminated(QUERY, "r", at(30), None))
    assert run(engine, 31) == [("firing", "the query stopped")]
    # Past query_terminated's `within` (1 h) the query is still stopped: still firing.
    assert run(engine, 31 + 3_600) == []
    assert alerts(engine) == [("query_terminated", [], "firing")]
    # A first evaluation over an old store says nothing of it: it is history, not news.
    with so.Session(engine) as session:
        session.execute(sa.delete(AlertEvent))
        session.execute(sa.delete(AlertRow))
        session.commit()
    assert run(engine, 32 + 3_600) == []
    # A run ends once (a replay of its end changes nothing): the next end is a new run's.
    write_event(engine, QueryStarted(QUERY, "r2", "orders", at(35 + 3_600)))
    write_event(engine, QueryTerminated(QUERY, "r2", at(40 + 3_600), None))
    assert run(engine, 41 + 3_600) == [("firing", "the query stopped")]
    write_event(engine, QueryStarted(QUERY, "r3", "orders", at(50 + 3_600)))
    assert ("resolved", "the query stopped") in run(engine, 51 + 3_600)


def test_a_rewind_fires_and_resolves_once_its_window_has_passed(engine):
    rules = load_rules("rules:\n  rewound: {window: 10s}\n")
    for batch_id, at_s in enumerate([0, 10, 20]):
        starts, ends = [10 * batch_id] * 2, [10 * (batch_id + 1)] * 2
        write(engine, batch_id, at_s, ends=ends, latests=[50, 50], watermark_s=at_s, starts=starts)
    # Restored from the checkpoint of batch 0: a new run reads batches 1 and 2 again.
    again = dict(latests=[50, 50], run="r2")
    write(engine, 1, 22, ends=[20, 20], watermark_s=10, starts=[10, 10], **again)
    write(engine, 2, 23, ends=[30, 30], watermark_s=20, starts=[20, 20], **again)
    fired = run(engine, 24, rules)
    assert fired == [
        ("firing", "the watermark, t/0 and t/1 went back"),
    ], "the rewind shows in a batch that is no longer the latest"
    assert run(engine, 32, rules) == []
    assert len(run(engine, 33, rules)) == 1, "resolved 10 s after the rewound batch"


@pytest.mark.parametrize(
    "timestamp",
    [lambda now: stamp(now + 86_400_000), lambda now: "9999-12-31T23:59:59.999Z"],
    ids=["a-day-ahead", "year-9999"],
)
def test_a_driver_whose_clock_ran_ahead_still_goes_silent(engine, timestamp):
    """The issue's probe: one batch a day ahead, then the driver died; the query looked
    healthy and no_progress never fired."""
    now = int(time.time() * 1000)
    doc = progress_doc(id=QUERY, runId="r", batchId=0, timestamp=timestamp(now))
    write_event(engine, parse_progress(doc))
    with so.Session(engine) as session:
        assert session.get_one(Query, QUERY).updated_at_ms <= int(time.time() * 1000)
    with so.Session(engine, expire_on_commit=False) as session:
        fired = evaluate(session, DEFAULTS, now + 6 * 60_000)
    assert ("firing", "no progress") in [(e.transition, e.message.split(" for ")[0]) for e in fired]


def test_a_clock_ahead_is_flagged_and_clears_when_the_clock_is_right(engine):
    """Not only capped: the job's clock a day ahead is told, then mended."""
    now = int(time.time() * 1000)
    ahead = progress_doc(id=QUERY, runId="r", batchId=0, timestamp=stamp(now + 86_400_000))
    write_event(engine, parse_progress(ahead))
    with so.Session(engine) as session:
        assert 86_390_000 <= session.get_one(Query, QUERY).clock_ahead_ms <= 86_400_000
    with so.Session(engine, expire_on_commit=False) as session:
        fired = evaluate(session, DEFAULTS, now + 1_000)
    [told] = [e.message for e in fired if e.transition == "firing"]
    assert re.fullmatch(r"the job's clock is (23 h 59 min|1 d) ahead of the monitor's", told)
    right = progress_doc(id=QUERY, runId="r", batchId=1, timestamp=stamp(now + 2_000))
    write_event(engine, parse_progress(right))
    with so.Session(engine, expire_on_commit=False) as session:
        resolved = evaluate(session, DEFAULTS, now + 3_000)
    assert [e.transition for e in resolved] == ["resolved"]


def _statements_of_passes(engine, count):
    """How many statements two passes over `count` silent queries run: one that fires
    no_progress for each, one that brings each alert's value up to date."""
    docs = [
        progress_doc(id=f"{n:08d}-0000-0000-0000-000000000000", runId=f"r{n}") for n in range(count)
    ]
    write_events(engine, [parse_progress(doc) for doc in docs])
    statements = []
    listener = lambda *args: statements.append(args[2])  # noqa: E731
    sa.event.listen(engine, "before_cursor_execute", listener)
    try:
        for later_ms in (3_600_000, 3_660_000):
            with so.Session(engine, expire_on_commit=False) as session:
                evaluate(session, DEFAULTS, int(time.time() * 1000) + later_ms)
    finally:
        sa.event.remove(engine, "before_cursor_execute", listener)
    with so.Session(engine) as session:
        fired = session.scalar(sa.select(sa.func.count()).where(AlertRow.rule == "no_progress"))
    assert fired == count
    return len(statements)


def test_a_pass_writes_a_fleet_s_alerts_in_as_many_statements_for_50_queries_as_for_5(
    database_url,
):
    """The changed alerts in one UPDATE, the new ones and the transitions each in one
    INSERT, each run for many rows (on PostgreSQL each statement is a round trip)."""
    counts = []
    for count in (5, 50):
        engine = create_engine(database_url)
        emptied(engine)
        counts.append(_statements_of_passes(engine, count))
        engine.dispose()
    assert counts[0] == counts[1], counts
