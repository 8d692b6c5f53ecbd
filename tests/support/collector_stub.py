"""A stand-in for the collector (`POST /api/ingest`) that records requests and answers as told.

It answers with the status a test sets, or as a test's own function decides; it can be
stopped and started again on the same port.
"""

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    """What the receiver answers to one request."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Request:
    """One POST as the receiver saw it, and the status it answered."""

    path: str
    headers: dict[str, str]
    events: list[dict[str, Any]]
    status: int
    size: int


class Receiver:
    """A real HTTP server on 127.0.0.1 in a thread; `status` is what it answers next, unless
    `answer` is given: then it decides each answer from the request's events."""

    def __init__(self, answer: Callable[[list[dict[str, Any]]], Answer] | None = None) -> None:
        self.status = 200
        self.answer = answer or self._by_status
        self.requests: list[Request] = []
        self.port = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "Receiver":
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                events = json.loads(body)
                with receiver._lock:
                    answer = receiver.answer(events)
                    receiver.requests.append(
                        Request(self.path, dict(self.headers), events, answer.status, len(body))
                    )
                data = json.dumps(answer.body).encode()
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                # The server closes each connection (HTTP/1.0): said, so that the listener's
                # client does not post again on it and count a retry nobody asked for.
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        # The same port again after a stop(): the listener keeps its URL.
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_address[1]
        # Looking every 50 ms whether to stop (0.5 s by default): a stop() waits that.
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def _by_status(self, events: list[dict[str, Any]]) -> Answer:
        """`status`, with the collector's count of stored events, or an error."""
        if self.status < 300:
            return Answer(self.status, {"stored": len(events)})
        return Answer(self.status, {"error": "bad event"})

    def stop(self) -> None:
        """Stop answering: connections are refused until start()."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def delivered(self) -> list[dict[str, Any]]:
        """Every event of the requests answered with 2xx, in the order they arrived."""
        with self._lock:
            return [e for r in self.requests if 200 <= r.status < 300 for e in r.events]

    def all_requests(self) -> list[Request]:
        with self._lock:
            return list(self.requests)
