"""Hostile but fair input to the dashboard's HTTP side: values the store cannot hold, numbers
past 64 bits or in other scripts, oversized, nested and wrongly typed bodies, loose tokens and
foreign host names. Each is a clear 4xx naming the problem, in JSON under /api/, and never
reaches the store; every response carries the security headers."""

import pytest
import sqlalchemy as sa

from monitor.store.schema.models import AlertRow, Silence
from monitor.store.write.writes import write_event
from tests.support.progress import batch_event
from web.guards.params import MAX_BODY_BYTES

TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
NOW = 1_700_000_000_000
ARABIC_INDIC_ONE = "\u0661"


@pytest.fixture
def app_config():
    return {"TESTING": True, "API_TOKEN": TOKEN, "CLOCK": lambda: NOW}


@pytest.fixture
def alert_id(engine) -> int:
    """A firing alert of query q0 ("orders")."""
    write_event(engine, batch_event("q0", 0, NOW - 1_000, name="orders"))
    with sa.orm.Session(engine) as session:
        alert = AlertRow(
            rule="partition_stalled",
            query_id="q0",
            partitions=["0"],
            severity="critical",
            state="firing",
            message="partition 0 is stalled",
            value=1.0,
            active_since_ms=NOW - 60_000,
            held_at_ms=NOW - 30_000,
            fired_at_ms=NOW - 30_000,
        )
        session.add(alert)
        session.commit()
        return alert.id


def _silences(engine) -> list[Silence]:
    with sa.orm.Session(engine) as session:
        return list(session.scalars(sa.select(Silence)))


def _error(response, status: int) -> str:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.is_json, response.get_data(as_text=True)[:200]
    message: str = response.get_json()["error"]
    return message


# Values the schema cannot hold: a 400 naming the field, before the store.


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("by", "x" * 256, "by must be at most 255 characters, not 256"),
        ("partition", "p" * 501, "partition must be at most 500 characters, not 501"),
        ("comment", "c" * 1_001, "comment must be at most 1000 characters, not 1001"),
        ("comment", "before\x00after", "comment must not contain control characters"),
        ("by", "\ud800", "by must be valid Unicode text"),
        ("by", "   ", "by must be a non-empty text"),
        ("by", 7, "by must be a non-empty text"),
    ],
)
def test_a_field_the_store_cannot_hold_is_a_400_naming_it(client, engine, field, value, message):
    body = {"minutes": 10, field: value}
    assert _error(client.post("/api/silences", headers=AUTH, json=body), 400) == message
    assert _silences(engine) == []


def test_a_comment_with_line_breaks_is_kept(client, engine):
    body = {"minutes": 10, "comment": "line one\nline two\tindented"}
    assert client.post("/api/silences", headers=AUTH, json=body).status_code == 201
    assert [s.comment for s in _silences(engine)] == ["line one\nline two\tindented"]


@pytest.mark.parametrize("ref", ["q\x00", "q" * 501, "%00"])
def test_a_query_ref_no_query_could_have_is_a_404(client, engine, ref):
    write_event(engine, batch_event("q0", 0, NOW - 1_000, name="orders"))
    for path in (f"/api/queries/{ref}", f"/api/queries/{ref}/batches", f"/queries/{ref}"):
        response = client.get(path)
        assert response.status_code == 404, path
    assert "no query with id or name" in _error(
        client.get("/api/alerts", query_string={"query": ref}), 404
    )
    body = {"minutes": 10, "query": ref}
    assert client.post("/api/silences", headers=AUTH, json=body).status_code in (400, 404)
    assert _silences(engine) == []


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/api/nothing/here", 404),
        ("GET", "/api", 404),
        ("DELETE", "/api/queries", 405),
        ("PUT", "/api/silences", 405),
        ("GET", "/api/alerts/1/acknowledge", 405),
    ],
)
def test_unmatched_api_paths_and_wrong_methods_answer_json(client, method, path, status):
    response = client.open(path, method=method)
    _error(response, status)
    if status == 405:
        assert "Allow" in response.headers


# Numbers: ASCII digits only, within explicit bounds, on every entry point.


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"to": "99999999999999999999"}, "to must be between 0 and 253402300799999"),
        ({"to": "9" * 5_000}, "to must be between 0 and 253402300799999, not '99999"),
        ({"from": "-1"}, "from must be between 0 and 253402300799999, not -1"),
        ({"to": ARABIC_INDIC_ONE * 13}, "to must be epoch milliseconds or an ISO 8601 time"),
        ({"to": "1_700_000_000_000"}, "to must be epoch milliseconds or an ISO 8601 time"),
        ({"to": " 1700000000000"}, "to must be epoch milliseconds or an ISO 8601 time"),
        ({"points": "1_0"}, "points must be a whole number, not '1_0'"),
        ({"points": ARABIC_INDIC_ONE}, "points must be a whole number"),
        ({"points": "99999999999999999999"}, "points must be between 1 and"),
    ],
)
def test_numbers_in_query_strings_are_strict(client, engine, query, message):
    write_event(engine, batch_event("q0", 0, NOW - 1_000, name="orders"))
    assert message in _error(client.get("/api/queries/q0/batches", query_string=query), 400)


@pytest.mark.parametrize("limit", ["99999999999999999999", "1_0", " 5", "+5", ARABIC_INDIC_ONE])
def test_a_limit_is_strict(client, limit):
    assert "limit must be" in _error(client.get("/api/alerts", query_string={"limit": limit}), 400)


@pytest.mark.parametrize(
    "written", [str(2**63), "99999999999999999999", ARABIC_INDIC_ONE, "0", "-1", "1_0"]
)
def test_an_id_that_no_row_can_have_matches_no_route(client, engine, alert_id, written):
    assert alert_id == 1, "the id written in other digits must name a real alert"
    for method, path in (
        ("GET", f"/api/alerts/{written}"),
        ("POST", f"/api/alerts/{written}/acknowledge"),
        ("DELETE", f"/api/silences/{written}"),
    ):
        _error(client.open(path, method=method, headers=AUTH), 404)
    with sa.orm.Session(engine) as session:
        assert session.get(AlertRow, alert_id).acknowledged_at_ms is None


@pytest.mark.parametrize(
    ("minutes", "message"),
    [
        (2**63, "minutes must be between 1 and 10080"),
        (-(2**63) - 1, "minutes must be between 1 and 10080"),
        (10.0, "minutes must be a whole number"),
        ("10", "minutes must be a whole number"),
        (True, "minutes must be a whole number"),
        (None, "minutes must be a whole number"),
    ],
)
def test_minutes_is_a_bounded_whole_number(client, engine, minutes, message):
    assert message in _error(
        client.post("/api/silences", headers=AUTH, json={"minutes": minutes}), 400
    )
    assert _silences(engine) == []


def test_an_infinite_number_in_a_body_is_refused(client, engine):
    response = client.post(
        "/api/silences", headers=AUTH, data='{"minutes": 1e400}', content_type="application/json"
    )
    assert "minutes must be a whole number" in _error(response, 400)


# Bodies: a size limit, JSON only where JSON is meant, no recursion.


def test_a_body_over_the_limit_is_a_413_and_nothing_is_stored(client, engine):
    huge = {"minutes": 10, "comment": "x" * (20 * 1024 * 1024)}
    response = client.post("/api/silences", headers=AUTH, json=huge)
    assert _error(response, 413) == "the request body is too large: the limit is 64 KiB"
    assert _silences(engine) == []
    just_over = '{"minutes": 10, "comment": "' + "y" * MAX_BODY_BYTES + '"}'
    response = client.post(
        "/api/silences", headers=AUTH, data=just_over, content_type="application/json"
    )
    _error(response, 413)


def test_deeply_nested_json_is_a_400(client, engine):
    response = client.post(
        "/api/silences", headers=AUTH, data="[" * 30_000, content_type="application/json"
    )
    assert "not valid JSON" in _error(response, 400)
    response = client.post(
        "/api/silences",
        headers=AUTH,
        data="[" * 20_000 + "]" * 20_000,
        content_type="application/json",
    )
    assert "not valid JSON" in _error(response, 400)


@pytest.mark.parametrize(
    ("content_type", "data"),
    [
        ("application/x-www-form-urlencoded", "by=mallory"),
        (
            "multipart/form-data; boundary=b",
            '--b\r\nContent-Disposition: form-data; name="by"\r\n\r\nm\r\n--b--\r\n',
        ),
        ("text/plain", '{"by": "mallory"}'),
    ],
)
def test_a_body_that_is_not_json_is_a_415_and_changes_nothing(
    client, engine, alert_id, content_type, data
):
    for path in (f"/api/alerts/{alert_id}/acknowledge", "/api/silences"):
        response = client.post(path, headers=AUTH, data=data, content_type=content_type)
        assert "must be JSON" in _error(response, 415)
    with sa.orm.Session(engine) as session:
        assert session.get(AlertRow, alert_id).acknowledged_at_ms is None
    assert _silences(engine) == []


def test_an_empty_body_still_acknowledges(client, alert_id):
    response = client.post(f"/api/alerts/{alert_id}/acknowledge", headers=AUTH)
    assert response.status_code == 200
    assert response.get_json()["alert"]["acknowledged_by"] == "dashboard"


# The token: the Bearer scheme, exactly the token.


@pytest.mark.parametrize(
    "authorization",
    [TOKEN, f"Token {TOKEN}", f"Basic {TOKEN}", f"Bearer  {TOKEN}", f"Bearer {TOKEN}x", "Bearer"],
)
def test_a_token_without_the_bearer_scheme_or_not_exact_is_refused(
    client, engine, alert_id, authorization
):
    response = client.post(
        f"/api/alerts/{alert_id}/acknowledge", headers={"Authorization": authorization}
    )
    _error(response, 401)
    with sa.orm.Session(engine) as session:
        assert session.get(AlertRow, alert_id).acknowledged_at_ms is None


def test_a_token_with_trailing_whitespace_is_refused(app, engine, alert_id):
    environ = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN} "}
    response = app.test_client().post(
        f"/api/alerts/{alert_id}/acknowledge", environ_overrides=environ
    )
    _error(response, 401)


# Headers and host names.


@pytest.mark.parametrize(
    "path", ["/", "/alerts", "/api/queries", "/api/nothing", "/queries/none", "/static/css/app.css"]
)
def test_every_response_carries_the_security_headers(client, path):
    response = client.get(path)
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]


@pytest.mark.parametrize("host", ["evil.example", "evil.example:5000", "localhost.evil.example"])
def test_a_foreign_host_name_is_refused(client, host):
    for path in ("/api/queries", "/"):
        response = client.get(path, headers={"Host": host})
        assert response.status_code == 400, path
    assert "WMON_ALLOWED_HOSTS" in _error(client.get("/api/queries", headers={"Host": host}), 400)


@pytest.mark.parametrize("host", ["localhost:5000", "127.0.0.1:8080", "10.1.2.3", "[::1]:5000"])
def test_addresses_and_local_names_are_answered(client, host):
    assert client.get("/api/queries", headers={"Host": host}).status_code == 200


def test_names_can_be_allowed(app, client):
    app.config["ALLOWED_HOSTS"] = app.config["ALLOWED_HOSTS"] | {"wmon.example.com"}
    assert client.get("/api/queries", headers={"Host": "wmon.example.com"}).status_code == 200
    assert client.get("/api/queries", headers={"Host": "evil.example"}).status_code == 400
