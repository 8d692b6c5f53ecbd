"""Posts that wait while another is written are written together, in one transaction, and
each is answered for its own events as if it had been written alone; a group the store
refuses something in is written again post by post; an outage fails each post of it."""

import threading

import pytest
import sqlalchemy as sa

from monitor.collect import group_commit
from monitor.collect.accept import TOO_MANY_NEW_QUERIES, Accepted
from monitor.collect.group_commit import GroupCommit
from monitor.health.predicates import Timeouts
from monitor.store.schema.engine import create_engine
from monitor.store.schema.models import Batch, RejectedEvent, Sender
from tests.support.progress import fleet_event
from tests.support.waiting import wait_until

NOW_MS = 1_795_316_300_000
TIMEOUTS = Timeouts()


class HeldFirst:
    """The engine, once the test lets the first caller (the first post's writer) have it."""

    def __init__(self, engine):
        self.engine, self.released, self._calls = engine, threading.Event(), 0

    def __call__(self):
        self._calls += 1
        if self._calls == 1:
            assert self.released.wait(30)
        return self.engine


class Posts:
    """Posts sent through one group commit from threads of their own, each in line before
    the next is sent, while the first is held writing."""

    def __init__(self, commit):
        self.commit, self.threads, self.answers = commit, [], {}

    def send(self, name, documents, **options):
        def post():
            try:
                self.answers[name] = self.commit.accept(documents, NOW_MS, **options)
            except Exception as error:
                self.answers[name] = error

        self.threads.append(threading.Thread(target=post))
        self.threads[-1].start()
        # The first is writing (held); each later one waits in line.
        in_line = len(self.threads) - 1
        wait_until(lambda: len(self.commit._line) == in_line, 10, f"{name} in line")

    def wait(self):
        for thread in self.threads:
            thread.join(30)
        return self.answers


def counted(engine, table):
    with engine.connect() as connection:
        return connection.scalar(sa.select(sa.func.count()).select_from(table))


@pytest.fixture
def commits(engine):
    """How many transactions commit on the engine."""
    count = []
    sa.event.listen(engine, "commit", lambda _connection: count.append(1))
    return count


def the_flood(posts):
    """The first post, held writing; then four that wait for it: one with two batches, one
    repeating a batch of it beside a new one, one with an event that cannot be read, one
    past its budget of new queries."""
    posts.send("first", [fleet_event(1, 0)], origin="a", dropped=0)
    posts.send("two", [fleet_event(2, 0), fleet_event(2, 1)], origin="b", dropped=0)
    posts.send("repeat", [fleet_event(2, 1), fleet_event(3, 0)], origin="c", dropped=5)
    posts.send("unreadable", [{"Event": 1}, fleet_event(4, 0)], origin="d", dropped=0)
    posts.send("past budget", [fleet_event(5, 0)], origin="e", admit=lambda wanted: 0)


ANSWERS = {
    "first": Accepted(stored=1),
    "two": Accepted(stored=2),
    "repeat": Accepted(stored=1, unchanged=1),
    "unreadable": Accepted(stored=1, refused=[(0, "not a Spark event: it has no 'Event' name")]),
    "past budget": Accepted(refused=[(0, TOO_MANY_NEW_QUERIES)]),
}


SENDERS = {"a": (1, 0, 0), "b": (2, 0, 0), "c": (1, 0, 5), "d": (1, 1, 0)}


def stored_once(engine):
    """Each batch stored once and two events set aside; each sender's events, refused
    events and drop count, by name."""
    assert counted(engine, Batch) == 6  # and the day's first
    assert counted(engine, RejectedEvent) == 2
    with engine.connect() as connection:
        rows = connection.execute(
            sa.select(Sender.id, Sender.events, Sender.rejected, Sender.dropped)
        )
    return {row.id: tuple(row)[1:] for row in rows}


@pytest.fixture
def day_begun(engine):
    """The store with a batch in the day's first (PostgreSQL makes its partitions then, in
    transactions of their own)."""
    assert GroupCommit(lambda: engine, TIMEOUTS).accept([fleet_event(9, 0)], NOW_MS).stored == 1
    return engine


def test_posts_that_wait_are_written_in_one_transaction_each_answered_for_its_own(
    day_begun, commits
):
    held = HeldFirst(day_begun)
    posts = Posts(GroupCommit(held, TIMEOUTS))
    the_flood(posts)
    held.released.set()
    assert posts.wait() == ANSWERS
    assert stored_once(day_begun) == SENDERS
    # The first post alone, then the four that waited for it together.
    assert len(commits) == 2


def test_a_group_the_store_refuses_something_in_is_written_again_post_by_post(
    day_begun, monkeypatch
):
    def refused(*_args, **_kwargs):
        raise ValueError("refused")

    monkeypatch.setattr(group_commit, "write_events", refused)
    held = HeldFirst(day_begun)
    posts = Posts(GroupCommit(held, TIMEOUTS))
    the_flood(posts)
    held.released.set()
    answers = posts.wait()
    # Written alone at once, either of the two may store the batch they share.
    two, repeat = answers.pop("two"), answers.pop("repeat")
    assert (two.stored + repeat.stored, two.unchanged + repeat.unchanged) == (3, 1)
    assert answers == {name: ANSWERS[name] for name in answers}
    senders = stored_once(day_begun)
    b, c = senders.pop("b"), senders.pop("c")
    assert (b[0] + c[0], c[2]) == (3, 5)
    assert senders == {name: SENDERS[name] for name in senders}


@pytest.mark.parametrize(
    "unreachable",
    ["sqlite:///{tmp}/gone/wmon.db", "postgresql://postgres@127.0.0.1:1/test"],
    ids=["sqlite", "postgresql"],
)
def test_an_outage_fails_every_post_of_its_group_and_stores_nothing(tmp_path, unreachable):
    down = create_engine(unreachable.format(tmp=tmp_path), may_create=False)
    held = HeldFirst(down)
    posts = Posts(GroupCommit(held, TIMEOUTS))
    posts.send("first", [fleet_event(1, 0)], origin="a", dropped=0)
    posts.send("second", [fleet_event(2, 0)], origin="b", dropped=0)
    posts.send("third", [{"Event": 1}], origin="c", dropped=0)
    held.released.set()
    answers = posts.wait()
    assert {name: type(answer) for name, answer in answers.items()} == dict.fromkeys(
        ["first", "second", "third"], sa.exc.OperationalError
    )
