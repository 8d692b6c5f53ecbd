"""Live push end to end: another process writes through the real writer, a real server in a
thread watches the store, and real Socket.IO clients receive what was written.

These tests check what arrives, in which order and how often; how fast it arrives is measured by
`python -m benchmarks` (benchmarks/push.py), not asserted on a loaded test machine."""

import json
import subprocess
import sys
import time
import urllib.request

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.alerts.actions import lift_silence, silence
from monitor.store.schema.models import Silence
from tests.support.paths import ROOT
from tests.support.push_clients import T0, WAIT_S, Writer, end_all
from tests.support.waiting import wait_until
from web.sockets import socketio

TOKEN = "s3cret"


@pytest.fixture
def writer(database_url):
    process = Writer(database_url)
    yield process
    process.close()


@pytest.fixture
def app_config():
    return {"POLL_INTERVAL_S": 0.2, "API_TOKEN": TOKEN}


def test_batches_from_another_process_reach_a_subscriber_each_once_in_order(writer, browsers):
    writer.batch(0)
    browser = browsers()
    assert browser.subscribe("orders") == {"query": "q", "caught_up": 0, "complete": True}
    for batch_id in range(1, 6):
        writer.batch(batch_id, ends=[batch_id * 10, batch_id * 5], latests=[99, 99])
        browser.arrival(batch_id)
    writer.batch(6)  # a marker: whatever was sent before it has arrived once it has
    browser.arrival(6)
    assert browser.batch_ids() == [1, 2, 3, 4, 5, 6]
    [(_, last)] = [e for e in browser.events("batch") if e[1]["batch"]["batch_id"] == 5]
    assert last["query"] == "q" and last["batch"]["batch_time_ms"] == T0 + 5_000
    assert [(p["partition"], p["end_offset"], p["offset_lag"]) for p in last["partitions"]] == [
        ("t/0", 50, 49),
        ("t/1", 25, 74),
    ]


def test_a_commit_wakes_the_watcher_long_before_its_next_poll(app, writer, browsers):
    app.config["POLL_INTERVAL_S"] = 10 * WAIT_S  # only the store's signal brings them in time
    writer.batch(0)
    browser = browsers()
    browser.subscribe("orders")
    for batch_id in range(1, 4):
        writer.batch(batch_id)
        browser.arrival(batch_id)
    assert browser.batch_ids() == [1, 2, 3]


def test_the_overview_room_hears_of_new_queries_and_failures(writer, browsers):
    writer.batch(0)
    browser = browsers()
    assert browser.client.call("subscribe_overview", timeout=WAIT_S) == {"queries": 1}
    (_, first), *_ = browser.events("overview")
    assert first["full"] and [q["id"] for q in first["queries"]] == ["q"]

    writer.batch(0, query_id="other", name="other")
    wait_until(
        lambda: any(
            q["id"] == "other" for _, o in browser.events("overview") for q in o["queries"]
        ),
        WAIT_S,
        "the new query in the overview",
    )
    writer.write("terminated", query_id="q", run_id="run-1", timestamp_ms=T0 + 9, exception="boom")

    def failed():
        return next(
            (
                at
                for at, o in browser.events("overview")
                for q in o["queries"]
                if q["status"] == "failed"
            ),
            None,
        )

    wait_until(failed, WAIT_S, "the failure in the overview")
    statuses = [
        q["status"] for _, o in browser.events("overview") for q in o["queries"] if q["id"] == "q"
    ]
    assert set(statuses[statuses.index("failed") :]) == {"failed"}, "and stays failed"


def test_timers_and_status_reach_the_query_room(writer, browsers):
    writer.batch(0)
    browser = browsers()
    browser.subscribe("q")
    writer.write(
        "timers",
        query_id="q",
        run_id="run-1",
        taken_at_ms=T0 + 5,
        watermark_ms=None,
        pending=12,
        next_expiry_ms=T0 + 60_000,
        due_within_ms=0,
        due=0,
    )
    [(_, timers)] = wait_until(lambda: browser.events("timers"), WAIT_S, "the timer snapshot")
    assert timers == {
        "query": "q",
        "snapshot": {
            "taken_at_ms": T0 + 5,
            "watermark_ms": None,
            "pending": 12,
            "next_expiry_ms": T0 + 60_000,
            "due_within_ms": 0,
            "due": 0,
        },
    }
    wait_until(
        lambda: any(s["pending_timers"] == 12 for _, s in browser.events("summary")),
        WAIT_S,
        "the query's summary with its pending timers",
    )


def test_a_replayed_batch_reaches_subscribers(writer, browsers):
    writer.batch(0)
    writer.batch(1, rows=10)
    browser = browsers()
    browser.subscribe("q")
    # The query restarts from its checkpoint and runs batch 1 again.
    writer.batch(1, run_id="run-2", at_ms=T0 + 30_000, rows=12)
    browser.arrival(1, run_id="run-2")
    writer.batch(2, run_id="run-2", at_ms=T0 + 31_000)  # a marker, sent after anything else
    browser.arrival(2, run_id="run-2")
    [(_, replayed), _] = browser.events("batch")
    assert replayed["batch"]["num_input_rows"] == 12 and browser.batch_ids() == [1, 2]


def test_a_reconnecting_client_gets_exactly_what_it_missed(writer, browsers):
    for batch_id in range(2):
        writer.batch(batch_id)
    witness, first = browsers(), browsers()
    witness.subscribe("q")
    assert first.subscribe("q", after_batch=-1) == {"query": "q", "caught_up": 2, "complete": True}
    assert first.batch_ids() == [0, 1]
    end_all([first.client], socketio.server)

    for batch_id in range(2, 5):
        writer.batch(batch_id)
    witness.arrival(4)  # the server has pushed what `first` missed
    again = browsers()
    assert again.subscribe("q", after_batch=1) == {"query": "q", "caught_up": 3, "complete": True}
    written = again.batch_ids()
    writer.batch(5)
    again.arrival(5)
    writer.batch(6)  # a marker: whatever was sent before it has arrived once it has
    again.arrival(6)
    assert written == [2, 3, 4] and again.batch_ids() == [2, 3, 4, 5, 6]


def test_a_reconnect_right_after_writes_still_gets_each_batch_once(writer, browsers):
    writer.batch(0)
    browser = browsers()
    browser.subscribe("q")
    writer.batch(1)
    # Subscribing as the watcher may or may not have seen batch 2: it arrives either in the
    # catch-up or with the next look, never both.
    writer.batch(2)
    late = browsers()
    late.subscribe("q", after_batch=0)
    late.arrival(2)
    writer.batch(3)  # a marker: whatever was sent before it has arrived once it has
    late.arrival(3)
    assert late.batch_ids() == [1, 2, 3]


def test_bad_subscriptions_are_refused_with_a_reason(writer, browsers):
    writer.batch(0)
    browser = browsers()
    for payload, error in [
        ({"query": "nosuchquery"}, "no query with id or name 'nosuchquery'"),
        ({"query": "q", "after_batch": "3"}, "after_batch must be a whole number, not '3'"),
        ({"query": "q", "after_batch": True}, "after_batch must be a whole number, not True"),
        ({"query": "q", "after_batch": 2.0}, "after_batch must be a whole number, not 2.0"),
        ({"after_batch": 3}, "subscribe needs"),
        ("q", "subscribe needs"),
    ]:
        ack = browser.client.call("subscribe", payload, timeout=WAIT_S)
        assert error in ack["error"], (payload, ack)
    assert browser.subscribe("q") == {"query": "q", "caught_up": 0, "complete": True}


def evaluate_in_another_process(database_url, rules):
    """One pass of `wmon alerts run --once --rules RULES` in a process of its own; when it
    ended."""
    done = subprocess.run(
        [sys.executable, "-m", "wmon", "alerts", "run", "--once", "--rules", str(rules)]
        + ["--database-url", database_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return time.time()


def get_json(server, path):
    with urllib.request.urlopen(server + path) as answer:
        return json.load(answer)


def act(server, method, path, body=None):
    """A request with the token, as the dashboard's buttons send it; the answer."""
    request = urllib.request.Request(
        server + path,
        None if body is None else json.dumps(body).encode(),
        {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
        method=method,
    )
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)


def acknowledge(server, alert_id, by):
    """POST the acknowledgement, as the dashboard's button does."""
    return act(server, "POST", f"/api/alerts/{alert_id}/acknowledge", {"by": by})


def overview_shows(browser, query_id, batch_id):
    """Whether the overview room has told `browser` of batch `batch_id` of `query_id`."""
    return any(
        (q["id"], q["last_batch_id"]) == (query_id, batch_id)
        for _, data in browser.events("overview")
        for q in data["queries"]
    )


def write_stalled(writer):
    """Batches of q at wall-clock times in which t/1 keeps a backlog and never moves: stalled
    once 150 s have passed (the writer's default stall timeout is 120 s)."""
    now = int(time.time() * 1000)
    for batch_id, ago_s in enumerate((300, 150, 10)):
        ends = [10 * (batch_id + 1), 10]
        writer.batch(batch_id, at_ms=now - ago_s * 1_000, ends=ends, latests=[99, 50])


def test_alert_events_from_another_process_reach_the_overview_the_query_and_the_alerts_rooms(
    database_url, writer, server, browsers, tmp_path
):
    rules = tmp_path / "rules.yml"
    rules.write_text("rules:\n  partition_stalled: {for: 0, keep_firing_for: 0}\n")
    write_stalled(writer)
    writer.batch(0, query_id="other", name="other", at_ms=int(time.time() * 1000))
    overview, query, everything, other = browsers(), browsers(), browsers(), browsers()
    overview.client.call("subscribe_overview", timeout=WAIT_S)
    query.subscribe("orders")
    assert query.client.call("subscribe_alerts", timeout=WAIT_S) == {"room": "alerts"}
    everything.client.call("subscribe_alerts", timeout=WAIT_S)
    other.subscribe("other")

    evaluate_in_another_process(database_url, rules)
    [(_, fired)] = wait_until(lambda: query.events("alert"), WAIT_S, "the firing alert")
    [listed] = get_json(server, "/api/alerts")["alerts"]
    assert fired == {"alert": listed, "transition": "firing", "at_ms": listed["fired_at_ms"]}
    assert (listed["rule"], listed["partitions"], listed["query"]) == (
        "partition_stalled",
        ["t/1"],
        "orders",
    )

    acknowledge(server, listed["id"], "ana")
    wait_until(lambda: len(query.events("alert")) == 2, WAIT_S, "the acknowledgement")
    [_, (_, acknowledged)] = query.events("alert")
    assert acknowledged["transition"] == "acknowledged"
    assert acknowledged["alert"]["acknowledged_by"] == "ana"
    assert acknowledged["alert"]["state"] == "firing"

    writer.batch(3, at_ms=int(time.time() * 1000), ends=[40, 20], latests=[99, 50])
    evaluate_in_another_process(database_url, rules)
    wait_until(lambda: len(query.events("alert")) == 3, WAIT_S, "the resolution")
    # Markers, pushed after anything sent before them: a batch of another query for the
    # overview room, a silence for the alerts room.
    writer.batch(1, query_id="other", name="other", at_ms=int(time.time() * 1000))
    act(server, "POST", "/api/silences", {"minutes": 5, "rule": "offset_lag"})
    wait_until(lambda: overview_shows(overview, "other", 1), WAIT_S, "the marker batch")
    for browser in (query, everything):
        wait_until(lambda b=browser: len(b.events("silences")) == 2, WAIT_S, "the marker silence")
    transitions = ["firing", "acknowledged", "resolved"]
    for browser in (overview, query, everything):
        assert [data["transition"] for _, data in browser.events("alert")] == transitions
    assert query.events("alert")[-1][1]["alert"]["state"] == "resolved"
    assert other.events("alert") == [], "another query's room hears nothing of it"
    assert everything.events("overview") == [] and everything.events("summary") == []


@pytest.mark.parametrize("app_config", [{"POLL_INTERVAL_S": 0.2, "OVERVIEW_REFRESH_S": 3600}])
def test_an_alert_that_fires_sends_its_querys_summary_at_once(
    database_url, writer, browsers, server, tmp_path
):
    """The query's judgment changes with its alerts: its room hears its summary as the alert
    fires, not at the next refresh of every query's (an hour away here)."""
    rules = tmp_path / "rules.yml"
    rules.write_text("rules:\n  partition_stalled: {for: 0, keep_firing_for: 0}\n")
    write_stalled(writer)
    query = browsers()
    query.subscribe("orders")
    evaluate_in_another_process(database_url, rules)
    wait_until(lambda: query.events("alert"), WAIT_S, "the firing alert")
    judged = wait_until(
        lambda: [s for _, s in query.events("summary") if s["alerts"]["critical"]],
        WAIT_S,
        "a summary that counts the alert",
    )
    assert (judged[0]["status"], judged[0]["severity"]) == ("stalled", "critical")


def test_the_alerts_room_hears_each_change_to_the_silences_in_force(app, engine, server, browsers):
    now = int(time.time() * 1000)
    browser, overview = browsers(), browsers()
    assert browser.client.call("subscribe_alerts", timeout=WAIT_S) == {"room": "alerts"}
    overview.client.call("subscribe_overview", timeout=WAIT_S)
    assert [data for _, data in browser.events("silences")] == [{"silences": []}]

    def heard(count, what):
        """The `count`th `silences` event, as GET /api/silences lists them: each silence's
        rule and partition."""
        wait_until(lambda: len(browser.events("silences")) >= count, WAIT_S, what)
        _, data = browser.events("silences")[count - 1]
        assert data == get_json(server, "/api/silences")
        return [(s["rule"], s["partition"]) for s in data["silences"]]

    with so.Session(engine) as session:  # as another process would, straight in the store
        silence(
            session,
            rule="partition_idle",
            query_id=None,
            partition="t/1",
            until_ms=now + 600_000,
            now_ms=now,
            by="cli",
        )
    assert heard(2, "the silence from the store") == [("partition_idle", "t/1")]

    made = act(server, "POST", "/api/silences", {"minutes": 5, "rule": "offset_lag"})["silence"]
    assert heard(3, "the silence from the API") == [
        ("partition_idle", "t/1"),
        ("offset_lag", None),
    ]

    with so.Session(engine) as session:
        [from_store] = session.scalars(sa.select(Silence).where(Silence.created_by == "cli"))
        lift_silence(session, from_store.id, now)
    assert heard(4, "the silence lifted in the store") == [("offset_lag", None)]

    act(server, "DELETE", f"/api/silences/{made['id']}")
    assert heard(5, "the silence lifted through the API") == []

    act(server, "POST", "/api/silences", {"minutes": 1, "comment": "short"})
    assert heard(6, "a one-minute silence") == [(None, None)]
    app.config["CLOCK"] = lambda: int(time.time() * 1000) + 61_000
    assert heard(7, "the one-minute silence to run out") == []

    act(server, "POST", "/api/silences", {"minutes": 5, "comment": "a marker"})
    assert heard(8, "a marker, sent after anything else") == [(None, None)]
    assert len(browser.events("silences")) == 8
    assert overview.events("silences") == [], "only the alerts room hears of silences"


def test_a_client_ahead_of_a_superseded_lineage_is_told_to_reload(writer, browsers):
    for batch_id in range(5):
        writer.batch(batch_id)
    writer.batch(2, run_id="run-2", at_ms=T0 + 60_000)  # restarted from batch 1's checkpoint
    browser = browsers()
    assert browser.subscribe("q", after_batch=4) == {
        "query": "q",
        "caught_up": 0,
        "complete": False,
    }
