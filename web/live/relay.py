"""Several dashboard processes sharing one watcher of the store, through Redis.

With WMON_MESSAGE_QUEUE set, exactly one process looks at the store and sends the live push's
events (web.live.watching: the holder of the live lease); a :class:`Relay` publishes them on a
Redis channel of ours, which every process hears, each delivering them to its own connections.
The same channel carries what the watching process needs from the others, and back: a joining
connection's catch-up is asked of the watching process, which alone knows what the looks have
pushed, and that process answers with the batches and then a message saying they were sent.

Which rooms anyone is in, in any process, is kept in Redis too: each process writes its own
set every ROOMS_REFRESH_S and at once when a connection starts joining a room, expiring if the
process goes away, so that the looks read only what someone will hear.

Each process hears each message once, its own included, in the order a sender sent them (Redis
delivers one channel's messages in the order it took them). Messages are JSON: no process runs
code that another sent. Redis's pub/sub keeps nothing: while a process cannot reach Redis it
hears nothing, says so in its log, and tries again every RETRY_S.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import redis
import redis.client

from web.live.fanout import FanoutEnd
from web.live.socket_events import Event

ROOMS_REFRESH_S = 1.0
ROOMS_TTL_MS = 5_000
# How long the listener waits for a message before it looks whether it should stop, how long
# it waits before it tries Redis again, and how long a message waits for the channel to be
# heard here (the answer to it must be heard).
LISTEN_WAIT_S = 0.5
RETRY_S = 1.0
SUBSCRIBED_WAIT_S = 5.0

log = logging.getLogger(__name__)


class Relay:
    """Events and messages to every process through a Redis channel, and the rooms heard in
    each process through Redis keys."""

    shared = True

    def __init__(self, url: str, channel: str, end: FanoutEnd) -> None:
        self.host_id = uuid.uuid4().hex
        self.subscribed_wait_s = SUBSCRIBED_WAIT_S
        self.channel = channel
        self._rooms_key = f"{channel}:rooms:"
        self._hosts_key = f"{channel}:hosts"
        self._redis = redis.Redis.from_url(url, decode_responses=True)
        self._end = end
        self._subscribed = threading.Event()
        self._stopping = threading.Event()
        self._start_lock = threading.Lock()
        self._listener: threading.Thread | None = None
        self._rooms_lock = threading.Lock()
        self._rooms_at = 0.0

    def start(self) -> None:
        """Start hearing the channel, once however many callers ask."""
        with self._start_lock:
            if self._listener is None:
                self._listener = threading.Thread(
                    target=self._listen, name="wmon-relay", daemon=True
                )
                self._listener.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop hearing the channel and wait for the listener to end."""
        self._stopping.set()
        if self._listener is not None:
            self._listener.join(timeout)
        self._redis.close()

    def send(self, event: Event) -> None:
        """Publish `event` to every process."""
        self._publish({"event": event.name, "payload": event.payload, "to": event.to})

    def tell(self, message: str, payload: dict[str, Any]) -> None:
        """Publish a message to every process, once this one hears the channel (so that it
        hears the answer)."""
        if not self._subscribed.wait(self.subscribed_wait_s):
            raise redis.ConnectionError("this process does not hear the channel yet")
        self._publish({"message": message, "payload": payload})

    def share_rooms(self, here: Callable[[], set[str]], now: bool = False) -> None:
        """Write which rooms someone here is in: every ROOMS_REFRESH_S, or `now`. One write at
        a time, each with what is heard as it starts, so that the last written is never older
        than one before it."""
        with self._rooms_lock:
            started = time.monotonic()
            if not now and started - self._rooms_at < ROOMS_REFRESH_S:
                return
            self._rooms_at = started
            key = self._rooms_key + self.host_id
            with self._redis.pipeline() as pipeline:
                pipeline.set(key, json.dumps(sorted(here())), px=ROOMS_TTL_MS)
                pipeline.sadd(self._hosts_key, self.host_id)
                pipeline.execute()

    def heard(self, here: set[str]) -> set[str]:
        """The rooms someone is in, or on the way into, in any process."""
        hosts = sorted(str(host) for host in self._redis.smembers(self._hosts_key))
        if not hosts:
            return set(here)
        found = self._redis.mget([self._rooms_key + host for host in hosts])
        gone = [host for host, rooms in zip(hosts, found, strict=True) if rooms is None]
        if gone:
            self._redis.srem(self._hosts_key, *gone)
        return set(here) | {
            name for rooms in found if rooms is not None for name in json.loads(rooms)
        }

    def _publish(self, message: dict[str, Any]) -> None:
        self._redis.publish(self.channel, json.dumps(message))

    def _listen(self) -> None:
        pubsub: redis.client.PubSub | None = None
        while not self._stopping.is_set():
            try:
                if pubsub is None:
                    pubsub = self._redis.pubsub()
                    pubsub.subscribe(self.channel)
                message = pubsub.get_message(timeout=LISTEN_WAIT_S)
            except redis.RedisError as error:
                log.warning("wmon live: cannot hear the message queue: %s", error)
                self._subscribed.clear()
                if pubsub is not None:
                    pubsub.close()
                pubsub = None
                self._stopping.wait(RETRY_S)
                continue
            if message is None:
                continue
            if message["type"] == "subscribe":
                self._subscribed.set()
            elif message["type"] == "message":
                self._hear(message["data"])
        if pubsub is not None:
            pubsub.close()

    def _hear(self, data: str) -> None:
        """Hand what came on the channel to this process, in the order it came: an event or a
        message (the end here does what takes a while, serving a catch-up, on a thread of its
        own). One that cannot be handled is logged, and the next is heard."""
        try:
            message = json.loads(data)
            if "event" in message:
                self._end.deliver(Event(message["event"], message["payload"], message["to"]))
            else:
                self._end.told(message["message"], message["payload"])
        except Exception:
            log.exception("wmon live: a message from the message queue could not be handled")
