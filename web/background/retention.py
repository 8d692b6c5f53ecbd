"""History retention in the dashboard server: every PRUNE_INTERVAL_S (an hour by default) a
background task, started with the server (web.start) or else with the first request,
prunes each tier of history older than RETENTION says
(monitor/store/tiers/prune.py: short transactions, so the listeners' writes are not held up)."""

from __future__ import annotations

import logging

from flask import Flask

from monitor.store.tiers.prune import Pruned, prune
from web import db
from web.background.tasks import Periodic
from web.sockets import socketio

log = logging.getLogger(__name__)


class Pruner:
    """The background task that prunes the app's store on a schedule."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        self._task = Periodic(
            self.prune,
            lambda: app.config["PRUNE_INTERVAL_S"],
            log,
            cannot="wmon retention: cannot prune the store",
            failed="wmon retention: a prune failed",
        )

    def start(self) -> None:
        """Start the background task, once however many requests ask."""
        self._task.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the background task and wait for it to end."""
        self._task.stop(timeout)

    def prune(self) -> Pruned:
        """Delete what each tier keeps no longer, now."""
        config = self.app.config
        cutoffs = config["RETENTION"].cutoffs(config["CLOCK"]())
        pruned = prune(db.engine(self.app), cutoffs, sleep=socketio.sleep)
        if pruned.total:
            log.info("wmon retention: pruned %s", pruned.deleted)
        return pruned


def init_app(app: Flask) -> None:
    """Give the app its pruner; it starts with the first request."""
    pruner = Pruner(app)
    app.extensions["wmon.retention"] = pruner
    app.before_request(pruner.start)


def pruner(app: Flask) -> Pruner:
    """The app's pruner."""
    found: Pruner = app.extensions["wmon.retention"]
    return found
