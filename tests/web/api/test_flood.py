"""A flood of new query ids from one sender: its new queries past the hour's budget are set
aside, while its known queries and every other sender go on being stored; renaming itself
gets it no more from the same address."""

import pytest
import sqlalchemy as sa

from monitor.store.schema.engine import create_engine
from monitor.store.schema.models import Query, RejectedEvent
from tests.support.progress import fleet_event
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


def post(client, body, sender, address="10.0.0.1"):
    headers = {"Authorization": f"Bearer {INGEST_TOKEN}", "Wmon-Sender": sender}
    answer = client.post(
        "/api/ingest", json=body, headers=headers, environ_base={"REMOTE_ADDR": address}
    )
    return answer.get_json()


def count(database_url, table):
    with create_engine(database_url).connect() as connection:
        return connection.scalar(sa.select(sa.func.count()).select_from(table))


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_new_queries_past_the_budget_are_set_aside_and_the_rest_go_on(client, database_url, clock):
    answer = post(client, [fleet_event(n) for n in range(10)], "flood")
    assert (answer["stored"], answer["rejected"]) == (3, 7)
    assert "WMON_NEW_QUERIES_PER_HOUR" in answer["errors"][0]["error"]
    # The flooding sender's known queries, and another sender's new one, are stored.
    assert post(client, [fleet_event(0, 1), fleet_event(1, 1)], "flood")["stored"] == 2
    assert post(client, [fleet_event(100)], "job", address="10.0.0.2")["stored"] == 1
    assert (count(database_url, Query), count(database_url, RejectedEvent)) == (4, 7)
    clock.ms += HOUR_MS
    assert post(client, [fleet_event(n) for n in range(10, 15)], "flood")["stored"] == 3


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_sender_renamed_gets_no_more_from_its_address(client, database_url):
    assert post(client, [fleet_event(n) for n in range(3)], "flood")["stored"] == 3
    renamed = post(client, [fleet_event(n) for n in range(3, 6)], "flood-2")
    assert (renamed["stored"], renamed["rejected"]) == (0, 3)
    # Another address gets its own budget, whatever the name; the spent name gets none.
    elsewhere = post(client, [fleet_event(n) for n in range(6, 9)], "flood-3", address="10.0.0.2")
    assert elsewhere["stored"] == 3
    assert post(client, [fleet_event(9)], "flood", address="10.0.0.3")["stored"] == 0
    assert count(database_url, Query) == 6


@pytest.mark.parametrize(
    ("asks", "admitted"),
    [
        ([("a", "x", 2), ("a", "x", 2), ("a", "x", 2)], [2, 1, 0]),
        ([("a", "x", 5)], [3]),
        ([("a", "x", 0), ("a", "x", 3)], [0, 3]),
        ([("a", "x", 2), ("b", "x", 2), ("b", "y", 2)], [2, 1, 2]),
        ([("a", "x", 3), ("b", "y", 3), (None, "z", 3), (None, "w", 3)], [3, 3, 3, 0]),
    ],
    ids=["until-spent", "cut-to-the-budget", "nothing-asked", "renamed", "nameless-share"],
)
def test_a_budget_admits_up_to_its_size_for_each_name_and_address(asks, admitted):
    budget = NewQueryBudget(3, lambda: NOW_MS)
    assert [budget.admit(*ask) for ask in asks] == admitted
    assert budget.admit("c", "v", 3) == 3


def test_a_budget_starts_again_each_hour():
    clock = Clock()
    budget = NewQueryBudget(3, clock)
    assert budget.admit("a", "x", 3) == 3
    clock.ms += HOUR_MS
    assert budget.admit("b", "x", 5) == 3
