"""Posting to a real collector over HTTP: waiting out an outage, one bad event costing only
itself, a wrong token retried rather than lost, and drops reported."""

import pytest
import sqlalchemy as sa

from monitor.collect.sender import HttpSender
from monitor.collect.spark_events import STARTED, named
from monitor.store.schema.engine import create_engine
from monitor.store.schema.models import Batch, Sender
from tests.support.network import closed_port
from tests.support.progress import fixture, progress_event
from tests.support.real_collector import INGEST_TOKEN, serving_collector
from tests.support.waiting import wait_until

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def stored_batch_ids(database_url: str) -> list[int]:
    with create_engine(database_url).connect() as connection:
        return list(connection.scalars(sa.select(Batch.batch_id).order_by(Batch.batch_id)))


def test_events_wait_out_an_outage_and_arrive_in_order(database_url):
    port = closed_port()
    sender = HttpSender(
        f"http://127.0.0.1:{port}", INGEST_TOKEN, "app-1", capacity=100, max_backoff=0.2
    )
    try:
        sender.submit(named(STARTED, fixture("started.json")))
        for batch_id in range(5):
            sender.submit(progress_event(batch_id=batch_id))
        wait_until(lambda: sender.stats().retries >= 2, 10, "retries while nothing listens")
        assert not sender.stats().store_available
        assert sender.stats().last_error.startswith(f"cannot reach http://127.0.0.1:{port}")
        with serving_collector(database_url, port=port):
            assert sender.flush(timeout=30)
    finally:
        sender.close(timeout=5)
    assert stored_batch_ids(database_url) == [0, 1, 2, 3, 4]
    assert (sender.stats().written, sender.stats().dropped, sender.stats().rejected) == (6, 0, 0)


def test_one_bad_event_is_rejected_alone(database_url):
    with serving_collector(database_url) as url:
        sender = HttpSender(url, INGEST_TOKEN, "app-1", capacity=100)
        bad = progress_event(batchId="7")
        for event in (progress_event(batch_id=0), bad, progress_event(batch_id=1)):
            sender.submit(event)
        assert sender.close(timeout=30)
    assert stored_batch_ids(database_url) == [0, 1]
    stats = sender.stats()
    assert (stats.written, stats.rejected) == (2, 1)
    assert stats.last_error.startswith(
        "set aside by the collector: event 1: progress field 'batchId' must be int"
    )


def test_a_wrong_token_is_retried_not_lost(database_url):
    with serving_collector(database_url) as url:
        sender = HttpSender(url, "wrong", "app-1", capacity=100, max_backoff=0.2)
        sender.submit(progress_event(batch_id=0))
        wait_until(lambda: sender.stats().retries >= 1, 10, "a retry after 401")
        assert sender.stats().last_error.startswith("HTTP 401: a valid token is needed")
        assert not sender.flush(timeout=0.5)
        sender.close(timeout=0.5)
    assert stored_batch_ids(database_url) == []
    assert sender.stats().pending == 1


def test_drops_are_reported_with_the_next_delivery(database_url):
    port = closed_port()
    sender = HttpSender(f"http://127.0.0.1:{port}", INGEST_TOKEN, "app-7", capacity=3)
    try:
        for batch_id in range(10):
            sender.submit(progress_event(batch_id=batch_id))
        with serving_collector(database_url, port=port):
            assert sender.flush(timeout=30)
    finally:
        sender.close(timeout=5)
    kept = stored_batch_ids(database_url)
    assert kept[-3:] == [7, 8, 9], "the newest events are kept"
    with create_engine(database_url).connect() as connection:
        row = connection.execute(sa.select(Sender)).one()
    assert (row.id, row.dropped) == ("app-7", sender.stats().dropped)
    assert row.dropped == 10 - len(kept) >= 4, "at most 3 waiting and 3 in flight"


def test_an_event_over_the_collectors_limit_is_rejected_alone(database_url):
    huge = progress_event(batch_id=1)
    huge["progress"]["observedMetrics"] = {"padding": {"text": "x" * (17 * 1024 * 1024)}}
    with serving_collector(database_url) as url:
        sender = HttpSender(url, INGEST_TOKEN, "app-1", capacity=100)
        for event in (progress_event(batch_id=0), huge, progress_event(batch_id=2)):
            sender.submit(event)
        assert sender.close(timeout=60)
    assert stored_batch_ids(database_url) == [0, 2]
    assert sender.stats().rejected == 1
    assert sender.stats().last_error.startswith("HTTP 413: the request body is too large")
