"""Every payload of the HTTP API against its JSON Schema (web/schemas/), from a store in many
states at once (tests/support/store_states.py), on SQLite and PostgreSQL: the sums and
averages each store computes must come out as the same JSON types.

The schemas say which fields each payload has, which may be null and which values an enum
takes: a field added or dropped without its schema fails here, saying what to do."""

import pytest
from werkzeug.exceptions import HTTPException

from monitor.health.status import Status
from tests.support.schemas import INDEX, check, endpoint
from tests.support.store_states import NOW, ORDERS, T0, fill

TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
THREE_DAYS = f"from={T0 - 3 * 86_400_000}&to={NOW}"
# Refusals that answer with their endpoint's own shape rather than an error's: the collector
# says what became of each event when it refused them all.
REFUSALS_OF_THEIR_OWN = {("POST /api/ingest", 422)}


@pytest.fixture
def app_config():
    return {"CLOCK": lambda: NOW, "TESTING": True, "API_TOKEN": TOKEN, "INGEST_TOKEN": TOKEN}


class Api:
    """The app's test client: each answer is held to its endpoint's schema (an error to the
    errors'), and the endpoints that answered are noted."""

    def __init__(self, app):
        self.client = app.test_client()
        self.urls = app.url_map.bind("localhost")
        self.answered = set()

    def call(self, method, url, **request):
        """The status and JSON of a request, checked against its schema."""
        response = self.client.open(url, method=method, **request)
        body, status = response.get_json(), response.status_code
        name = self.endpoint(method, url)
        what = f"{method} {url} (status {status})"
        if status >= 400 and (name, status) not in REFUSALS_OF_THEIR_OWN:
            check(body, INDEX["api_error"], what)
            return status, body
        check(body, INDEX["api"][name], what)
        self.answered.add(name)
        return status, body

    def endpoint(self, method, url):
        """The endpoint a request is for, as the index names it; None for none."""
        try:
            rule, _ = self.urls.match(url.split("?")[0], method=method, return_rule=True)
        except HTTPException:
            return None
        return endpoint(method, rule.rule)

    def get(self, url):
        """The JSON of a GET, checked."""
        return self.call("GET", url)[1]


def read_queries(api):
    """Every query's endpoints, its history over the default range, three days (the per-hour
    rollups) and five points (the per-minute ones); the overview, whole and narrowed."""
    overview = api.get("/api/queries")
    api.get("/api/queries?status=error,stalled&q=o&limit=2&offset=1")
    for row in overview["queries"]:
        query = row["id"]
        api.get(f"/api/queries/{query}")
        api.get(f"/api/queries/{query}/timers")
        if row["status"] == "error":
            # Its rows cannot be read: its partitions' history says why, as its page does.
            for history in ("partitions/history", "history.csv"):
                status, body = api.call("GET", f"/api/queries/{query}/{history}")
                assert (
                    status == 500
                    and body["error"]
                    == f"the query's stored rows cannot be read: {row['unreadable']}"
                )
            continue
        for ranged in ("batches", "partitions/history", "diagnosis"):
            api.get(f"/api/queries/{query}/{ranged}")
            api.get(f"/api/queries/{query}/{ranged}?{THREE_DAYS}")
        api.get(f"/api/queries/{query}/batches?points=5")
        api.get(f"/api/queries/{query}/partitions/history?points=5&fields=offset_lag,idle")
    return overview["queries"]


def read_alerts(api):
    """The alerts, live, all and of one query, and each one's story."""
    api.get("/api/alerts")
    api.get(f"/api/alerts?query={ORDERS}")
    alerts = api.get("/api/alerts?state=all")["alerts"]
    for alert in alerts:
        api.get(f"/api/alerts/{alert['id']}")
    return alerts


def act(api, alerts):
    """Acknowledge an alert, silence and lift, post events to the collector, list senders."""
    live = next(alert for alert in alerts if alert["state"] == "pending")
    api.call("POST", f"/api/alerts/{live['id']}/acknowledge", headers=AUTH, json={"by": "bo"})
    body = {
        "minutes": 30,
        "rule": "partition_idle",
        "query": ORDERS,
        "partition": "t/0",
        "comment": "x",
    }
    status, made = api.call("POST", "/api/silences", headers=AUTH, json=body)
    assert status == 201
    api.get("/api/silences")
    api.call("DELETE", f"/api/silences/{made['silence']['id']}", headers=AUTH)
    sender = AUTH | {"Wmon-Sender": "app-7", "Wmon-Dropped": "2"}
    events = [{"Event": "org.apache.spark.scheduler.SparkListenerJobStart"}, {"Event": 5}]
    assert api.call("POST", "/api/ingest", headers=sender, json=events)[0] == 200
    assert api.call("POST", "/api/ingest", headers=sender, json=[{"Event": 5}])[0] == 422
    assert [s["id"] for s in api.get("/api/senders")["senders"]] == ["app-7"]


def fail(api, alerts):
    """Requests the API refuses, each kind of refusal once: the statuses."""
    resolved = next(alert for alert in alerts if alert["state"] == "resolved")
    text = {"data": "x", "content_type": "text/plain"}
    return [
        api.call("GET", "/api/queries?limit=0")[0],
        api.call("POST", "/api/silences", json={"minutes": 5})[0],
        api.call("GET", "/api/queries/nothing")[0],
        api.call("DELETE", "/api/alerts/1", headers=AUTH)[0],
        api.call("POST", f"/api/alerts/{resolved['id']}/acknowledge", headers=AUTH)[0],
        api.call("POST", "/api/silences", headers=AUTH, json={"comment": "x" * 70_000})[0],
        api.call("POST", "/api/silences", headers=AUTH, **text)[0],
    ]


def test_every_endpoint_answers_as_its_schema_says(app, engine):
    fill(engine)
    api = Api(app)
    queries = read_queries(api)
    alerts = read_alerts(api)
    act(api, alerts)
    assert fail(api, alerts) == [400, 401, 404, 405, 409, 413, 415]
    assert api.answered == set(INDEX["api"]), "every endpoint with a schema answered"
    # The store's states, so that each nullable field was null somewhere and each status met.
    assert {row["status"] for row in queries} == {status.label for status in Status}
    assert {alert["state"] for alert in alerts} >= {"pending", "firing", "resolved"}
    assert any(alert["silenced"] for alert in alerts)
