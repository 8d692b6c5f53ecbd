"""Several dashboard processes on one store, as behind a load balancer: `wmon serve` and
gunicorn serving `wmon.wsgi:app`, real Socket.IO clients on each, a listener's writes from a
third process. Every client gets every batch and every alert event once, whichever process it
is connected to; of the processes, exactly one evaluates the alert rules, so a receiver hears
each alert once."""

import os
import subprocess
import sys
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
import socketio
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.alerts.runner import LEASE
from monitor.store.models import AlertEvent, Lease
from tests.helpers import ROOT, closed_port, wait_until
from tests.monitor.alerts.test_delivery import LocalReceiver
from tests.web.test_live import WAIT_S, Browser, Writer

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
RULES = """\
queries:
  - match: "*"
    rules:
      no_progress: {enabled: false}
      watermark_age: {enabled: false}
receivers:
  - {name: ops, kind: webhook, url: "%s/ops"}
"""


def wmon_serve(port):
    return [sys.executable, "-m", "wmon", "serve", "--port", str(port)]


def gunicorn(port):
    """As docs/operations.md runs it."""
    binary = str(Path(sys.executable).with_name("gunicorn"))
    return [binary, "--workers", "1", "--threads", "20", "--bind", f"127.0.0.1:{port}"] + [
        "wmon.wsgi:app"
    ]


@contextmanager
def dashboard(command, database_url, rules):
    """A dashboard process made by `command` on the store, evaluating every second; its URL
    and process."""
    port = closed_port()
    environ = os.environ | {
        "WMON_DATABASE_URL": database_url,
        "WMON_ALERT_RULES": str(rules),
        "WMON_ALERT_INTERVAL": "1",
    }
    server = subprocess.Popen(
        command(port), cwd=ROOT, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_every_client_of_either_server_gets_every_batch_once_and_one_server_evaluates(
    database_url, tmp_path
):
    receiver = LocalReceiver()
    rules = tmp_path / "rules.yml"
    rules.write_text(RULES % receiver.url)
    writer = Writer(database_url)
    now = time.time_ns() // 1_000_000
    writer.batch(0, at_ms=now)
    with ExitStack() as stack:
        servers = [
            stack.enter_context(dashboard(command, database_url, rules))
            for command in (wmon_serve, gunicorn)
        ]
        browsers = []
        for url, _ in servers:
            for _ in range(2):
                browser = wait_until(lambda url=url: _connected(url), WAIT_S * 3, f"{url} to serve")
                stack.callback(browser.close)
                browsers.append(browser)
        for browser in browsers:
            assert browser.subscribe("q", after_batch=0)["caught_up"] == 0
        for batch_id in range(1, 6):
            writer.batch(batch_id, at_ms=now + batch_id * 1_000)
        writer.write(
            "terminated", query_id="q", run_id="run-1", timestamp_ms=now + 6_000, exception="boom"
        )
        writer.close()

        def alerted(browser):
            return [(d["alert"]["rule"], d["transition"]) for _, d in browser.events("alert")]

        for browser in browsers:
            wait_until(lambda b=browser: b.batch_ids() == [1, 2, 3, 4, 5], WAIT_S, "the batches")
            wait_until(lambda b=browser: ("query_failed", "firing") in alerted(b), 30, "the alert")
        wait_until(lambda: receiver.received, WAIT_S, "the notification")
        time.sleep(3.0)  # three evaluations and many looks: anything sent twice is here now

        for browser in browsers:
            assert browser.batch_ids() == [1, 2, 3, 4, 5]
            assert alerted(browser) == alerted(browsers[0])
            assert len(set(alerted(browser))) == len(alerted(browser))
        notified = [(body["alert"]["rule"], body["status"]) for _, body in receiver.received]
        assert notified == [("query_failed", "firing")]

        engine = sa.create_engine(database_url)
        with so.Session(engine) as session:
            [lease] = session.scalars(sa.select(Lease).where(Lease.name == LEASE)).all()
            fired = session.scalars(
                sa.select(AlertEvent).where(AlertEvent.transition == "firing")
            ).all()
        engine.dispose()
        # The holder is `host:pid:…`: a server, or gunicorn's worker under it.
        holder = int(lease.holder.split(":")[1])
        servers_and_workers = {process.pid for _, process in servers}
        assert {holder, _parent(holder)} & servers_and_workers
        assert len(fired) == 1
    receiver.close()


def _connected(url):
    try:
        return Browser(url)
    except socketio.exceptions.ConnectionError:  # not listening yet
        return None


def _parent(pid):
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("PPid:"))
