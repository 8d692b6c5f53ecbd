"""Several dashboard processes sharing one watcher of the store, through Redis.

With WMON_MESSAGE_QUEUE set, the Socket.IO server's client manager is a :class:`Relay`:
Flask-SocketIO's Redis message queue, through which every emit reaches every process, each
delivering it to its own connections. Exactly one process looks at the store and emits
(web.live: the holder of the live lease); the relay also carries what that process needs from
the others, and back:

- which rooms anyone is in, in any process: each process keeps its own set in Redis, written
  every ROOMS_REFRESH_S and at once when a connection starts joining a room, expiring if the
  process goes away, so that the looks read only what someone will hear;
- control messages, in a namespace no connection uses (RELAY_NAMESPACE): a joining
  connection's catch-up is asked of the watching process, which alone knows what the looks have
  pushed, and that process answers with the batches and a marker, after which the process
  holding the connection puts it in the room.

Each process hears each message once, in the order a sender sent them (Redis delivers one
channel's messages in the order it took them), its own messages at once.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any, Protocol

import redis
import socketio

RELAY_NAMESPACE = "/wmon-relay"
ROOMS_REFRESH_S = 1.0
ROOMS_TTL_MS = 5_000


class Deliveries(Protocol):
    """What a relay tells of each event it delivers here: web.live's watcher."""

    @property
    def lock(self) -> threading.RLock:
        """Held while an event is delivered here and told of."""

    def delivered(self, event: str, payload: Any, rooms: list[str]) -> None:
        """`event` went to the connections here in `rooms`."""


class Relay(socketio.RedisManager):
    """The Redis message queue of the Socket.IO server, telling `deliveries` of what it
    delivers here and handing control messages to their handlers."""

    def __init__(self, url: str, channel: str) -> None:
        super().__init__(url, channel=channel)
        self.deliveries: Deliveries | None = None
        self.handlers: dict[str, Callable[[dict[str, Any]], None]] = {}
        self.rooms_refresh_s = ROOMS_REFRESH_S
        self._rooms_key = f"{channel}:rooms:"
        self._hosts_key = f"{channel}:hosts"
        self._store = redis.Redis.from_url(url, decode_responses=True)

    def _handle_emit(self, message: dict[str, Any]) -> None:
        if message.get("namespace") == RELAY_NAMESPACE:
            handler = self.handlers.get(message["event"])
            if handler is not None:
                handler(_payload(message))
            return
        deliveries = self.deliveries
        if deliveries is None:
            super()._handle_emit(message)
            return
        room = message.get("room")
        rooms: list[str] = room if isinstance(room, list) else [] if room is None else [room]
        with deliveries.lock:
            super()._handle_emit(message)
            deliveries.delivered(message["event"], _payload(message), rooms)

    def listen(self) -> None:
        """Start hearing the other processes, as the server does at its first connection:
        a process with none may have to answer them."""
        if not self.server.manager_initialized:
            self.server.manager_initialized = True
            self.initialize()

    def tell(self, event: str, payload: dict[str, Any]) -> None:
        """Send a control message to every process, this one first."""
        self.emit(event, payload, namespace=RELAY_NAMESPACE)

    def publish_rooms(self, rooms: set[str]) -> None:
        """Tell the others which rooms this process has someone in, or on the way in."""
        key = self._rooms_key + self.host_id
        with self._store.pipeline() as pipeline:
            pipeline.set(key, json.dumps(sorted(rooms)), px=ROOMS_TTL_MS)
            pipeline.sadd(self._hosts_key, self.host_id)
            pipeline.execute()

    def heard_rooms(self) -> set[str]:
        """The rooms someone is in, or on the way into, in any process."""
        hosts = sorted(str(host) for host in self._store.smembers(self._hosts_key))
        if not hosts:
            return set()
        found = self._store.mget([self._rooms_key + host for host in hosts])
        gone = [host for host, rooms in zip(hosts, found, strict=True) if rooms is None]
        if gone:
            self._store.srem(self._hosts_key, *gone)
        return {name for rooms in found if rooms is not None for name in json.loads(rooms)}


def _payload(message: dict[str, Any]) -> Any:
    """The one argument an emit carried, as the message queue wraps it in a list."""
    data = message["data"]
    return data[0] if isinstance(data, list) and len(data) == 1 else data
