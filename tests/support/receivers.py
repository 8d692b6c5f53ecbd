"""Alert receivers for tests: a local HTTP server that records the notifications it is sent."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LocalReceiver:
    """A local HTTP server that records what it is sent; it can answer 503 for a while."""

    def __init__(self):
        self.received, self.failures_left, self.failure_status = [], 0, 503
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if outer.failures_left > 0:
                    outer.failures_left -= 1
                    self.send_response(outer.failure_status)
                else:
                    outer.received.append((self.path, body))
                    self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # Looking every 50 ms whether to stop (0.5 s by default): a close() waits that.
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()
