"""One store, every reader, one clock: the overview, each query's page, the alerts, `wmon queries`
(its JSON and its table) and `/metrics` say the same status, the same alert counts and the same
order for a dozen queries in the states that readers once told differently; and so do the
pages themselves, read in Chromium."""

import json
import re
from collections import Counter

import pytest
from playwright.sync_api import expect
from prometheus_client.parser import text_string_to_metric_families

import wmon.queries
from tests.support.judged_fleet import EXPECTED, NOW, fill
from wmon.main import main

STORES = pytest.mark.parametrize("database_url", ["sqlite", "postgresql"], indirect=True)

SEVERITIES = ("critical", "warning")


@pytest.fixture
def app_config():
    return {"TESTING": True, "CLOCK": lambda: NOW}


def overview(client):
    """The overview's rows in order: name, status, alerts counted."""
    rows = client.get("/api/queries").get_json()["queries"]
    return [(row["name"], row["status"], row["alerts"]) for row in rows]


def query_pages(client):
    """Each query's page: its status and alerts counted."""
    found = {}
    for name in EXPECTED:
        query = client.get(f"/api/queries/{name}").get_json()["query"]
        found[name] = (query["status"], query["alerts"])
    return found


def listed_alerts(client):
    """The live alerts as the Alerts page lists them, counted as the pages count them."""
    alerts = client.get("/api/alerts?limit=5000").get_json()["alerts"]
    counts = {name: Counter({"critical": 0, "warning": 0, "pending": 0}) for name in EXPECTED}
    for alert in alerts:
        kind = alert["severity"] if alert["state"] == "firing" else "pending"
        counts[alert["query"]][kind] += 1
    return {name: dict(count) for name, count in counts.items()}


def command(capsys, database_url, *argv):
    assert main(["queries", *argv, "--database-url", database_url]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def table_rows(text):
    """`wmon queries`'s table as (name, health, alerts) in order, read by its columns."""
    header, *lines = text.splitlines()
    starts = [header.index(title) for title in ("name", "health", "alerts", "heard")]
    return [
        tuple(line[a:b].strip() for a, b in zip(starts, starts[1:], strict=False))
        for line in lines
    ]


def alerts_text(counts):
    said = [f"{counts[kind]} {kind}" for kind in (*SEVERITIES, "pending") if counts[kind]]
    return ", ".join(said) or "-"


def scraped_health(client):
    """`wmon_query_health` of each exported query: the status it is 1 for."""
    text = client.get("/metrics").get_data(as_text=True)
    [family] = [f for f in text_string_to_metric_families(text) if f.name == "wmon_query_health"]
    return {s.labels["query"]: s.labels["status"] for s in family.samples if s.value == 1}


@STORES
def test_every_reader_says_the_same_status_counts_and_order(
    engine, database_url, client, capsys, monkeypatch
):
    fill(engine)
    monkeypatch.setattr(wmon.queries, "now_ms", lambda: NOW)
    listed = overview(client)
    assert {name: status for name, status, _ in listed} == EXPECTED
    counts = {name: alerts for name, _, alerts in listed}
    assert query_pages(client) == {name: (EXPECTED[name], counts[name]) for name in EXPECTED}
    assert listed_alerts(client) == counts

    rows = json.loads(command(capsys, database_url, "--json"))
    assert [(row["name"], row["status"], row["alerts"]) for row in rows] == listed
    shown = table_rows(command(capsys, database_url))
    assert shown == [(name, status, alerts_text(alerts)) for name, status, alerts in listed]
    # Every query the scrape exports (all but the one that failed long ago are running or
    # ended within its keep time) has the overview's status.
    scraped = scraped_health(client)
    assert scraped == {name: EXPECTED[name] for name in scraped} and len(scraped) >= 11

    # What pages comes first: the firing critical alerts (the stall, the silence, the failure,
    # the watermark ahead of the clock, the ended query's stall), then the firing warnings.
    severities = [
        next((s for s in SEVERITIES if alerts[s]), None) for _, _, alerts in listed
    ]
    assert severities == sorted(severities, key=lambda s: SEVERITIES.index(s) if s else 2)
    assert counts["watermark_ahead_of_the_clock"]["critical"] == 1
    assert counts["ended_with_alerts_live"]["critical"] >= 1
    assert counts["stall_too_young_to_fire"] == {"critical": 0, "warning": 0, "pending": 1}
    assert counts["falling_behind"]["pending"] == 1


def badges_text(counts):
    """An alert count as the pages' badges say it, a badge a kind, most severe first: a
    pattern of '1 critical' then '1 pending'."""
    said = [f"{counts[kind]} {kind}" for kind in (*SEVERITIES, "pending") if counts[kind]]
    return re.compile("^" + r"\s*".join(said) + "$", re.I)


@pytest.mark.e2e
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_pages_say_what_the_api_says(engine, serve, page):
    fill(engine)
    url = serve(CLOCK=lambda: NOW)
    page.goto(url)
    rows = page.locator("#queries tbody tr:not(.group)")
    expect(rows).to_have_count(len(EXPECTED), timeout=20_000)
    api = page.evaluate("fetch('/api/queries').then((r) => r.json())")["queries"]
    # Each row: the name, the status badge, the alert badges; in the API's order.
    expect(rows.locator("td.name a")).to_have_text([row["name"] for row in api])
    expect(rows.locator("td:nth-child(2) .badge")).to_have_text(
        [re.compile(f"^{row['status']}$", re.I) for row in api]
    )
    expect(rows.locator("td.firing")).to_have_text(
        [badges_text(row["alerts"]) for row in api]
    )
    for row in api:
        if row["name"] not in ("watermark_ahead_of_the_clock", "silent", "falling_behind"):
            continue
        page.goto(f"{url}/queries/{row['id']}")
        expect(page.locator("#status")).to_have_text(re.compile(f"^{row['status']}$", re.I))
        expect(page.locator("#alert-strip-counts")).to_have_text(badges_text(row["alerts"]))
