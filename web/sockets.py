"""The one Socket.IO server of the dashboard, bound to an app by `create_app`; live push, the
periodic tasks and `wmon serve` use it. It answers only the origins of the names the app answers
to, runs each connection's events one at a time, limits how often a connection subscribes, and
acknowledges every request, with `{"error": ...}` when it fails.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, current_app, request
from flask_socketio import SocketIO

from monitor.store.read.queries import QueryNotFound
from monitor.store.schema.engine import STORE_FAILURES, unusable
from web.guards.hosts import is_trusted

SUBSCRIBE_BURST = 20
SUBSCRIBE_RATE_PER_S = 2.0

socketio = SocketIO()

log = logging.getLogger(__name__)


def init_app(app: Flask) -> None:
    """Bind the Socket.IO server to `app`, with a rate limit on each connection's
    subscriptions (SUBSCRIBE_BURST at once, then SUBSCRIBE_RATE_PER_S a second). Several
    processes share the live push through web.live.relay, not through the server."""
    app.extensions["wmon.subscribe_limit"] = RateLimit(
        app.config.get("SUBSCRIBE_RATE_PER_S", SUBSCRIBE_RATE_PER_S),
        app.config.get("SUBSCRIBE_BURST", SUBSCRIBE_BURST),
    )
    socketio.init_app(
        app,
        async_mode="threading",
        # Each connection's events run one after another on the thread that reads them, rather
        # than on a new thread each: a client flooding events costs no more threads than one
        # that sends none, and holds up nobody but itself.
        async_handlers=False,
        cors_allowed_origins=lambda origin, environ: own_origin(
            origin, environ, app.config["ALLOWED_HOSTS"]
        ),
    )


def own_origin(origin: str, environ: Mapping[str, Any], allowed: Collection[str]) -> bool:
    """Whether a Socket.IO request's Origin is this server's own: a web page served under the
    request's Host, which must be a name the server answers to (`web.guards.hosts`).

    A page of another site whose name was made to resolve to this server (DNS rebinding) sends
    its own name as both Host and Origin: the two agree, but the name is not trusted. The
    scheme is not compared, as behind a proxy that ends TLS the server cannot know it.
    """
    host = str(environ.get("HTTP_HOST", ""))
    parts = urlsplit(origin)
    return (
        parts.scheme in ("http", "https")
        and origin.lower() == f"{parts.scheme}://{host}".lower()
        and is_trusted(host, allowed)
    )


class TokenBucket:
    """Requests allowed `burst` at once, then `rate` a second."""

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self.rate, self.burst = rate, burst
        self._tokens, self._at = float(burst), now

    def take(self, now: float) -> bool:
        """Whether a request at `now` is allowed; if so it uses up a token."""
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True


class RateLimit:
    """A token bucket per connection, forgotten when the connection ends."""

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate, self.burst, self.clock = rate, burst, clock
        self._buckets: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()

    def allow(self, sid: str) -> bool:
        """Whether connection `sid` may make one more request now."""
        now = self.clock()
        with self._lock:
            bucket = self._buckets.get(sid)
            if bucket is None:
                bucket = self._buckets[sid] = TokenBucket(self.rate, self.burst, now)
            return bucket.take(now)

    def forget(self, sid: str) -> None:
        """Drop what is kept about connection `sid`."""
        with self._lock:
            self._buckets.pop(sid, None)

    def __len__(self) -> int:
        return len(self._buckets)

    def refusal(self) -> str:
        """What a refused request is told."""
        return (
            f"too many subscriptions on this connection: {self.burst} at once, then "
            f"{self.rate:g} a second; try again later"
        )


def subscribe_limit(app: Flask | None = None) -> RateLimit:
    """The app's rate limit on subscriptions."""
    found: RateLimit = (app or current_app).extensions["wmon.subscribe_limit"]
    return found


def connection_id() -> str:
    """The id of the connection whose event is being handled."""
    # Flask-SocketIO gives the request of an event the id of its connection.
    sid: str = request.sid  # type: ignore[attr-defined]
    return sid


class OverLimit(Exception):
    """A request over its connection's limits; the message says which."""


def take_turn() -> None:
    """Count a subscription of the current connection; OverLimit past its rate limit."""
    limit = subscribe_limit()
    if not limit.allow(connection_id()):
        raise OverLimit(limit.refusal())


def acknowledged(handler: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """`handler`, answering `{"error": ...}` rather than raising: an exception that escapes
    a handler loses the acknowledgement and ends the connection's reading."""

    @functools.wraps(handler)
    def answer(*args: Any) -> dict[str, Any]:
        try:
            return handler(*args)
        except (ValueError, OverLimit) as error:
            return {"error": str(error)}
        except QueryNotFound as error:
            return {"error": str(error.args[0])}
        except STORE_FAILURES as error:
            return {"error": unusable(error)}
        except Exception:
            log.exception("wmon: Socket.IO %s failed", handler.__name__)
            return {"error": f"{handler.__name__} failed on the server; see its log"}

    return answer
