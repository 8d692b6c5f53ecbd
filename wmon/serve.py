"""`wmon serve`: the dashboard, its JSON API and live push, with the alert evaluation."""

from __future__ import annotations

import argparse
from typing import Any

from monitor.store.engine import display_url
from wmon.options import add_address, open_store


def register(commands: Any) -> None:
    """Add `wmon serve`."""
    parser = commands.add_parser("serve", help="serve the dashboard and its JSON API")
    add_address(parser)
    parser.add_argument(
        "--database-url",
        "--database",
        dest="database_url",
        help="store URL (default: $WMON_DATABASE_URL or the embedded SQLite store)",
    )
    parser.set_defaults(func=serve)


def serve(args: argparse.Namespace) -> None:
    """Serve the dashboard and its JSON API, pushing what the store receives to the browsers."""
    from web import create_app, evaluation, socketio

    engine = open_store(args.database_url)
    url = engine.url.render_as_string(hide_password=False)
    engine.dispose()
    app = create_app({"DATABASE_URL": url})
    print(f"wmon: dashboard on http://{args.host}:{args.port}/ (store {display_url(url)})")
    print("wmon: JSON API at /api/queries; Ctrl-C stops the server", flush=True)
    evaluator = evaluation.evaluator(app)
    evaluator.start()
    try:
        # Flask-SocketIO refuses Werkzeug's server when stdin is not a terminal (a service, a
        # container). In threading mode it is the server, serving each connection and WebSocket
        # on its own thread, which suits a monitor's few browsers; the default host keeps it
        # local.
        socketio.run(app, host=args.host, port=args.port, allow_unsafe_werkzeug=True)
    finally:
        evaluator.stop()
