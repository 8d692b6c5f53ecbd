"""The alerts API: listing, an incident's story, and actions that need the token."""

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.alerts.evaluate import evaluate
from monitor.alerts.rulefile import RulesFileError, load_rules
from monitor.events import QueryStarted, QueryTerminated
from monitor.notify.receiver import Receiver
from monitor.store.schema.models import AlertEvent, Delivery, Silence
from monitor.store.write.writes import write_events
from tests.support.alert_scenarios import (
    ONLY_STALLED,
    RULES,
    at,
    moves_again,
    rewrite,
    rules_with,
    stalled,
)
from tests.support.progress import write
from tests.support.waiting import wait_until
from web import create_app, db
from web.background import evaluation
from wmon.main import main

TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def app_config():
    return {"CLOCK": lambda: at(26), "TESTING": True, "API_TOKEN": TOKEN}


@pytest.fixture
def client(app, engine):
    stalled(engine)
    with so.Session(engine) as session:
        evaluate(session, ONLY_STALLED, at(26))
    return app.test_client()


def test_live_alerts_list_a_query_that_is_down_before_older_alerts(engine, client):
    """The query that failed a second ago comes before the stall of a minute ago; ended alerts
    are listed the newest first."""
    failed = "f0000000-0000-4000-8000-000000000000"
    write_events(
        engine,
        [
            QueryStarted(failed, "r", "payments", at(0)),
            QueryTerminated(failed, "r", at(26) + 500, "java.lang.OutOfMemoryError: heap\n\tat x"),
        ],
    )
    with so.Session(engine) as session:
        evaluate(session, ONLY_STALLED, at(27))
    answer = client.get("/api/alerts").get_json()
    listed = answer["alerts"]
    # The pages sort alerts heard live by the same rules.
    assert "query_failed" in answer["urgent_rules"]
    assert "partition_stalled" not in answer["urgent_rules"]
    assert [(a["rule"], a["query"]) for a in listed] == [
        ("query_failed", "payments"),
        ("partition_stalled", "telemetry_windows"),
    ]
    assert listed[0]["message"] == "the query failed: java.lang.OutOfMemoryError: heap"
    everything = client.get("/api/alerts?state=all").get_json()["alerts"]
    assert [a["rule"] for a in everything] == ["query_failed", "partition_stalled"]


def alert_id(client):
    [alert] = client.get("/api/alerts").get_json()["alerts"]
    return alert["id"]


def test_live_alerts_are_listed_with_their_query(client):
    [alert] = client.get("/api/alerts").get_json()["alerts"]
    assert (alert["rule"], alert["partitions"], alert["state"], alert["query"]) == (
        "partition_stalled",
        ["t/1"],
        "firing",
        "telemetry_windows",
    )
    assert alert["severity"] == "critical" and not alert["silenced"]
    assert client.get("/api/alerts?state=all").get_json()["alerts"] == [alert]
    assert client.get(f"/api/alerts?query={alert['query_id']}").get_json()["alerts"] == [alert]


@pytest.mark.parametrize(
    "url, status, message",
    [
        ("/api/alerts?state=old", 400, "state must be live or all"),
        ("/api/alerts?limit=0", 400, "limit must be between 1 and 5000"),
        ("/api/alerts?query=nope", 404, "no query with id or name 'nope'"),
        ("/api/alerts/999", 404, "no alert 999"),
    ],
    ids=["state", "limit", "query", "alert"],
)
def test_bad_parameters(client, url, status, message):
    response = client.get(url)
    assert response.status_code == status and message in response.get_json()["error"]


def test_an_alert_tells_its_story(client):
    story = client.get(f"/api/alerts/{alert_id(client)}").get_json()
    assert [e["transition"] for e in story["events"]] == ["firing"]
    assert story["deliveries"] == []


def test_acknowledging_needs_the_token(app, client):
    url = f"/api/alerts/{alert_id(client)}/acknowledge"
    assert client.post(url).status_code == 401
    assert client.post(url, headers={"Authorization": "Bearer wrong"}).status_code == 401
    app.config["API_TOKEN"] = None
    refused = client.post(url, headers=AUTH)
    assert refused.status_code == 403 and "WMON_API_TOKEN" in refused.get_json()["error"]
    assert client.get("/api/alerts").get_json()["alerts"][0]["acknowledged_at_ms"] is None


def test_acknowledging_is_stored_as_an_event(client, engine):
    url = f"/api/alerts/{alert_id(client)}/acknowledge"
    done = client.post(url, headers=AUTH, json={"by": "ana"})
    assert done.status_code == 200
    assert (
        done.get_json()["alert"]["acknowledged_by"],
        done.get_json()["alert"]["acknowledged_at_ms"],
    ) == ("ana", at(26))
    story = client.get(url.removesuffix("/acknowledge")).get_json()
    assert [(e["transition"], e["message"]) for e in story["events"]][-1] == (
        "acknowledged",
        "acknowledged by ana",
    )
    moves_again(engine)
    with so.Session(engine) as session:
        evaluate(session, ONLY_STALLED, at(31))
    again = client.post(url, headers=AUTH)
    assert again.status_code == 409 and "is resolved" in again.get_json()["error"]
    assert client.post("/api/alerts/999/acknowledge", headers=AUTH).status_code == 404


@pytest.mark.parametrize(
    "body, message",
    [
        ({"minutes": 0}, "minutes must be between 1 and 10080"),
        ({"minutes": "10"}, "minutes must be a whole number"),
        ({"minutes": 10, "rule": "nope"}, "no rule named 'nope'"),
        ({"minutes": 10, "partition": ""}, "partition must be a non-empty text"),
        ([1], "the body must be a JSON object"),
    ],
    ids=["zero-minutes", "text-minutes", "unknown-rule", "empty-partition", "not-an-object"],
)
def test_a_bad_silence_is_refused_and_nothing_stored(client, engine, body, message):
    response = client.post("/api/silences", headers=AUTH, json=body)
    assert response.status_code == 400 and message in response.get_json()["error"]
    with so.Session(engine) as session:
        assert session.scalars(sa.select(Silence)).all() == []


def test_a_silence_keeps_notifications_back_until_it_is_lifted(client, engine):
    assert client.post("/api/silences", json={"minutes": 5}).status_code == 401
    made = client.post(
        "/api/silences",
        headers=AUTH,
        json={"minutes": 30, "rule": "partition_stalled", "partition": "t/1", "comment": "known"},
    )
    assert made.status_code == 201
    silence = made.get_json()["silence"]
    assert (silence["until_ms"], silence["comment"]) == (at(26) + 30 * 60_000, "known")
    assert client.get("/api/silences").get_json()["silences"] == [silence]
    assert client.get("/api/alerts").get_json()["alerts"][0]["silenced"]

    moves_again(engine)
    receivers = rules_with(Receiver("ops", "webhook", "http://127.0.0.1:9/"))
    with so.Session(engine) as session:
        assert [e.transition for e in evaluate(session, receivers, at(31))] == ["resolved"]
        assert session.scalars(sa.select(Delivery)).all() == [], "silenced: nobody is told"

    lifted = client.delete(f"/api/silences/{silence['id']}", headers=AUTH)
    assert lifted.status_code == 200 and lifted.get_json()["silence"]["until_ms"] == at(26)
    assert client.get("/api/silences").get_json()["silences"] == []
    assert client.delete("/api/silences/999", headers=AUTH).status_code == 404
    with so.Session(engine) as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(AlertEvent)) == 2


def test_the_server_evaluates_once_started(database_url, engine):
    stalled(engine)
    app = create_app(
        {"DATABASE_URL": database_url, "CLOCK": lambda: at(26), "ALERT_INTERVAL_S": 0.05}
    )
    evaluator = evaluation.evaluator(app)
    evaluator.start()
    try:
        listed = wait_until(
            lambda: app.test_client().get("/api/alerts").get_json()["alerts"],
            10,
            "the server to evaluate the rules",
        )
        assert [a["rule"] for a in listed] == ["partition_stalled"]
    finally:
        evaluator.stop()
        db.dispose(app)


def test_a_rules_file_broken_while_serving_is_reported_until_it_is_fixed(
    database_url, engine, tmp_path
):
    stalled(engine)
    rules = tmp_path / "rules.yml"
    rules.write_text(RULES)
    app = create_app(
        {
            "DATABASE_URL": database_url,
            "CLOCK": lambda: at(26),
            "ALERT_RULES": rules,
            "ALERT_INTERVAL_S": 0.05,
        }
    )
    client = app.test_client()

    def listed():
        return client.get("/api/alerts").get_json()

    assert listed()["rules_error"] is None, "nothing to say before evaluation starts"
    evaluator = evaluation.evaluator(app)
    evaluator.start()
    try:
        wait_until(lambda: listed()["alerts"], 10, "the server to evaluate the rules")
        rewrite(rules, RULES + "   offset_lag: {}\n", 1)
        error = wait_until(lambda: listed()["rules_error"], 10, "the rules error")
        assert error.startswith(f"{rules}: line 3: not YAML: ") and "expected <block end>" in error
        assert [a["rule"] for a in listed()["alerts"]] == ["partition_stalled"]
        rewrite(rules, RULES, 2)
        wait_until(lambda: listed()["rules_error"] is None, 10, "the error to go with the fix")
    finally:
        evaluator.stop()
        db.dispose(app)


def test_a_bad_rules_file_stops_the_server_from_starting(database_url, tmp_path):
    rules = tmp_path / "rules.yml"
    rules.write_text("rules:\n  offset_lag: {threshold: many}\n")
    with pytest.raises(RulesFileError, match="line 2: threshold must be a whole number"):
        create_app({"DATABASE_URL": database_url, "ALERT_RULES": rules})


def test_cancelled_alerts_are_counted_not_listed_and_the_firing_come_first(
    database_url, engine, capsys
):
    """A query stops; later a stall fires and resolves; later still a stall goes pending and
    clears before its `for`: every alert is listed the firing first, then the pending, then
    the resolved stall, and the cancelled one is counted, not listed."""
    failed = "f0000000-0000-4000-8000-000000000000"
    write_events(
        engine,
        [QueryStarted(failed, "r", "payments", at(0)), QueryTerminated(failed, "r", at(10))],
    )
    with so.Session(engine) as session:
        evaluate(session, ONLY_STALLED, at(11))
        stalled(engine)
        evaluate(session, ONLY_STALLED, at(26))
        moves_again(engine)
        evaluate(session, ONLY_STALLED, at(31))
        # t/1 stops again from 30 s: stalled at 55 s, pending for an hour; read at 60 s.
        write(engine, 4, 45, ends=[50, 20], latests=[50, 60], watermark_s=45)
        write(engine, 5, 55, ends=[60, 20], latests=[60, 60], watermark_s=55)
        evaluate(session, PENDING_AN_HOUR, at(55))
        write(engine, 6, 60, ends=[70, 60], latests=[70, 60], watermark_s=60)
        evaluate(session, PENDING_AN_HOUR, at(60))
    client = create_app({"DATABASE_URL": database_url, "CLOCK": lambda: at(61)}).test_client()
    answer = client.get("/api/alerts?state=all").get_json()
    # t/1's long wait left t/0 idle, pending since: second, the newer resolved stall last.
    assert [(a["rule"], a["state"]) for a in answer["alerts"]] == [
        ("query_terminated", "firing"),
        ("partition_idle", "pending"),
        ("partition_stalled", "resolved"),
    ]
    assert answer["cancelled"] == 1
    # Evaluated by hand here, through no lease: no process evaluates, none ever finished.
    assert (answer["evaluating"], answer["evaluated_at_ms"]) == (False, None)
    assert main(["alerts", "--all", "--database-url", database_url]) == 0
    out = capsys.readouterr().out
    assert out.index("query_terminated") < out.index("partition_stalled")
    assert "1 pending alerts cleared before their rule's for: counted, not listed." in out
    assert "No process has evaluated the alert rules in this store" in out


PENDING_AN_HOUR = load_rules("""\
queries:
  - match: "*"
    rules:
      no_progress: {enabled: false}
      watermark_age: {enabled: false}
      partition_stalled: {for: 1h, keep_firing_for: 0}
""")
