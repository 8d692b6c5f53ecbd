"""One store, two readers: the dashboard's status and the alert rules agree on what is stalled
and what drops records, because both decide on the same facts with the same thresholds."""

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.alerts.evaluate import evaluate
from monitor.alerts.rulefile import load_rules, load_rules_file
from monitor.health.predicates import Timeouts
from monitor.store.schema.models import LIVE_ALERT_STATES, AlertRow
from monitor.store.write.writes import write_event
from tests.support.alert_scenarios import at, healthy, moves_again, stalled
from tests.support.progress import QUERY, batch_event
from web import create_app

STALLED_RULES = {"watermark_stalled", "partition_stalled", "no_progress"}
# No `for` or `keep_firing_for`: a condition is an alert exactly while it holds, as it is a
# status.
IMMEDIATE = "rules:\n" + "".join(
    f"  {name}: {{for: 0s, keep_firing_for: 0s}}\n"
    for name in sorted(STALLED_RULES | {"late_records", "future_event_time"})
)


def dashboard_status(database_url, rules_path, seconds):
    """The query's status as GET /api/queries shows it at `seconds`."""
    app = create_app(
        {"DATABASE_URL": database_url, "CLOCK": lambda: at(seconds), "ALERT_RULES": rules_path}
    )
    [entry] = app.test_client().get("/api/queries").get_json()["queries"]
    return entry["status"]


def alerting(engine, rules_path, seconds):
    """The rules with a live alert after an evaluation at `seconds`."""
    with so.Session(engine) as session:
        evaluate(session, load_rules_file(rules_path), at(seconds))
        rows = session.scalars(sa.select(AlertRow).where(AlertRow.state.in_(LIVE_ALERT_STATES)))
        return {row.rule for row in rows}


@pytest.fixture
def rules_path(tmp_path):
    def write_rules(silence="5m"):
        path = tmp_path / "rules.yml"
        path.write_text(
            IMMEDIATE.replace(
                "no_progress: {for: 0s, keep_firing_for: 0s}",
                f"no_progress: {{for: 0s, keep_firing_for: 0s, threshold: {silence}}}",
            )
        )
        return path

    return write_rules


def agree(engine, database_url, path, seconds):
    """Assert that the dashboard says stalled exactly when a stalled rule fires (the alerts
    evaluated first, as the status holds a stall while its alert lives); the status."""
    fired = alerting(engine, path, seconds)
    status = dashboard_status(database_url, path, seconds)
    assert (status == "stalled") == bool(fired & STALLED_RULES), (seconds, status, fired)
    return status, fired


def test_a_stalled_partition_is_stalled_for_both(engine, database_url, rules_path):
    path = rules_path()
    stalled(engine)
    assert agree(engine, database_url, path, 26) == ("stalled", {"partition_stalled"})
    moves_again(engine)
    assert agree(engine, database_url, path, 31)[0] == "healthy"


def test_a_stall_that_clears_stays_stalled_while_its_alert_is_held(
    engine, database_url, tmp_path
):
    """With the built-in timing the stall fires after a minute and is held two minutes after
    it clears: the status stays stalled as long, instead of flapping with the stall."""
    path = tmp_path / "rules.yml"
    path.write_text("")
    stalled(engine)
    assert alerting(engine, path, 26) == {"partition_stalled"}
    assert alerting(engine, path, 86) == {"partition_stalled"}
    moves_again(engine)
    assert alerting(engine, path, 91) == {"partition_stalled"}, "held"
    assert dashboard_status(database_url, path, 91) == "stalled"
    assert alerting(engine, path, 211) == set()
    assert dashboard_status(database_url, path, 211) == "healthy"


@pytest.mark.parametrize(
    "silence, silence_s",
    [("5m", 300), ("1m", 60)],
    ids=["default-threshold", "threshold-from-the-rules-file"],
)
def test_a_silent_query_turns_stalled_for_both_at_the_same_moment(
    engine, database_url, rules_path, silence, silence_s
):
    # The last batch is stored at 10 s; the query reports nothing after it.
    path = rules_path(silence)
    healthy(engine)
    for seconds in (11, 10 + silence_s // 2, 10 + silence_s):
        assert agree(engine, database_url, path, seconds)[0] == "healthy"
    assert agree(engine, database_url, path, 10 + silence_s + 1) == ("stalled", {"no_progress"})


def test_late_records_make_the_query_lagging_and_fire_for_both(engine, database_url, rules_path):
    path = rules_path(silence="10m")
    # t/1 dropped 150 of its 200 records as late in the batch stored at 0 s; t/0 one of 5.
    figures = {0: (5, at(-20), at(-10), 1), 1: (200, at(-30), at(-25), 150)}
    write_event(engine, batch_event(QUERY, 0, at(0), event_times=figures), Timeouts())
    status, fired = agree(engine, database_url, path, 1)
    assert (status, fired) == ("lagging", {"late_records"})
    assert agree(engine, database_url, path, 302) == ("healthy", set()), "past the late window"


def test_future_dated_records_make_the_query_lagging_and_fire_for_both(
    engine, database_url, rules_path
):
    path = rules_path(silence="10m")
    # t/2 read a record two hours ahead of the clock in the batch stored at 0 s.
    future = {
        "future": 1,
        "future_lead_ms": 7_200_000,
        "future_samples": [["s-17", at(7_200), 8812]],
    }
    figures = {0: (5, at(-20), at(-10), 0), 2: (5, at(-30), at(7_200), 0, [], future)}
    write_event(engine, batch_event(QUERY, 0, at(0), event_times=figures), Timeouts())
    status, fired = agree(engine, database_url, path, 1)
    # The record also puts t/2's watermark two hours ahead of t/0's: skew, pending.
    assert (status, fired) == ("lagging", {"future_event_time", "watermark_skew"})
    with so.Session(engine) as session:
        [alert] = session.scalars(sa.select(AlertRow).where(AlertRow.rule == "future_event_time"))
        [skew] = session.scalars(sa.select(AlertRow).where(AlertRow.rule == "watermark_skew"))
    assert skew.caused_by == "future_event_time", "the record that is ahead causes the skew"
    assert (alert.partitions, alert.severity, alert.value) == (["t/2"], "critical", 7_200_000)
    assert alert.message == (
        "t/2 read 1 record up to 2 h ahead of the clock in 5 min, e.g. offset 8812, key s-17"
    )
    status, fired = agree(engine, database_url, path, 302)
    # Past the window the records are no longer news; the skew they left still fires, and a
    # firing alert's query is never healthy.
    assert (status, fired) == ("lagging", {"watermark_skew"}), "past the window"


def test_the_rules_set_the_thresholds_the_facts_are_read_with():
    rules = load_rules(
        "rules:\n  no_progress: {threshold: 1m}\n  late_records: {window: 2m}\n"
        "  future_event_time: {window: 4m}\n"
        "queries:\n  - match: orders\n    rules:\n      rewound: {window: 3m}\n"
    )
    assert rules.thresholds_for("other").silence_ms == 60_000
    assert rules.thresholds_for("other").late_window_ms == 120_000
    assert rules.thresholds_for("other").future_window_ms == 240_000
    assert rules.thresholds_for("other").rewound_window_ms == 300_000
    assert rules.thresholds_for("orders").rewound_window_ms == 180_000
