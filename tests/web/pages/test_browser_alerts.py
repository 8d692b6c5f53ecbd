"""Alerts in the dashboard, in a real headless Chromium (Debian's) driven by Playwright, while a
real streaming query plays the stalled_partition scenario and the server evaluates the rules
itself: the alert appears without a reload, the overview badges its query, a wrong token is
refused and changes nothing, the right one acknowledges it and silences it, and the silence
appears and goes without a reload. Screenshots in build/artifacts/."""

import json
import re
import time
import urllib.request
from contextlib import ExitStack, contextmanager

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so
from playwright.sync_api import expect, sync_playwright

import monitor
import web
from monitor.store.schema.models import AlertEvent, AlertRow
from streaming.demo import stop_between_batches
from streaming.log import PartitionedLog
from streaming.scenarios import STALLED, play
from tests.support.alert_scenarios import RULES, rewrite
from tests.support.pages import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    WALL,
    assert_not_reloaded,
    mark_page,
)
from tests.support.serving import serving
from tests.support.spark_queries import start_query, unique_name
from tests.support.waiting import wait_until
from web import create_app

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.spark,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),
]

TOKEN = "e2e-token"
WAIT_MS = 20_000
# Spark's first batches and a stall of 2 s on a busy machine.
ALERT_WAIT_MS = 90_000


@contextmanager
def dashboard(database_url, **config):
    """The dashboard on a free port in a thread, evaluating the rules every 250 ms as
    `wmon serve` does; its URL."""
    app = create_app(
        {
            "DATABASE_URL": database_url,
            "POLL_INTERVAL_S": 0.2,
            "ALERT_INTERVAL_S": 0.25,
            "API_TOKEN": TOKEN,
        }
        | config
    )
    web.start(app)
    with serving(app) as url:
        yield url


@pytest.fixture
def server(database_url, tmp_path):
    """The dashboard, its stalls firing as soon as they are seen."""
    at_once = tmp_path / "at-once.yml"
    at_once.write_text("rules:\n  partition_stalled: {for: 0}\n")
    with dashboard(database_url, ALERT_RULES=at_once) as url:
        yield url


@pytest.fixture
def rules(tmp_path):
    """A good rules file, whose name would be markup if a page took it for HTML."""
    path = tmp_path / "<b>rules.yml"
    path.write_text(RULES)
    return path


@pytest.fixture
def rules_server(database_url, rules):
    with dashboard(database_url, ALERT_RULES=rules) as url:
        yield url


@pytest.fixture
def tabs(request):
    """Open tabs by name in one Chromium; script errors fail the test, and each tab leaves a
    screenshot named after the test and the tab."""
    opened = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport=WALL)
        errors = []

        def open_tab(name):
            tab = context.new_page()
            tab.on("pageerror", lambda error: errors.append((name, error)))
            opened[name] = tab
            return tab

        yield open_tab
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        test = re.sub(r"[^\w.-]+", "_", request.node.name)
        for name, tab in opened.items():
            tab.screenshot(path=str(ARTIFACTS / f"{test}_{name}.png"), full_page=True)
        browser.close()
    assert not errors, f"script errors on the pages: {errors}"


@pytest.fixture
def stalled_query(spark, database_url, log_dir, checkpoint):
    """Start, when called, a monitored query over the stalled_partition scenario with event
    times from now on (one partition has a backlog and is never read); the scenario and the
    query's name. Asked for before `tabs`, it stops after their screenshots."""
    with ExitStack() as running:

        def start():
            now_ms = int(time.time() * 1000)
            log = PartitionedLog(log_dir)
            scenario = play("stalled_partition", log, start_ms=now_ms, partitions=3, records=900)
            handle = monitor.attach(spark, database_url, idle_timeout=1, stall_timeout=2)
            running.callback(handle.detach)
            name = unique_name("stalled")
            query = start_query(spark, scenario, log_dir, checkpoint, name)
            running.callback(stop_between_batches, query)
            return scenario, name

        yield start


def stored_events(engine, alert_id):
    with so.Session(engine) as session:
        events = session.scalars(
            sa.select(AlertEvent).where(AlertEvent.alert_id == alert_id).order_by(AlertEvent.id)
        )
        return [(event.transition, event.message) for event in events]


def acknowledged_at(engine, alert_id):
    with so.Session(engine) as session:
        return session.get(AlertRow, alert_id).acknowledged_at_ms


def test_a_stalled_partition_alert_appears_live_and_is_acknowledged_with_the_token(
    engine, server, stalled_query, tabs
):
    alerts, overview = tabs("alerts"), tabs("overview")
    alerts.goto(f"{server}/alerts")
    overview.goto(server)
    for tab in (alerts, overview):
        tab.wait_for_selector("#connection.connection-live", timeout=WAIT_MS)
        mark_page(tab)
    expect(alerts.locator("#alert-count")).to_have_text("Alerts: none firing")
    assert alerts.locator("#no-live-alerts").is_visible()

    scenario, name = stalled_query()
    [stalled] = [f"telemetry/{p}" for p in scenario.with_role(STALLED)]
    row = alerts.locator("#live-alerts tr.alert", has_text="partition_stalled").filter(
        has_text=stalled
    )
    row.wait_for(timeout=ALERT_WAIT_MS)
    assert row.locator(".severity").text_content() == "critical"
    assert row.locator("td.query a").text_content() == name
    assert row.locator("td.partitions").text_content() == stalled
    assert row.locator("td.message").text_content() == f"{stalled} is stalled"
    count = alerts.locator("#alert-count").text_content()
    assert re.fullmatch(r"Alerts: \d+ firing( \(\+\d+ caused by them\))?", count)
    badge = overview.locator("#queries tbody tr", has_text=name).locator(".severity")
    badge.first.wait_for(timeout=WAIT_MS)
    assert re.fullmatch(r"\d+ critical", badge.first.text_content())
    for tab in (alerts, overview):
        assert_not_reloaded(tab)
    alert_id = int(row.get_attribute("data-alert"))
    acknowledge = row.get_by_role("button", name="Acknowledge")

    message = row.locator(".action-message")

    acknowledge.click()
    expect(message).to_contain_text("need the server's API token")
    alerts.fill("#token-form input[name=token]", "wrong")
    acknowledge.click()
    expect(message).to_have_text(re.compile(r"^Refused \(HTTP 401\): a valid token is needed"))
    assert row.locator("td.acked").text_content() == "—"
    assert [t for t, _ in stored_events(engine, alert_id)] == ["firing"]
    assert acknowledged_at(engine, alert_id) is None

    alerts.fill("#token-form input[name=token]", TOKEN)
    alerts.fill("#token-form input[name=by]", "e2e")
    acknowledge.click()
    row.locator("td.acked", has_text="e2e, ").wait_for(timeout=WAIT_MS)
    assert message.text_content() == "Acknowledged." and acknowledge.is_hidden()
    assert stored_events(engine, alert_id)[-1] == ("acknowledged", "acknowledged by e2e")
    assert alerts.evaluate("sessionStorage.getItem('wmon.token')") == TOKEN

    row.get_by_role("button", name="Story").click()
    story = alerts.locator("#live-alerts .alert-detail .transitions")
    story.locator("li", has_text="acknowledged").wait_for(timeout=WAIT_MS)
    assert story.locator(".transition").all_text_contents() == ["firing", "acknowledged"]

    # A silence made on the page comes back as a `silences` event: its row, the alert's mark.
    row.get_by_role("button", name="Silence…").click()
    form = alerts.locator("#live-alerts .silence-form")
    form.locator("input[name=comment]").fill("known <b>stall</b>")
    form.get_by_role("button", name="Silence", exact=True).click()
    silence = alerts.locator("#silences tbody tr", has_text="partition_stalled")
    silence.wait_for(timeout=WAIT_MS)
    assert silence.locator(".comment").text_content() == "known <b>stall</b>"
    expect(row.locator("td.state")).to_have_text("firing, silenced")
    assert alerts.locator("#no-silences").is_hidden()
    silence.get_by_role("button", name="Lift").click()
    expect(alerts.locator("#silences tbody tr")).to_have_count(0, timeout=WAIT_MS)
    expect(row.locator("td.state")).to_have_text("firing")
    assert_not_reloaded(alerts)


def test_a_rules_file_broken_while_serving_is_shown_as_a_warning_in_text(rules, rules_server, tabs):
    def rules_error():
        with urllib.request.urlopen(f"{rules_server}/api/alerts") as answer:
            return json.load(answer)["rules_error"]

    alerts = tabs("alerts")
    alerts.goto(f"{rules_server}/alerts")
    alerts.wait_for_selector("#connection.connection-live", timeout=WAIT_MS)
    assert alerts.locator("#rules-error").is_hidden()

    rewrite(rules, RULES + "   offset_lag: {}\n", 1)
    error = wait_until(rules_error, 10, "the server to find the rules file bad")
    assert "<b>rules.yml: line 3: not YAML" in error
    alerts.reload()
    banner = alerts.locator("#rules-error")
    expect(banner).to_be_visible(timeout=WAIT_MS)
    expect(banner.locator(".rules-error-message")).to_have_text(error)
    assert banner.locator("b").count() == 0, "the message is text, not markup"
