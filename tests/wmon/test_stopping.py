"""SIGTERM, as systemd, Kubernetes and `docker stop` stop a service, stops `wmon serve`,
`wmon alerts run` and `wmon ingest --follow` as Ctrl-C does: each exits 0 at once, hands its
lease on (another process takes it long before it would have expired), and keeps what it
acknowledged or read. Real processes on both stores, as an operator runs them."""

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from contextlib import ExitStack

import sqlalchemy as sa

from monitor.alerts.runner import LEASE
from monitor.collect.spark_events import STARTED, named
from monitor.store.schema.models import Batch
from tests.support.dashboards import REDIS, dashboard, lease_holders, wmon_serve
from tests.support.event_logs import LOG_START, query_run
from tests.support.paths import ROOT
from tests.support.progress import fixture, progress_event, stamp
from tests.support.waiting import wait_until
from web.live.watching import LEASE_RENEW_S, LEASE_TTL_MS, LIVE_LEASE

INGEST_TOKEN = "stopping-test-token"
QUERY_ID = fixture("started.json")["id"]
T0_MS = 1_795_316_400_000
# A stopped process exits within this; SIGKILL comes after 30 s from Kubernetes, 90 s from
# systemd.
EXIT_S = 10.0


def stopped_by_sigterm(process):
    """Send SIGTERM to `process`; its exit status, which must come within EXIT_S."""
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout=EXIT_S)


def held_by(database_url, pid):
    """The leases that process `pid` holds in the store now."""
    return {name for name, holder in lease_holders(database_url).items() if holder == pid}


class Sender:
    """Posts one batch of query QUERY_ID a request to a collector, on a thread, until the
    collector stops answering; the batch ids it acknowledged."""

    def __init__(self, url):
        self.url, self.acknowledged = url + "/api/ingest", []
        self._post([named(STARTED, fixture("started.json"))])
        self._thread = threading.Thread(target=self._send, daemon=True)
        self._thread.start()

    def _post(self, events):
        request = urllib.request.Request(
            self.url,
            data=json.dumps(events).encode(),
            headers={
                "Authorization": f"Bearer {INGEST_TOKEN}",
                "Content-Type": "application/json",
            },
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.load(response)["stored"] == len(events)

    def _send(self):
        for batch_id in range(100_000):
            event = progress_event(batch_id=batch_id, timestamp=stamp(T0_MS + batch_id * 1_000))
            try:
                self._post([event])
            except (OSError, http.client.HTTPException):
                return  # the collector stopped, before or while it answered (IncompleteRead)
            self.acknowledged.append(batch_id)

    def join(self):
        self._thread.join(timeout=EXIT_S)
        assert not self._thread.is_alive()


def batch_ids(database_url, query_id):
    """The ids of the query's batches in the store."""
    engine = sa.create_engine(database_url)
    with engine.connect() as connection:
        ids = set(connection.scalars(sa.select(Batch.batch_id).where(Batch.query_id == query_id)))
    engine.dispose()
    return ids


def test_sigterm_stops_the_watching_server_which_hands_the_watching_on_at_once(
    database_url, tmp_path
):
    """Two servers sharing live push: the one that watches the store is sent SIGTERM while a
    sender posts to it. Killed as before, its lease ran 4.6 s before the other took it."""
    queue = {"WMON_MESSAGE_QUEUE": REDIS, "WMON_MESSAGE_QUEUE_CHANNEL": f"wmon-{uuid.uuid4()}"}
    settings = {"WMON_INGEST_TOKEN": INGEST_TOKEN}
    rules = tmp_path / "rules.yml"
    rules.write_text("")
    with ExitStack() as stack:
        servers = [
            stack.enter_context(dashboard(wmon_serve, database_url, rules, queue, settings))
            for _ in range(2)
        ]
        watching = wait_until(lambda: lease_holders(database_url).get(LIVE_LEASE), 30, "a watcher")
        (url, stopped), (_, other) = sorted(servers, key=lambda s: s[1].pid != watching)
        sender = wait_until(lambda: _sending(url), 30, "the collector to answer")
        wait_until(lambda: len(sender.acknowledged) >= 3, 30, "batches acknowledged")

        signalled = time.monotonic()
        stopped.send_signal(signal.SIGTERM)
        wait_until(
            lambda: lease_holders(database_url).get(LIVE_LEASE) == other.pid, EXIT_S, "take-over"
        )
        taken = time.monotonic() - signalled
        assert stopped.wait(timeout=EXIT_S) == 0
        assert held_by(database_url, stopped.pid) == set(), "its leases released"
        sender.join()
        assert other.poll() is None
    # Released, the lease is taken at the other's next look. Held to its end, it would be
    # taken 4 s after the stop at the soonest: its time to live less the second since its
    # holder last renewed it.
    assert taken < (LEASE_TTL_MS / 1000 - LEASE_RENEW_S) - 1, f"taken {taken:.2f} s after SIGTERM"
    assert set(sender.acknowledged) <= batch_ids(database_url, QUERY_ID)


def _sending(url):
    try:
        return Sender(url)
    except OSError:  # not listening yet
        return None


def wmon(*args, database_url):
    """A `wmon` process on the store, its output read as text."""
    return subprocess.Popen(
        [sys.executable, "-m", "wmon", *args],
        cwd=ROOT,
        env=os.environ | {"WMON_DATABASE_URL": database_url},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_sigterm_stops_alerts_run_which_hands_the_lease_on_at_once(database_url):
    """The first runner's lease lasts three of its 30-s intervals; the second, every 0.2 s,
    takes it at its next pass once SIGTERM has stopped the first."""
    first = wmon("alerts", "run", "--interval", "30", database_url=database_url)
    second = None
    try:
        wait_until(lambda: held_by(database_url, first.pid) == {LEASE}, 30, "the first to hold")
        second = wmon("alerts", "run", "--interval", "0.2", database_url=database_url)
        assert second.stdout.readline().startswith("wmon: evaluating alert rules every 0.2 s")

        signalled = time.monotonic()
        assert stopped_by_sigterm(first) == 0, first.stderr.read()
        wait_until(lambda: held_by(database_url, second.pid) == {LEASE}, EXIT_S, "take-over")
        taken = time.monotonic() - signalled
        assert taken < 5.0, f"taken over {taken:.2f} s after SIGTERM, not at the next pass"

        assert stopped_by_sigterm(second) == 0
        assert held_by(database_url, second.pid) == set()
        assert second.stderr.read() == first.stderr.read() == ""
    finally:
        for process in (first, second):
            if process is not None:
                process.kill()
                process.communicate()


def test_sigterm_stops_ingest_follow_which_stored_what_it_read_with_its_position(
    database_url, tmp_path
):
    history = tmp_path / "history"
    history.mkdir()
    log = history / "local-1700000000000.inprogress"
    log.write_text(LOG_START + query_run("q-1", "r-1", [0, 1, 2], 1_700_000_000_000))
    follower = wmon(
        "ingest", "--follow", "--interval", "0.2", str(history), database_url=database_url
    )
    try:
        wait_until(lambda: batch_ids(database_url, "q-1") == {0, 1, 2}, 30, "the log to be read")
        assert stopped_by_sigterm(follower) == 0
        out, err = follower.communicate()
    finally:
        follower.kill()
    assert out.startswith("1 applications, 1 files: 5 lines, 4 events stored"), err

    again = wmon("ingest", str(history), database_url=database_url)
    out, err = again.communicate(timeout=60)
    assert again.returncode == 0, err
    assert out.startswith("1 applications, 1 files: 0 lines, 0 events stored"), out
