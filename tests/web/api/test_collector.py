"""The HTTP collector: Spark's events posted in the event log's form, stored exactly as the
in-process listener stores them; what cannot be read or stored is set aside alone."""

import functools
import json

import pytest
import sqlalchemy as sa

from monitor.collect.spark_events import IDLE, PROGRESS, STARTED, TERMINATED, named
from monitor.collect.writer import StoreWriter
from monitor.spark.listener import WatermarkListener
from monitor.store.schema.engine import create_engine
from monitor.store.schema.models import Batch, Query, RejectedEvent, Sender
from monitor.store.write.writes import write_events
from tests.support.progress import fixture, progress_doc
from tests.support.stores import stored_rows

TOKEN = "ingest-secret"
NOW_MS = 1_795_316_300_500
QUERY_ID = "ce6c40cf-c37e-43d2-a1ac-13e2bb1bd45c"


@pytest.fixture
def app_config():
    return {"TESTING": True, "INGEST_TOKEN": TOKEN, "CLOCK": lambda: NOW_MS}


def post(client, body, token=TOKEN, **headers):
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return client.post("/api/ingest", data=data, headers=headers, content_type="application/json")


def lifecycle() -> list[tuple[str, dict]]:
    """A run as Spark's JSON: started, three batches, idle, terminated (kind, document)."""
    events = [(STARTED, {**fixture("started.json"), "name": "telemetry_windows"})]
    for batch_id in range(3):
        doc = progress_doc(batchId=batch_id, timestamp=f"2026-11-22T02:57:3{batch_id}.502Z")
        events.append((PROGRESS, {"progress": doc}))
    events.append((IDLE, fixture("idle.json")))
    events.append((TERMINATED, fixture("terminated.json")))
    return events


def test_posted_events_are_stored_as_the_listener_stores_them(client, database_url, tmp_path):
    response = post(client, [named(kind, doc) for kind, doc in lifecycle()])
    assert response.status_code == 200, response.get_json()
    assert response.get_json() == {
        "stored": 6,
        "ignored": 0,
        "unchanged": 0,
        "rejected": 0,
        "errors": [],
    }

    by_listener = create_engine(f"sqlite:///{tmp_path / 'listener.db'}")
    # Both hear the job when its events arrive: the collector by the app's clock, so this too.
    arriving = functools.partial(write_events, arrived_at_ms=NOW_MS)
    writer = StoreWriter(by_listener, capacity=100, write=arriving)
    listener = WatermarkListener(writer.submit, clock=lambda: NOW_MS / 1000)
    for kind, doc in lifecycle():
        listener.handle(kind, lambda doc=doc: doc)
    assert writer.close(timeout=30)
    collected = create_engine(database_url)
    assert stored_rows(collected, QUERY_ID) == stored_rows(by_listener, QUERY_ID)
    assert len(stored_rows(collected, QUERY_ID)["batches"]) == 3


def test_a_terminated_event_is_at_its_timestamp_or_else_when_it_arrived(client, database_url):
    engine = create_engine(database_url)
    started = named(STARTED, fixture("started.json"))
    assert post(client, [started, named(TERMINATED, fixture("terminated.json"))]).status_code == 200
    with engine.connect() as connection:
        assert connection.scalar(sa.select(Query.terminated_at_ms)) == NOW_MS
    # A run ends once: the end stamped with its time is another run's.
    again = {**fixture("started.json"), "runId": "run-2"}
    stamped = {**fixture("terminated.json"), "runId": "run-2"}
    stamped["timestamp"] = "2026-11-22T03:00:00.000Z"
    assert post(client, [named(STARTED, again), named(TERMINATED, stamped)]).status_code == 200
    with engine.connect() as connection:
        assert connection.scalar(sa.select(Query.terminated_at_ms)) == 1_795_316_400_000


def test_a_replayed_post_changes_nothing(client, database_url):
    body = [named(kind, doc) for kind, doc in lifecycle()]
    assert post(client, body).status_code == 200
    first = stored_rows(create_engine(database_url), QUERY_ID)
    assert post(client, body).status_code == 200
    assert stored_rows(create_engine(database_url), QUERY_ID) == first


def test_one_event_alone_and_other_spark_events_ignored(client):
    job_end = {"Event": "SparkListenerJobEnd", "Job ID": 3, "Completion Time": NOW_MS}
    nothing = {"stored": 0, "ignored": 0, "unchanged": 0, "rejected": 0, "errors": []}
    assert post(client, named(STARTED, fixture("started.json"))).get_json() == {
        **nothing,
        "stored": 1,
    }
    assert post(client, [job_end]).get_json() == {**nothing, "ignored": 1}


def test_one_bad_event_is_set_aside_and_the_rest_are_stored(client, database_url):
    good = named(STARTED, fixture("started.json"))
    bad = named(PROGRESS, {"progress": {k: v for k, v in progress_doc().items() if k != "batchId"}})
    response = post(client, [good, bad], **{"Wmon-Sender": "app-1"})
    assert response.status_code == 200
    assert response.get_json() == {
        "stored": 1,
        "ignored": 0,
        "unchanged": 0,
        "rejected": 1,
        "errors": [{"event": 1, "error": "progress has no 'batchId'"}],
    }
    with create_engine(database_url).connect() as connection:
        assert connection.scalar(sa.select(sa.func.count()).select_from(Query)) == 1
        [aside] = connection.execute(sa.select(RejectedEvent)).all()
    assert (aside.origin, aside.error, json.loads(aside.document)) == (
        "app-1",
        "progress has no 'batchId'",
        bad,
    )
    [sender] = client.get("/api/senders").get_json()["senders"]
    assert (sender["events"], sender["rejected"]) == (1, 1)


def test_a_body_that_is_not_json_is_a_400(client):
    response = post(client, b"{")
    assert (response.status_code, response.get_json()) == (
        400,
        {"error": "the body is not valid JSON"},
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([{"progress": {}}], "not a Spark event: it has no 'Event' name"),
        ([[]], "a Spark event is a JSON object, not list"),
        (
            [{"Event": "org.apache.spark.sql.streaming.StreamingQueryListener$QueryStartedEvent"}],
            "event has no 'id'",
        ),
    ],
    ids=["not a spark event", "not an object", "started without fields"],
)
def test_a_request_whose_every_event_is_refused_is_a_422_naming_why(client, body, message):
    response = post(client, body)
    assert response.status_code == 422
    assert response.get_json()["errors"] == [{"event": 0, "error": message}]


def test_too_many_events_in_one_request(client):
    response = post(client, [{"Event": "SparkListenerJobEnd"}] * 10_001)
    assert response.status_code == 400
    assert response.get_json()["error"] == "at most 10000 events per request, not 10001"


def test_a_body_over_the_limit_is_413_saying_the_limit(client):
    response = post(client, b"[" + b" " * (16 * 1024 * 1024) + b"]")
    assert response.status_code == 413
    assert response.get_json()["error"] == (
        "the request body is too large: the limit is 16,384 KiB"
    )


def test_a_body_that_is_not_json_is_415(client):
    response = client.post("/api/ingest", data="x", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 415


@pytest.mark.parametrize(("token", "status"), [(None, 401), ("wrong", 401), (TOKEN.upper(), 401)])
def test_posting_needs_the_ingest_token(client, token, status):
    response = post(client, named(STARTED, fixture("started.json")), token=token)
    assert response.status_code == status
    assert response.get_json()["error"].startswith("a valid token is needed")


def test_the_alert_token_does_not_open_the_collector(app, database_url):
    app.config.update(API_TOKEN="alerts-secret", INGEST_TOKEN=None)
    response = post(
        app.test_client(), named(STARTED, fixture("started.json")), token="alerts-secret"
    )
    assert response.status_code == 403
    assert "set WMON_INGEST_TOKEN" in response.get_json()["error"]


def test_senders_are_counted_with_what_they_dropped(client, database_url):
    body = [named(kind, doc) for kind, doc in lifecycle()]
    headers = {"Wmon-Sender": "app-20261122-0001"}
    assert post(client, body[:2], **headers, **{"Wmon-Dropped": "0"}).status_code == 200
    assert post(client, body[2:], **headers, **{"Wmon-Dropped": "17"}).status_code == 200
    with create_engine(database_url).connect() as connection:
        sender = connection.execute(sa.select(Sender)).one()
        batches = connection.scalar(sa.select(sa.func.count()).select_from(Batch))
    assert (sender.id, sender.events, sender.dropped, sender.last_seen_ms) == (
        "app-20261122-0001",
        6,
        17,
        NOW_MS,
    )
    assert batches == 3
    assert client.get("/api/senders").get_json() == {
        "senders": [
            {
                "id": "app-20261122-0001",
                "first_seen_ms": NOW_MS,
                "last_seen_ms": NOW_MS,
                "events": 6,
                "dropped": 17,
                "rejected": 0,
            }
        ]
    }


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({"Wmon-Dropped": "-1"}, "Wmon-Dropped"),
        ({"Wmon-Dropped": "many"}, "Wmon-Dropped"),
        ({"Wmon-Sender": "x" * 256}, "Wmon-Sender must be 1 to 255 printable characters"),
    ],
)
def test_bad_sender_headers_get_a_400(client, headers, message):
    response = post(client, named(STARTED, fixture("started.json")), **headers)
    assert response.status_code == 400
    assert message in response.get_json()["error"]
