"""web.live.relay against a real Redis (127.0.0.1:6379): what one process sends every process
hears, once and in order, events and messages alike; what cannot be handled is skipped;
without Redis a message is refused, and once Redis is back it is heard again."""

import logging
import uuid

import pytest
import redis

from tests.support.network import TcpProxy
from tests.support.waiting import wait_until
from web.live.relay import Relay
from web.live.socket_events import Event

REDIS = "redis://127.0.0.1:6379/0"
WAIT_S = 10.0


class Heard:
    """A process's end of the relay that records what it is handed: the events, and each
    message with how many events had come before it."""

    def __init__(self):
        self.events, self.messages = [], []

    def deliver(self, event):
        self.events.append((event.name, event.payload, event.to))

    def told(self, message, payload):
        self.messages.append((message, payload, len(self.events)))


@pytest.fixture
def relays():
    """Make relays on one fresh channel, started; stopped at the end."""
    channel, made = f"wmon-test-{uuid.uuid4()}", []

    def make(url=REDIS):
        heard = Heard()
        relay = Relay(url, channel, heard)
        relay.start()
        made.append(relay)
        return relay, heard

    yield make
    for relay in made:
        relay.stop()


def test_every_process_hears_each_event_and_message_once_in_the_order_sent(relays):
    (sender, heard_there), (other, heard_here) = relays(), relays()
    # tell returns once its own relay hears the channel: from then on the other relay hears
    # all the sender says (a message published before it had subscribed would be lost to it).
    other.tell("ready", {})
    sender.tell("hello", {})
    wait_until(lambda: said(heard_here), WAIT_S, "the other process hearing")
    events, messages = [], [("hello", {}, 0)]
    for n in range(40):
        sender.send(Event("batch", {"query": "q", "n": n}, ["query:q"]))
        events.append(("batch", {"query": "q", "n": n}, ["query:q"]))
        if n % 10 == 0:
            sender.tell("caught_up", {"n": n})
            messages.append(("caught_up", {"n": n}, len(events)))

    for heard in (heard_there, heard_here):
        wait_until(lambda heard=heard: len(said(heard)) == len(messages), WAIT_S, "all")
        wait_until(lambda heard=heard: len(heard.events) == len(events), WAIT_S, "all")
        assert heard.events == events
        # Each message is handed over in order, once every event sent before it has been
        # delivered.
        handed = said(heard)
        assert [(m, p) for m, p, _ in handed] == [(m, p) for m, p, _ in messages]
        assert all(seen >= sent for (*_, seen), (*_, sent) in zip(handed, messages, strict=True))


def said(heard):
    """The messages the sender told, as `heard` was handed them (the other's "ready" left out:
    the sender may have subscribed after it)."""
    return [message for message in heard.messages if message[0] != "ready"]


def test_a_message_that_cannot_be_handled_is_logged_and_the_next_is_heard(relays, caplog):
    relay, heard = relays()
    relay.tell("ready", {})
    wait_until(lambda: heard.messages, WAIT_S, "the relay hearing")
    with redis.Redis.from_url(REDIS) as other:
        other.publish(relay.channel, "not json")
    relay.send(Event("overview", {"queries": []}, ["overview"]))

    wait_until(lambda: heard.events, WAIT_S, "the event after the bad one")
    assert heard.events == [("overview", {"queries": []}, ["overview"])]
    assert "could not be handled" in caplog.text


def test_the_rooms_heard_are_every_process_s(relays):
    (one, _), (other, _) = relays(), relays()
    one.share_rooms(lambda: {"query:a"}, now=True)
    other.share_rooms(lambda: {"overview", "query:a"}, now=True)
    assert one.heard({"alerts"}) == {"alerts", "query:a", "overview"}
    other.share_rooms(lambda: set(), now=True)
    assert one.heard(set()) == {"query:a"}


def test_without_redis_a_message_is_refused_and_once_it_is_back_heard(relays, caplog):
    proxy = TcpProxy("127.0.0.1", 6379)
    proxy.cut()
    caplog.set_level(logging.WARNING)
    relay, heard = relays(f"redis://127.0.0.1:{proxy.port}/0")
    relay.subscribed_wait_s = 0.5
    with pytest.raises(redis.ConnectionError):
        relay.tell("catch_up", {})
    wait_until(lambda: "cannot hear the message queue" in caplog.text, WAIT_S, "a warning")

    proxy.restore()
    relay.subscribed_wait_s = WAIT_S
    relay.tell("catch_up", {"after": 1})
    wait_until(lambda: heard.messages, WAIT_S, "the message")
    assert heard.messages == [("catch_up", {"after": 1}, 0)]
