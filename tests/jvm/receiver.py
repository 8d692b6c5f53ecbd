"""A stand-in for the collector (`POST /api/ingest`): records every request and answers with
the status a test sets; it can be stopped and started again on the same port."""

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    """One POST as the receiver saw it, and the status it answered."""

    path: str
    headers: dict[str, str]
    events: list[dict[str, Any]]
    status: int
    size: int


class Receiver:
    """A real HTTP server on 127.0.0.1 in a thread; `status` is what it answers next."""

    def __init__(self) -> None:
        self.status = 200
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
                    status = receiver.status
                    receiver.requests.append(
                        Request(self.path, dict(self.headers), events, status, len(body))
                    )
                answer = {"stored": len(events)} if status < 300 else {"error": "bad event"}
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        # The same port again after a stop(): the listener keeps its URL.
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

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
