"""The store as the app sees it: one engine per app, made on first use; a session per request."""

from __future__ import annotations

import threading

import sqlalchemy as sa
import sqlalchemy.orm as so
from flask import Flask, current_app, g

from monitor.store.schema.engine import create_engine
from monitor.store.schema.models import Query

_ENGINE_LOCK = threading.Lock()


def init_app(app: Flask) -> None:
    """Close each request's session when its app context ends."""
    app.teardown_appcontext(close_session)


def engine(app: Flask | None = None) -> sa.Engine:
    """The app's engine on its DATABASE_URL; nothing connects before the first request, and
    the dashboard never creates a store (`wmon db upgrade` and a job's listener do)."""
    app = app or current_app
    with _ENGINE_LOCK:
        if "wmon.engine" not in app.extensions:
            app.extensions["wmon.engine"] = create_engine(
                app.config["DATABASE_URL"], may_create=False
            )
        store: sa.Engine = app.extensions["wmon.engine"]
        return store


def session() -> so.Session:
    """The session of the current request, opened on first use."""
    if "db_session" not in g:
        g.db_session = so.Session(engine())
    current: so.Session = g.db_session
    return current


def check() -> None:
    """Read the store once, so that a store that cannot be used fails the request now."""
    session().execute(sa.select(Query.id).limit(1))


def close_session(_error: BaseException | None = None) -> None:
    """Close the current request's session, if it opened one."""
    opened = g.pop("db_session", None)
    if opened is not None:
        opened.close()


def dispose(app: Flask) -> None:
    """Close the app's pooled connections (at shutdown, and between tests)."""
    store = app.extensions.pop("wmon.engine", None)
    if store is not None:
        store.dispose()
