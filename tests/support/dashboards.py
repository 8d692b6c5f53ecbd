"""Dashboard processes in tests, as an operator runs them: `wmon serve` or gunicorn serving
`wmon.wsgi:app` on a store, each alone or sharing live push through Redis (127.0.0.1:6379);
a Socket.IO client of one; which process holds a lease in the store."""

import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import socketio
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.schema.models import Lease
from tests.support.network import closed_port
from tests.support.paths import ROOT
from tests.support.push_clients import WAIT_S, Browser
from tests.support.waiting import wait_until
from web.live.watching import LIVE_LEASE

REDIS = "redis://127.0.0.1:6379/0"


def wmon_serve(port):
    return [sys.executable, "-m", "wmon", "serve", "--port", str(port)]


def gunicorn(port):
    """As docs/operations.md runs it."""
    binary = str(Path(sys.executable).with_name("gunicorn"))
    return [binary, "--workers", "1", "--threads", "20", "--bind", f"127.0.0.1:{port}"] + [
        "wmon.wsgi:app"
    ]


@contextmanager
def dashboard(command, database_url, rules, queue, settings=None):
    """A dashboard process made by `command` on the store, evaluating every second, sharing
    live push through `queue` (settings, or none), with other WMON_ `settings`; its URL and
    process, stopped at the end as a service manager stops it (SIGTERM)."""
    port = closed_port()
    environ = (
        os.environ
        | queue
        | {
            "WMON_DATABASE_URL": database_url,
            "WMON_ALERT_RULES": str(rules),
            "WMON_ALERT_INTERVAL": "1",
        }
        | (settings or {})
    )
    server = subprocess.Popen(
        command(port), cwd=ROOT, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.terminate()
        server.wait(timeout=30)


def open_browser(url, stack):
    """A client of the server at `url`, once it serves; closed with `stack`."""
    browser = wait_until(lambda: _connected(url), WAIT_S * 3, f"{url} to serve")
    stack.callback(browser.close)
    return browser


def _connected(url):
    try:
        return Browser(url)
    except socketio.exceptions.ConnectionError:  # not listening yet
        return None


def lease_holders(database_url, now_ms=None):
    """The pid of the process holding each lease held (`host:pid:…`), by lease name."""
    engine = sa.create_engine(database_url)
    with so.Session(engine) as session:
        leases = session.scalars(sa.select(Lease)).all()
    engine.dispose()
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    return {
        lease.name: int(lease.holder.split(":")[1]) for lease in leases if lease.expires_at_ms > now
    }


def live_lease_holder(database_url):
    """The pid of the process that watches the store for all, if one does."""
    return lease_holders(database_url).get(LIVE_LEASE)
