"""The overview of a fleet of 300 queries in a real headless Chromium: searched, filtered by
status, grouped by prefix, drawn a hundred rows at a time, its alerts without the socket."""

import re
import time

import pytest
import sqlalchemy.orm as so
from playwright.sync_api import expect

from monitor.alerts.evaluate import evaluate
from monitor.alerts.rulefile import RuleSet
from monitor.events import QueryIdle, QueryStarted, QueryTerminated
from monitor.store.write.writes import write_events
from tests.support.progress import batch_event

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),
]

WAIT_MS = 20_000
NOW = (time.time_ns() // 1_000_000) // 1_000 * 1_000
PREFIXES = ("orders", "payments", "clicks", "fraud", "ads")
# By number: both failed queries are orders', the stalled ones (silent for almost 7 minutes)
# clicks', and there is an idle query of each prefix.
FAILED = (50, 250)
STALLED = (7, 77, 177)
IDLE = range(100, 105)
SOCKET = re.compile(r"/socket\.io/")


def fleet_name(i):
    return f"{PREFIXES[i % 5]}{'_.-'[i % 3]}{i:03d}"


def query_events(i):
    """The events of query `i`, on a run of its own: one batch, and what ended or idled it."""
    query_id, run_id, name = f"q{i}", f"run-{i}", fleet_name(i)
    started = QueryStarted(query_id, run_id, name, NOW - 600_000)
    if i in STALLED:
        return [started, batch_event(query_id, 0, NOW - 400_000, name=name, run_id=run_id)]
    batch = batch_event(query_id, 0, NOW - 10_000, name=name, run_id=run_id)
    if i in FAILED:
        return [started, batch, QueryTerminated(query_id, run_id, NOW - 5_000, "boom", "X_ERROR")]
    if i in IDLE:
        return [started, batch, QueryIdle(query_id, run_id, NOW - 5_000)]
    return [started, batch]


def write_fleet(engine):
    """300 queries in one transaction, and the built-in rules evaluated a minute apart, as the
    server does: the failed and the silent queries have firing alerts."""
    write_events(engine, [event for i in range(300) for event in query_events(i)])
    with so.Session(engine) as session:
        evaluate(session, RuleSet(), NOW - 61_000)
        evaluate(session, RuleSet(), NOW - 1_000)


def names(tab):
    return tab.locator("#queries tbody tr:not(.group) td.name a").all_text_contents()


def headings(tab):
    return tab.locator("#queries tr.group th").all_text_contents()


def status_button(tab, label):
    return tab.locator("#counts button", has_text=re.compile(f"^{label}$"))


def test_a_fleet_is_searched_filtered_grouped_and_paged_with_its_alerts_at_once(
    engine, serve, page
):
    write_fleet(engine)
    url = serve(CLOCK=lambda: NOW)
    # No live connection: the rows and the alerts come from the API alone.
    page.route(SOCKET, lambda route: route.abort())
    page.goto(url)
    rows = page.locator("#queries tbody tr")
    expect(rows).to_have_count(100, timeout=WAIT_MS)
    expect(page.locator("#counts")).to_have_text(
        "300 queries: 2 failed · 3 stalled · 5 idle · 290 healthy — showing 100 of 300"
    )
    expect(page.locator("#alert-count")).to_have_text(re.compile(r"^Alerts: [1-9]\d* firing"))
    for i in (*FAILED, *STALLED):
        row = rows.filter(has_text=fleet_name(i))
        expect(row.locator(".firing .severity").first).to_be_visible()
    assert page.locator("#connection").is_hidden()

    status_button(page, "3 stalled").click()
    expect(rows).to_have_count(3)
    assert sorted(names(page)) == sorted(fleet_name(i) for i in STALLED)
    assert page.url.endswith("/?status=stalled")
    status_button(page, "2 failed").click()
    expect(rows).to_have_count(5)
    assert page.url.endswith("/?status=failed,stalled")
    status_button(page, "all").click()
    expect(rows).to_have_count(100)
    assert "?" not in page.url

    page.fill("#search", "PAYMENTS")
    expect(rows).to_have_count(60)
    assert all(name.startswith("payments") for name in names(page))
    expect(page.locator("#counts")).to_have_text(
        "300 queries, 60 named like “PAYMENTS”: 1 idle · 59 healthy"
    )
    page.check("#group")
    assert headings(page) == ["payments60 queries: 1 idle · 59 healthy"]
    status_button(page, "1 idle").click()
    expect(rows).to_have_count(2)
    assert names(page) == [fleet_name(101)]
    assert page.url.endswith("/?q=PAYMENTS&status=idle&group=prefix")

    page.reload()
    expect(rows).to_have_count(2, timeout=WAIT_MS)
    assert names(page) == [fleet_name(101)]
    expect(page.locator("#search")).to_have_value("PAYMENTS")
    expect(page.locator("#group")).to_be_checked()
    expect(status_button(page, "1 idle")).to_have_attribute("aria-pressed", "true")

    status_button(page, "1 idle").click()
    page.fill("#search", "")
    expect(page.locator("#counts")).to_have_text(
        "300 queries: 2 failed · 3 stalled · 5 idle · 290 healthy — showing 100 of 300"
    )
    # The most urgent groups first, each with its own counts.
    assert headings(page)[:2] == [
        "orders60 queries: 2 failed · 1 idle · 57 healthy",
        "clicks60 queries: 3 stalled · 1 idle · 56 healthy",
    ]
    page.uncheck("#group")
    expect(page.locator("#queries tr.group")).to_have_count(0)

    more = page.locator("#more")
    expect(more).to_have_text("Show 100 more")
    more.click()
    expect(rows).to_have_count(200)
    more.click()
    expect(rows).to_have_count(300)
    expect(more).to_be_hidden()
    expect(page.locator("#counts")).to_have_text(
        "300 queries: 2 failed · 3 stalled · 5 idle · 290 healthy"
    )
    page.fill("#search", "nothing like it")
    expect(page.locator("#no-match")).to_be_visible()
    expect(rows).to_have_count(0)
