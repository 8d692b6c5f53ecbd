"""Every stored query is found by its name, however long a name a way in stores: through the API
(the query, its batches, its alerts, a silence on it) and the `wmon` command, on both stores."""

import json
from urllib.parse import quote

import pytest
import sqlalchemy as sa

from monitor.collect.spark_events import within_limits
from monitor.store.schema.models import Silence
from monitor.store.write.writes import write_event
from tests.support.progress import batch_event
from wmon.main import main

NOW = 1_800_000_000_000
TOKEN = "t0ken"

# 300 characters; and 500, the longest a way in stores, of 4-byte characters (2,000 bytes in
# PostgreSQL's index); a longer name is stored cut to 500, and found by what was stored.
NAMES = [("orders_" + "x" * 293,) * 2, ("🌊" * 500,) * 2, ("🌊" * 600, "🌊" * 499 + "…")]


@pytest.fixture
def app_config():
    return {"TESTING": True, "API_TOKEN": TOKEN, "CLOCK": lambda: NOW}


@pytest.mark.parametrize(("sent", "stored"), NAMES, ids=["300", "500", "600-cut-to-500"])
def test_a_stored_query_is_found_by_its_name(client, engine, database_url, capsys, sent, stored):
    for batch_id in range(2):
        write_event(engine, within_limits(batch_event("q0", batch_id, NOW - 1_000, name=sent)))
    assert len(stored) in (300, 500)
    path = f"/api/queries/{quote(stored, safe='')}"

    query = client.get(path)
    assert query.status_code == 200, query.get_json()
    assert (query.get_json()["query"]["id"], query.get_json()["query"]["name"]) == ("q0", stored)
    series = client.get(f"{path}/batches").get_json()["series"]
    assert sum(series["batches"]) == 2, series
    assert client.get("/api/alerts", query_string={"query": stored}).status_code == 200
    body = {"minutes": 10, "query": stored}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    assert client.post("/api/silences", headers=headers, json=body).status_code == 201
    with sa.orm.Session(engine) as session:
        assert session.scalars(sa.select(Silence.query_id)).all() == ["q0"]

    capsys.readouterr()
    assert main(["batches", stored, "--json", "--database-url", database_url]) == 0
    assert sorted(row["batch_id"] for row in json.loads(capsys.readouterr().out)) == [0, 1]
