"""Live push over Socket.IO: what anyone writes to the store reaches the browsers watching it.

- :mod:`web.live.socket_events`: a Socket.IO event, its payload and its rooms; the rooms' names.
- :mod:`web.live.store_events`: store changes turned into events (no sockets).
- :mod:`web.live.rooms`: who is in which room here, and the connections on their way in.
- :mod:`web.live.fanout`: how events and messages reach every process, alone
  (:class:`~web.live.fanout.LocalFanout`) or through Redis (:mod:`web.live.relay`).
- :mod:`web.live.watching`: the background task that looks and sends, the lease that says who
  looks, and the catch-up of a joining connection.
- :mod:`web.live.handlers`: the Socket.IO events of docs/live.md.

Each event is encoded once for all the clients of a room and queued to each, so a slow client
does not hold up the others.
"""

from web.live.handlers import init_app, watcher

__all__ = ["init_app", "watcher"]
