"""Drivers whose clocks lie: a query's stored times are its job's, whatever they say, and
every read of it answers."""

import json
import time

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.alerts.evaluate import evaluate
from monitor.alerts.rulefile import load_rules
from monitor.collect.progress import parse_progress
from monitor.collect.spark_events import STARTED, named
from monitor.store.schema.models import AlertRow
from monitor.store.write.writes import write_event
from tests.support.progress import fixture, progress_doc, progress_event, stamp
from tests.support.real_collector import INGEST_TOKEN

QUERY = "44444444-4444-4444-4444-444444444444"
THREE_YEARS_MS = 3 * 365 * 86_400_000


@pytest.fixture
def app_config():
    return {"TESTING": True, "INGEST_TOKEN": INGEST_TOKEN}


def test_a_query_whose_clock_says_1969_reads_back(client, engine):
    """The issue's probe: stored with 200, then every read of the query answered 400 'from (0)
    must be before to (-59999)' with no range asked."""
    for batch_id, at_ms in enumerate((-120_000, -60_000)):
        doc = progress_doc(id=QUERY, runId="r", batchId=batch_id, timestamp=stamp(at_ms))
        write_event(engine, parse_progress(doc))
    base = f"/api/queries/{QUERY}"
    batches = client.get(f"{base}/batches")
    assert batches.status_code == 200, batches.get_json()
    assert sum(batches.get_json()["series"]["batches"]) == 2
    for path in ("/partitions/history", "/diagnosis", "/history.csv", "/timers", ""):
        response = client.get(base + path)
        assert response.status_code == 200, (path, response.get_data(as_text=True)[:300])


def test_a_watermark_years_ahead_has_no_negative_age_anywhere(client, engine):
    """The issue's probe: /metrics exported wmon_query_watermark_age_seconds -94,672,757."""
    now = int(time.time() * 1000)
    ahead = stamp(now + THREE_YEARS_MS)
    doc = progress_doc(id=QUERY, runId="r", batchId=0, timestamp=stamp(now))
    doc["eventTime"] = {**doc["eventTime"], "watermark": ahead}
    write_event(engine, parse_progress(doc))
    scrape = client.get("/metrics").get_data(as_text=True)
    [age] = [line for line in scrape.splitlines() if line.startswith("wmon_query_watermark_age")]
    assert age.endswith(" 0.0")
    overview = client.get("/api/queries").get_json()["queries"]
    assert [row["watermark_age_ms"] for row in overview] == [0]
    series = client.get(f"/api/queries/{QUERY}/batches").get_json()["series"]
    assert series["watermark_age_max_ms"] == [0]


def post(client, events):
    response = client.post(
        "/api/ingest",
        data=json.dumps(events),
        content_type="application/json",
        headers={"Authorization": f"Bearer {INGEST_TOKEN}"},
    )
    assert response.status_code == 200, response.get_json()


def test_a_driver_years_behind_that_reports_every_second_is_live(client, engine):
    """The issue's probe: three years behind, the live query showed stalled, 'heard 1095 d
    18 h ago', and paged critical no_progress while it reported every second."""
    now = int(time.time() * 1000)
    claimed = now - THREE_YEARS_MS
    started = {**fixture("started.json"), "id": QUERY, "runId": "r", "timestamp": stamp(claimed)}
    post(client, [named(STARTED, started)])
    for batch_id in range(3):
        post(client, [progress_event(QUERY, batch_id, "r", timestamp=stamp(claimed))])
    query = client.get(f"/api/queries/{QUERY}").get_json()["query"]
    assert query["status"] not in ("stalled", "failed", "error")
    assert now <= query["updated_at_ms"] <= int(time.time() * 1000)
    assert abs(query["clock_behind_ms"] - THREE_YEARS_MS) < 60_000
    with so.Session(engine, expire_on_commit=False) as session:
        evaluate(session, load_rules(""), int(time.time() * 1000))
        raised = {alert.rule for alert in session.scalars(sa.select(AlertRow))}
    assert "no_progress" not in raised and "clock_behind" in raised
