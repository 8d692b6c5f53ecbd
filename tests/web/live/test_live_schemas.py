"""Every event the live push sends, and every acknowledgement, against its JSON Schema
(web/schemas/live/): a real server over a store in many states (tests/support/store_states.py),
a real Socket.IO client in every room, and writes that make each event come."""

import inspect
import re
import shutil
import time

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.alerts.actions import acknowledge, silence
from monitor.events import TimerSnapshot
from monitor.store.schema.models import AlertRow
from monitor.store.write.writes import write_events
from tests.support.paths import ROOT
from tests.support.push_clients import WAIT_S
from tests.support.schemas import INDEX, check
from tests.support.store_states import NOW, ORDERS, fill, orders_batch
from tests.support.waiting import wait_until
from web.sockets import socketio

# What names an event the live push sends, in its code.
SENT = re.compile(r'(?:\bEvent|\.emit)\(\s*"(\w+)"')


@pytest.fixture
def database_url(sqlite_template, tmp_path):
    """SQLite alone: the events are made by the same code as the API's answers, whose schemas
    tests/web/api/test_api_schemas.py checks on both stores."""
    shutil.copyfile(sqlite_template, tmp_path / "wmon.db")
    return f"sqlite:///{tmp_path / 'wmon.db'}"


@pytest.fixture
def app_config():
    return {"CLOCK": lambda: NOW, "POLL_INTERVAL_S": 0.2, "OVERVIEW_REFRESH_S": 0.5}


def test_every_event_the_live_push_sends_has_a_schema():
    """An event added to the live push (or an acknowledgement) without a schema and a line in
    the index fails here."""
    sent = {
        name for path in (ROOT / "web/live").glob("*.py") for name in SENT.findall(path.read_text())
    }
    assert sent == set(INDEX["live"])
    answering = {
        name
        for name, handler, _ in socketio.handlers
        if inspect.unwrap(handler).__annotations__.get("return") not in (None, "None")
    }
    assert answering == set(INDEX["live_ack"])


def record_everything(browser):
    """Record every event the client receives, whatever its name."""
    browser.client.on("*", lambda event, data: browser.received.append((event, time.time(), data)))


def call(browser, event, *data):
    """A request's acknowledgement, checked."""
    answer = browser.client.call(event, *data, timeout=WAIT_S)
    check(answer, INDEX["live_ack"][event], f"the acknowledgement of {event} {data}")
    return answer


def write_what_makes_each_event(engine):
    """A new batch and timer snapshot of orders, an alert acknowledged, a silence made."""
    write_events(
        engine,
        [orders_batch(8), TimerSnapshot(ORDERS, "run-1", NOW, NOW - 30_000, 4, NOW + 1, 1_000, 0)],
    )
    with so.Session(engine) as session:
        pending = session.scalars(sa.select(AlertRow.id).where(AlertRow.state == "pending"))
        acknowledge(session, pending.first(), "ana", NOW)
        silence(
            session,
            rule="partition_idle",
            query_id=ORDERS,
            partition="t/0",
            until_ms=NOW + 60_000,
            now_ms=NOW,
            by="ana",
            comment="known",
        )


def test_every_event_and_acknowledgement_is_as_its_schema_says(engine, browsers):
    fill(engine)
    browser = browsers()
    record_everything(browser)
    assert call(browser, "subscribe_overview")["queries"] > 1
    assert call(browser, "subscribe_alerts") == {"room": "alerts"}
    assert call(browser, "subscribe", {"query": ORDERS, "after_batch": 4})["caught_up"] == 3
    assert "error" in call(browser, "subscribe", {"query": "nothing", "after_batch": None})
    write_what_makes_each_event(engine)

    def every_kind():
        kinds = {event for event, _, _ in browser.received}
        return kinds >= set(INDEX["live"]) and 8 in browser.batch_ids()

    wait_until(every_kind, WAIT_S, "an event of every kind, and batch 8")
    for event, _, data in list(browser.received):
        assert event in INDEX["live"], f"the live push sent {event!r}, which has no schema"
        check(data, INDEX["live"][event], f"the live event {event!r}")
    batches = [data for event, _, data in browser.received if event == "batch"]
    assert {batch["batch"]["batch_id"] for batch in batches} == {5, 6, 7, 8}
    assert [batch["backlog"] is None for batch in batches] == [True, True, False, False]
