"""Receiver kinds: one registry that the rules file and delivery both follow."""

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.alerts.evaluate import evaluate
from monitor.alerts.rulefile import RulesFileError, load_rules
from monitor.alerts.runner import descriptions
from monitor.notify.delivery import deliver_due
from monitor.notify.receivers import BUILT_IN, kinds, lookup, register, unregister
from monitor.notify.receivers.alertmanager import Alertmanager, alert_name
from monitor.notify.receivers.slack import Slack
from monitor.notify.receivers.webhook import Webhook
from monitor.store.schema.models import AlertEvent, AlertRow, Delivery, Query
from tests.support.alert_scenarios import at, stalled


class Echo:
    """A throwaway kind, as a new module would add one: its name and its message."""

    kind = "echo"
    resend_ms = None

    def endpoint(self, url):
        return url + "/echoed"

    def message(self, delivery, event, alert, query, description, now_ms):
        return {"echo": [delivery.id, event.transition, alert.rule]}


@pytest.fixture
def echo_kind():
    registered = register(Echo())
    yield registered
    unregister("echo")


def rules_file(kind, url="http://127.0.0.1:9/"):
    return (
        'queries:\n  - match: "*"\n    rules:\n'
        "      no_progress: {enabled: false}\n      watermark_age: {enabled: false}\n"
        "      partition_stalled: {for: 0}\n"
        f"receivers:\n  - {{name: them, kind: {kind}, url: '{url}'}}\n"
    )


def test_the_built_in_kinds_are_registered_in_the_order_the_rules_file_names_them():
    assert kinds() == ("webhook", "slack", "alertmanager")
    assert [lookup(kind) for kind in kinds()] == list(BUILT_IN)


@pytest.mark.parametrize(
    "kind",
    [Webhook(), Slack(), Alertmanager(), Echo()],
    ids=["webhook", "slack", "alertmanager", "echo"],
)
def test_the_registry_rejects_a_second_kind_of_the_same_name(echo_kind, kind):
    before = lookup(kind.kind)
    with pytest.raises(ValueError, match=f"^a receiver kind called '{kind.kind}' is registered"):
        register(kind)
    assert lookup(kind.kind) is before and kinds() == ("webhook", "slack", "alertmanager", "echo")


def test_an_unknown_kind_is_not_found():
    with pytest.raises(KeyError):
        lookup("email")


@pytest.mark.parametrize("kind", ["webhook", "slack", "alertmanager"])
def test_the_rules_file_accepts_each_built_in_kind(kind):
    [receiver] = load_rules(rules_file(kind)).receivers
    assert receiver.kind == kind


def test_the_rules_file_accepts_a_registered_kind_and_names_it_among_the_known(echo_kind):
    [receiver] = load_rules(rules_file("echo")).receivers
    assert receiver.kind == "echo"
    with pytest.raises(
        RulesFileError, match="kind must be one of webhook, slack, alertmanager, echo$"
    ):
        load_rules(rules_file("email"), "rules.yml")


def test_the_rules_file_refuses_a_kind_once_it_is_unregistered():
    register(Echo())
    unregister("echo")
    with pytest.raises(
        RulesFileError, match="line 8: kind must be one of webhook, slack, alertmanager$"
    ):
        load_rules(rules_file("echo"), "rules.yml")


def test_delivery_posts_the_message_of_a_registered_kind(engine, receiver, echo_kind):
    rules = load_rules(rules_file("echo", f"{receiver.url}/echo"))
    stalled(engine)
    with so.Session(engine, expire_on_commit=False) as session:
        evaluate(session, rules, at(26))
    [attempt] = deliver_due(engine, rules.receivers, at(26), descriptions=descriptions())
    with so.Session(engine) as session:
        delivery = session.scalars(sa.select(Delivery)).one()
    assert attempt.ok
    assert receiver.received == [
        ("/echo/echoed", {"echo": [delivery.id, "firing", "partition_stalled"]})
    ]


DELIVERY = Delivery(id=7)
ALERT_FIELDS = dict(
    id=3,
    rule="partition_stalled",
    severity="warning",
    query_id="q-1",
    partitions=["t/1"],
    caused_by=None,
    active_since_ms=1_700_000_000_000,
    fired_at_ms=1_700_000_030_000,
    resolved_at_ms=None,
)
ALERT = AlertRow(**ALERT_FIELDS)
FIRING = AlertEvent(transition="firing", at_ms=1_700_000_030_000, value=25.0, message="t/1 <&>")
RESOLVED = AlertEvent(transition="resolved", at_ms=1_700_000_090_500, value=None, message="ok")
NOW = 1_700_000_100_000


@pytest.mark.parametrize(
    "kind, event, query, expected",
    [
        (
            "webhook",
            FIRING,
            Query(name="orders"),
            {
                "version": 1,
                "delivery_id": 7,
                "status": "firing",
                "at": "2023-11-14T22:13:50.000+00:00",
                "alert": {
                    "id": 3,
                    "rule": "partition_stalled",
                    "severity": "warning",
                    "query_id": "q-1",
                    "query": "orders",
                    "partitions": ["t/1"],
                    "caused_by": None,
                    "message": "t/1 <&>",
                    "value": 25.0,
                    "active_since": "2023-11-14T22:13:20.000+00:00",
                    "fired_at": "2023-11-14T22:13:50.000+00:00",
                    "resolved_at": None,
                },
            },
        ),
        (
            "slack",
            FIRING,
            Query(name="orders"),
            {
                "text": ":rotating_light: [FIRING] orders: t/1 &lt;&amp;&gt; "
                "(partition_stalled, warning; delivery 7)"
            },
        ),
        (
            "slack",
            RESOLVED,
            Query(name=None),
            {
                "text": ":white_check_mark: [RESOLVED] q-1: ok "
                "(partition_stalled, warning; delivery 7)"
            },
        ),
    ],
    ids=["webhook-firing", "slack-firing-escaped", "slack-resolved-unnamed-query"],
)
def test_each_built_in_kind_makes_its_message(kind, event, query, expected):
    assert lookup(kind).message(DELIVERY, event, ALERT, query, STALLED, NOW) == expected


STALLED = "a partition with work waiting does not advance"


def alertmanager_alert(ends_at, **annotations):
    labels = {
        "alertname": "WmonPartitionStalled",
        "severity": "warning",
        "query": "orders",
        "query_id": "q-1",
    }
    return [
        {
            "labels": labels,
            "annotations": {
                "description": STALLED,
                **annotations,
            },
            "startsAt": "2023-11-14T22:13:20.000+00:00",
            "endsAt": ends_at,
        }
    ]


@pytest.mark.parametrize(
    "event, alert, expected",
    [
        (
            FIRING,
            ALERT,
            alertmanager_alert(
                "2023-11-14T22:19:00.000+00:00", summary="t/1 <&>", partitions="t/1", value="25"
            ),
        ),
        (
            FIRING,
            AlertRow(**ALERT_FIELDS | {"resolved_at_ms": 1_700_000_090_500, "partitions": []}),
            alertmanager_alert("2023-11-14T22:14:50.500+00:00", summary="t/1 <&>", value="25"),
        ),
        (
            RESOLVED,
            AlertRow(**ALERT_FIELDS | {"partitions": ["t/1", "t/4"]}),
            alertmanager_alert(
                "2023-11-14T22:14:50.500+00:00", summary="ok", partitions="t/1, t/4"
            ),
        ),
    ],
    ids=[
        "firing: ends four re-sends on",
        "firing, resolved since: ends then; of the query itself",
        "resolved, of two partitions",
    ],
)
def test_alertmanager_is_posted_the_alert_with_its_labels_and_when_it_ends(event, alert, expected):
    posted = lookup("alertmanager").message(
        DELIVERY, event, alert, Query(name="orders"), descriptions()["partition_stalled"], NOW
    )
    assert posted == expected


def test_alertmanager_is_posted_at_its_alerts_api_under_any_path_prefix():
    kind = Alertmanager()
    assert kind.endpoint("http://am:9093") == "http://am:9093/api/v2/alerts"
    assert kind.endpoint("http://lb/alertmanager/") == "http://lb/alertmanager/api/v2/alerts"


@pytest.mark.parametrize(
    "rule, name",
    [("partition_stalled", "WmonPartitionStalled"), ("query_failed", "WmonQueryFailed")],
)
def test_alert_names_follow_the_shipped_prometheus_rules(rule, name):
    assert alert_name(rule) == name
