"""The `alertmanager` receiver kind against a real Alertmanager (Debian's
`prometheus-alertmanager`, started here on a free port): a firing alert shows in its API v2,
is posted again while it fires, resolves there when it resolves here; an Alertmanager that is
down is retried until it is up.

The scenario is played just before the wall clock, since Alertmanager judges an alert's
`endsAt` by its own."""

import json
import time
import urllib.request
from contextlib import contextmanager
from datetime import datetime

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.alerts.evaluate import evaluate
from monitor.alerts.runner import descriptions
from monitor.notify.delivery import deliver_due
from monitor.notify.receiver import Receiver
from monitor.notify.receivers.alertmanager import ENDS_AFTER_MS, RESEND_MS
from monitor.store.schema.models import AlertRow, Delivery
from tests.support.alert_scenarios import moves_again, rules_with, stalled
from tests.support.network import closed_port
from tests.support.progress import QUERY
from tests.support.prometheus import installed, running
from tests.support.waiting import wait_until

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

CONFIG = "route:\n  receiver: nowhere\nreceivers:\n  - name: nowhere\n"


@contextmanager
def alertmanager(tmp_path, port=None):
    """An Alertmanager on 127.0.0.1 (on `port`, or a free one), routing every alert nowhere
    and clustering with no one; its URL."""
    binary = installed("prometheus-alertmanager", "prometheus-alertmanager")
    (tmp_path / "alertmanager.yml").write_text(CONFIG)
    url = f"http://127.0.0.1:{port or closed_port()}"
    command = [
        binary,
        f"--config.file={tmp_path / 'alertmanager.yml'}",
        f"--storage.path={tmp_path / 'alertmanager'}",
        f"--web.listen-address={url.removeprefix('http://')}",
        "--cluster.listen-address=",
    ]
    with running(command, url, tmp_path / "alertmanager.log"):
        yield url


def shown(url):
    """The alerts Alertmanager's API v2 lists (active, silenced or inhibited: not resolved)."""
    with urllib.request.urlopen(f"{url}/api/v2/alerts", timeout=10) as response:
        return json.load(response)


def wall_ms():
    return time.time_ns() // 1_000_000


def ms_of(rfc3339):
    return int(datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp() * 1000)


def fire(engine, rules):
    """The stalled partition's alert, firing 30 s ago and queued for the receivers of `rules`;
    the scenario's epoch."""
    epoch = wall_ms() - 56_000
    stalled(engine, epoch)
    with so.Session(engine, expire_on_commit=False) as session:
        [event] = evaluate(session, rules, epoch + 26_000)
    assert event.transition == "firing"
    return epoch


def resolve(engine, rules, epoch):
    moves_again(engine, epoch)
    with so.Session(engine, expire_on_commit=False) as session:
        [event] = evaluate(session, rules, epoch + 31_000)
    assert event.transition == "resolved"


def test_an_alert_fires_in_alertmanager_then_resolves_there(engine, tmp_path):
    with alertmanager(tmp_path) as url:
        rules = rules_with(Receiver("am", "alertmanager", url))
        epoch = fire(engine, rules)
        now = wall_ms()
        [attempt] = deliver_due(engine, rules.receivers, now, descriptions=descriptions())
        assert attempt.ok and attempt.status_code == 200, attempt.error

        [alert] = shown(url)
        assert alert["labels"] == {
            "alertname": "WmonPartitionStalled",
            "severity": "critical",
            "query": "telemetry_windows",
            "query_id": QUERY,
        }
        assert alert["annotations"]["summary"] == "t/1 is stalled"
        assert alert["annotations"]["partitions"] == "t/1"
        assert alert["status"]["state"] == "active"
        with so.Session(engine) as session:
            stored = session.scalars(sa.select(AlertRow)).one()
        assert ms_of(alert["startsAt"]) == stored.active_since_ms
        assert ms_of(alert["endsAt"]) == now + ENDS_AFTER_MS

        resolve(engine, rules, epoch)
        [attempt] = deliver_due(engine, rules.receivers, wall_ms(), descriptions=descriptions())
        assert attempt.ok, attempt.error
        assert shown(url) == []


def test_a_firing_alert_is_posted_again_while_it_fires_and_not_after(engine, tmp_path):
    with alertmanager(tmp_path) as url:
        rules = rules_with(Receiver("am", "alertmanager", url))
        epoch = fire(engine, rules)
        first = wall_ms()
        assert len(deliver_due(engine, rules.receivers, first, descriptions=descriptions())) == 1
        assert (
            deliver_due(engine, rules.receivers, first + RESEND_MS - 1, descriptions=descriptions())
            == []
        )

        [again] = deliver_due(
            engine, rules.receivers, first + RESEND_MS, descriptions=descriptions()
        )
        assert again.ok, again.error
        [alert] = shown(url)
        assert ms_of(alert["endsAt"]) == first + RESEND_MS + ENDS_AFTER_MS
        assert (
            deliver_due(engine, rules.receivers, first + RESEND_MS + 1, descriptions=descriptions())
            == []
        )

        resolve(engine, rules, epoch)
        [resolved] = deliver_due(
            engine, rules.receivers, first + 2 * RESEND_MS, descriptions=descriptions()
        )
        assert resolved.ok and shown(url) == []
        assert (
            deliver_due(engine, rules.receivers, first + 4 * RESEND_MS, descriptions=descriptions())
            == []
        )
        with so.Session(engine) as session:
            deliveries = session.scalars(sa.select(Delivery).order_by(Delivery.id)).all()
        # The firing's two posts are attempts of its one delivery; the resolution has its own.
        assert [(d.attempts, d.delivered_at_ms is not None) for d in deliveries] == [
            (1, True),
            (1, True),
        ]


def test_an_alertmanager_that_is_down_is_retried_until_it_takes_the_alert(engine, tmp_path):
    port = closed_port()
    url = f"http://127.0.0.1:{port}"
    rules = rules_with(Receiver("am", "alertmanager", url))
    fire(engine, rules)
    now = wall_ms()
    [refused] = deliver_due(engine, rules.receivers, now, descriptions=descriptions())
    assert not refused.ok and refused.status_code is None
    assert "refused" in refused.error.lower()
    with so.Session(engine) as session:
        delivery = session.scalars(sa.select(Delivery)).one()
    assert delivery.abandoned_at_ms is None and delivery.next_attempt_at_ms == now + 1000

    with alertmanager(tmp_path, port):
        [taken] = deliver_due(engine, rules.receivers, now + 1000, descriptions=descriptions())
        assert taken.ok, taken.error
        wait_until(lambda: len(shown(url)) == 1, 10, "the alert to show in Alertmanager")
