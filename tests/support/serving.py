"""The dashboard app served over real HTTP for the tests and the benchmarks, as `wmon serve`
serves it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from flask import Flask
from werkzeug.serving import make_server


@contextmanager
def served(config: Mapping[str, Any], port: int = 0) -> Iterator[str]:
    """The app made with `config` in a threaded HTTP server on `port` (by default a free one),
    for a with-block; its base URL. Its background tasks are stopped and its connections
    closed afterwards."""
    from web import create_app

    with serving(create_app(config), port) as url:
        yield url


@contextmanager
def serving(app: Flask, port: int = 0) -> Iterator[str]:
    """`app` in a threaded HTTP server, as :func:`served` serves the app it makes."""
    import web

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # not a line per request
    server = make_server("127.0.0.1", port, app, threaded=True)
    # Its loop looks every 50 ms whether it should stop (0.5 s by default): a stop waits that.
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)
        web.stop(app)

