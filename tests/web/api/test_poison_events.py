"""Events a store cannot hold as they are, or that are truly invalid: what Spark can report is
stored, faithfully; what is invalid is set aside alone, and never holds up the rest."""

import json

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.alerts.evaluate import evaluate
from monitor.alerts.rulefile import load_rules
from monitor.collect.sender import HttpSender
from monitor.collect.spark_events import STARTED, TERMINATED, named, spark_event
from monitor.numbers import INT64_MAX
from monitor.store.schema.engine import create_engine
from monitor.store.schema.models import Query, RejectedEvent
from monitor.store.write.writes import write_event
from tests.support.progress import fixture, progress_doc, progress_event
from tests.support.real_collector import INGEST_TOKEN, serving_collector
from tests.support.stores import stored_partitions

T0 = 1_795_316_300_000
HEALTHY = "aaaaaaaa-0000-0000-0000-000000000000"
LONG_NAMED = "bbbbbbbb-0000-0000-0000-000000000000"


@pytest.fixture
def app_config():
    return {"TESTING": True, "INGEST_TOKEN": INGEST_TOKEN}


def table(database_url, select):
    with create_engine(database_url).connect() as connection:
        return connection.execute(select).all()


def test_a_long_name_nul_and_lone_surrogates_are_stored_faithfully(client, database_url):
    started = {**fixture("started.json"), "id": LONG_NAMED, "name": "n" * 300}
    terminated = {
        **fixture("terminated.json"),
        "id": LONG_NAMED,
        "runId": started["runId"],
        "exception": "boom\x00 at \ud800",
    }
    sources = progress_doc()["sources"]
    sources[0]["endOffset"] = {"t\x00\udc80": {"0": 5}}
    sources[0]["latestOffset"] = {"t\x00\udc80": {"0": 9}}
    body = [
        named(STARTED, started),
        progress_event(LONG_NAMED, 0, runId=started["runId"], name="n" * 300, sources=sources),
        named(TERMINATED, terminated),
    ]
    response = client.post(
        "/api/ingest",
        data=json.dumps(body),
        content_type="application/json",
        headers={"Authorization": f"Bearer {INGEST_TOKEN}"},
    )
    assert response.get_json()["rejected"] == 0 and response.get_json()["stored"] == 3
    [(name, status, exception)] = table(
        database_url, sa.select(Query.name, Query.status, Query.exception)
    )
    assert (name, status, exception) == ("n" * 300, "failed", "boom\\x00 at \\ud800")
    partitions = {row.partition for row in stored_partitions(create_engine(database_url))}
    assert partitions == {"t\\x00\\udc80/0"}


def test_a_name_past_what_the_store_keeps_is_cut_and_a_partition_past_it_refused(
    client, database_url
):
    sources = progress_doc()["sources"]
    sources[0]["endOffset"] = {"t" * 501: {"0": 5}}
    response = client.post(
        "/api/ingest",
        data=json.dumps(
            [
                progress_event(HEALTHY, 0, name="x" * 900),
                progress_event(HEALTHY, 1, sources=sources),
            ]
        ),
        content_type="application/json",
        headers={"Authorization": f"Bearer {INGEST_TOKEN}"},
    )
    assert response.status_code == 200
    assert response.get_json()["errors"] == [
        {"event": 1, "error": "a partition or topic name is longer than 500 characters"}
    ]
    [(name,)] = table(database_url, sa.select(Query.name))
    assert name == "x" * 499 + "…"
    assert len(table(database_url, sa.select(RejectedEvent.id))) == 1


def test_a_poison_event_does_not_hold_up_a_healthy_querys_batches(database_url):
    """The issue's probe: a query the store could not hold blocked every event behind it."""
    poison = progress_event(
        LONG_NAMED, 0, sources=[{"description": "x", "endOffset": {"t" * 600: 1}}]
    )
    with serving_collector(database_url) as url:
        sender = HttpSender(url, INGEST_TOKEN, "app-1", capacity=1_000, group_size=10)
        for batch_id in range(40):
            sender.submit(progress_event(HEALTHY, batch_id))
            if batch_id % 10 == 3:
                sender.submit(poison)
        assert sender.close(timeout=60)
    stats = sender.stats()
    assert (stats.written, stats.rejected, stats.retries, stats.dropped) == (40, 4, 0, 0)
    stored = table(database_url, sa.select(sa.func.count()).select_from(Query))
    assert stored == [(1,)]
    [sender_row] = table(database_url, sa.text("SELECT events, rejected FROM senders"))
    assert tuple(sender_row) == (40, 4)


def test_set_aside_events_are_counted_in_the_scrape(client, database_url):
    poison = progress_event(
        LONG_NAMED, 0, sources=[{"description": "x", "endOffset": {"t" * 600: 1}}]
    )
    headers = {"Authorization": f"Bearer {INGEST_TOKEN}"}
    response = client.post("/api/ingest", json=[poison, poison], headers=headers)
    assert response.status_code == 422
    scrape = client.get("/metrics").get_data(as_text=True)
    assert "\nwmon_rejected_events 2.0\n" in scrape


def test_an_absurd_lag_fails_no_read_of_any_query(client, engine):
    """The issue's probe: two partitions lagging 2^63 - 1 made SQLite's sum() overflow, and
    the overview, the scrape and the alert rules of every query failed with it."""
    sources = progress_doc()["sources"]
    sources[0]["startOffset"] = sources[0]["endOffset"] = {"t": {"0": 0, "1": 0}}
    sources[0]["latestOffset"] = {"t": {"0": INT64_MAX, "1": INT64_MAX}}
    write_event(engine, spark_event(progress_event(LONG_NAMED, 0, sources=sources), None))
    write_event(engine, spark_event(progress_event(HEALTHY, 0), None))
    response = client.get("/api/queries")
    assert response.status_code == 200
    assert len(response.get_json()["queries"]) == 2
    assert client.get("/metrics").status_code == 200
    assert client.get(f"/api/queries/{LONG_NAMED}").status_code == 200
    with so.Session(engine, expire_on_commit=False) as session:
        evaluate(session, load_rules(""), T0)


def nested_text(depth):
    """The JSON text of a value `depth` objects deep (deeper than json.dumps goes)."""
    return '{"m": ' * depth + "1" + "}" * depth


@pytest.mark.parametrize("depth", [500, 2_000])
def test_a_deep_event_is_set_aside_alone_and_the_rest_stored(client, database_url, depth):
    """The issue's probe: observedMetrics nested 500 deep failed its whole request (500,
    RecursionError) and the three valid events posted with it were lost; past about 1,000
    levels the whole body could not be decoded."""
    started = {
        **fixture("started.json"),
        "id": HEALTHY,
        "runId": HEALTHY.replace("0000", "1111", 1),
    }
    deep = json.dumps(progress_event(HEALTHY, 1, observedMetrics={"deep": "DEEP"}))
    deep = deep.replace('"DEEP"', nested_text(depth))
    body = [json.dumps(event) for event in (named(STARTED, started), progress_event(HEALTHY, 0))]
    body = "[" + ", ".join([*body, deep, json.dumps(progress_event(HEALTHY, 2))]) + "]"
    response = client.post(
        "/api/ingest",
        data=body,
        content_type="application/json",
        headers={"Authorization": f"Bearer {INGEST_TOKEN}"},
    )
    answer = response.get_json()
    assert (response.status_code, answer["stored"], answer["rejected"]) == (200, 3, 1)
    assert [error["event"] for error in answer["errors"]] == [2]
    [(document,)] = table(database_url, sa.select(RejectedEvent.document))
    kept = json.loads(document)  # decoded and set aside as it was, or as its text if it was not
    assert nested_text(depth) in (kept if isinstance(kept, str) else json.dumps(kept))
    stored = table(database_url, sa.text("SELECT batch_id FROM batches ORDER BY batch_id"))
    assert [row.batch_id for row in stored] == [0, 2]
