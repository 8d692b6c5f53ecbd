"""A flood of new query ids from one sender: its new queries past the hour's budget are set
aside, while its known queries and every other sender go on being stored."""

import pytest
import sqlalchemy as sa

from monitor.collect.spark_events import PROGRESS, named
from monitor.store.engine import create_engine
from monitor.store.models import Query, RejectedEvent
from tests.support.progress import progress_doc
from tests.support.real_collector import INGEST_TOKEN
from web.guards.budget import HOUR_MS, NewQueryBudget

NOW_MS = 1_795_316_300_000


class Clock:
    def __init__(self):
        self.ms = NOW_MS

    def __call__(self):
        return self.ms


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def app_config(clock):
    return {
        "TESTING": True,
        "INGEST_TOKEN": INGEST_TOKEN,
        "NEW_QUERIES_PER_HOUR": 3,
        "CLOCK": clock,
    }


def batch(n, batch_id=0):
    query = f"{n:08d}-0000-0000-0000-000000000000"
    doc = progress_doc(id=query, runId=query.replace("-0000-", "-1111-", 1), batchId=batch_id)
    return named(PROGRESS, {"progress": doc})


def post(client, body, sender):
    headers = {"Authorization": f"Bearer {INGEST_TOKEN}", "Wmon-Sender": sender}
    return client.post("/api/ingest", json=body, headers=headers).get_json()


def count(database_url, table):
    with create_engine(database_url).connect() as connection:
        return connection.scalar(sa.select(sa.func.count()).select_from(table))


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_new_queries_past_the_budget_are_set_aside_and_the_rest_go_on(client, database_url, clock):
    answer = post(client, [batch(n) for n in range(10)], "flood")
    assert (answer["stored"], answer["rejected"]) == (3, 7)
    assert "WMON_NEW_QUERIES_PER_HOUR" in answer["errors"][0]["error"]
    # The flooding sender's known queries, and another sender's new one, are stored.
    assert post(client, [batch(0, 1), batch(1, 1)], "flood")["stored"] == 2
    assert post(client, [batch(100)], "job")["stored"] == 1
    assert (count(database_url, Query), count(database_url, RejectedEvent)) == (4, 7)
    clock.ms += HOUR_MS
    assert post(client, [batch(n) for n in range(10, 15)], "flood")["stored"] == 3


@pytest.mark.parametrize(
    ("asks", "admitted"),
    [([2, 2, 2], [2, 1, 0]), ([5], [3]), ([0, 3], [0, 3])],
    ids=["until-spent", "cut-to-the-budget", "nothing-asked"],
)
def test_a_budget_admits_up_to_its_size_each_hour(asks, admitted):
    budget = NewQueryBudget(3, lambda: NOW_MS)
    assert [budget.admit("a", ask) for ask in asks] == admitted
    assert budget.admit("b", 3) == 3
