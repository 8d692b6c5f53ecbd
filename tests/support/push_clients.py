"""Live push in tests: a writer in another process, Socket.IO clients that record what came."""

import json
import select
import subprocess
import sys
import time
from functools import partial

import socketio

from tests.support.paths import ROOT
from tests.support.waiting import wait_until

# The time of batch 0, and how long a client waits for what it is owed.
T0 = 1_795_316_400_000
WAIT_S = 10.0


class Writer:
    """tests/support/writer_process.py in its own process: the store's writes come from there."""

    def __init__(self, database_url):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.writer_process", database_url],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def write(self, kind, **fields):
        """Send one event and wait until it is stored; the wall-clock time it was."""
        self.process.stdin.write(json.dumps({"kind": kind} | fields) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], 30)
        assert ready, f"the writer process stored nothing within 30 s ({kind} {fields})"
        return json.loads(self.process.stdout.readline())["written_at"]

    def batch(self, batch_id, **fields):
        """Write batch `batch_id` of query q, a second after the one before."""
        fields = {"query_id": "q", "name": "orders", "at_ms": T0 + batch_id * 1_000} | fields
        return self.write("batch", batch_id=batch_id, **fields)

    def close(self):
        self.process.stdin.close()
        assert self.process.wait(timeout=30) == 0


class Browser:
    """A Socket.IO client that records each event with the time it arrived."""

    EVENTS = ("batch", "timers", "summary", "overview", "alert", "silences")

    def __init__(self, url):
        self.received = []
        self.client = socketio.Client(reconnection=False)
        for event in self.EVENTS:
            self.client.on(event, partial(self._record, event))
        self.client.connect(url, wait_timeout=WAIT_S)

    def _record(self, event, data):
        self.received.append((event, time.time(), data))

    def subscribe(self, query, after_batch=None):
        payload = {"query": query, "after_batch": after_batch}
        return self.client.call("subscribe", payload, timeout=WAIT_S)

    def events(self, name):
        return [(at, data) for event, at, data in self.received if event == name]

    def batch_ids(self):
        return [data["batch"]["batch_id"] for _, data in self.events("batch")]

    def arrival(self, batch_id, run_id="run-1"):
        """When the batch arrived, waiting for it; fails if it never does."""

        def arrived():
            return next(
                (
                    at
                    for at, data in self.events("batch")
                    if data["batch"]["batch_id"] == batch_id and data["batch"]["run_id"] == run_id
                ),
                None,
            )

        return wait_until(arrived, WAIT_S, f"batch {batch_id} of {run_id} to reach the client")

    def close(self):
        self.client.disconnect()


def end_all(clients, server):
    """Close Socket.IO clients as `server`, this process's Socket.IO server, ends their
    connections: at once, where a client's own disconnect waits 3 s for a WebSocket close frame
    that Werkzeug's server, once the connection is back in its hands, never sends."""
    for client in clients:
        if client.connected:
            server.disconnect(client.get_sid())

    def all_ended():
        return not any(client.connected for client in clients)

    wait_until(all_ended, WAIT_S, "the server to end every connection")
    for client in clients:
        client.disconnect()
