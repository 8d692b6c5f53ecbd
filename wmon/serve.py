"""`wmon serve`: the dashboard, its JSON API and live push, with the alert evaluation."""

from __future__ import annotations

import argparse
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING

from monitor.config import load_settings
from monitor.store.schema.engine import display_url
from wmon.options import CliError
from wmon.runtime import open_store
from wmon.stopping import sigterm_stops

if TYPE_CHECKING:
    from flask import Flask


def dashboard(database_url: str | None, host: str | None = None) -> Flask:
    """The dashboard app on the store named (or configured), which must exist and be
    migrated, answering to `host` besides the configured names."""
    from web import create_app
    from web.guards.hosts import allowed_hosts

    engine = open_store(database_url)
    url = engine.url.render_as_string(hide_password=False)
    engine.dispose()
    names = load_settings().allowed_hosts
    hosts = allowed_hosts((*names, host) if host else names)
    return create_app({"DATABASE_URL": url, "ALLOWED_HOSTS": hosts})


def start_beside(app: Flask) -> Callable[[], None]:
    """Start what runs beside the server (web.start); the function that stops it, hands
    the leases on and closes the store's connections."""
    import web

    web.start(app)
    return lambda: web.stop(app)


def serve(args: argparse.Namespace) -> None:
    """Serve the dashboard and its JSON API, pushing what the store receives to the browsers."""
    from web import socketio

    app = dashboard(args.database_url, args.host)
    check_address(args.host, args.port)
    address = authority(args.host, args.port)
    url = app.config["DATABASE_URL"]
    print(f"wmon: dashboard on http://{address}/ (store {display_url(url)})")
    print("wmon: JSON API at /api/queries; Ctrl-C stops the server", flush=True)
    with sigterm_stops():
        stop = start_beside(app)
        try:
            # Flask-SocketIO refuses Werkzeug's server when stdin is not a terminal (a service,
            # a container). In threading mode it is the server, serving each connection and
            # WebSocket on its own thread, which suits a monitor's few browsers; the default
            # host keeps it local. Its loop ends quietly on Ctrl-C or SIGTERM.
            socketio.run(app, host=args.host, port=args.port, allow_unsafe_werkzeug=True)
        finally:
            stop()


def authority(host: str, port: int) -> str:
    """`host:port`, an IPv6 address in brackets (`[::1]:5000`)."""
    bare_ipv6 = ":" in host and not host.startswith("[")
    return f"[{host}]:{port}" if bare_ipv6 else f"{host}:{port}"


def check_address(host: str, port: int) -> None:
    """Bind the address once, as Werkzeug's server will, so that a port in use or a host that
    is not this machine's is one error line before the server is announced (Werkzeug would
    print a bare reason and exit)."""
    from werkzeug.serving import get_sockaddr, select_address_family

    family = select_address_family(host, port)
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            # As Werkzeug's server does: a port left in TIME_WAIT by a stopped server is free.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(get_sockaddr(host, port, family))
    except OSError as error:
        reason = error.strerror or str(error)
        raise CliError(f"cannot listen on {authority(host, port)}: {reason}") from None
    except ValueError as error:  # a name IDNA cannot encode, a NUL character
        raise CliError(f"cannot listen on {authority(host, port)}: {error}") from None
