"""Alert evaluation in the dashboard server: an AlertRunner as a background task.

`wmon serve` and the demo start it (an app made for tests does not evaluate unless told to).
Every server runs one, and the lease in the store lets exactly one of them evaluate at a
time; `wmon alerts run` takes part the same way. The rules file is read when the app is made,
so a bad one stops the server from starting.
"""

from __future__ import annotations

import threading
from typing import Any

from flask import Flask

from monitor.alerts.rulefile import load_rules_file
from monitor.alerts.runner import AlertRunner
from web import db, socketio


class Evaluator:
    """The app's alert runner, started once however many requests ask."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.runner: AlertRunner | None = None
        self._task: Any = None

    def start(self) -> None:
        """Start evaluating, once however often asked."""
        with self.lock:
            if self._task is not None:
                return
            config = self.app.config
            self.runner = AlertRunner(
                db.engine(self.app),
                config["ALERT_RULES"],
                config["ALERT_INTERVAL_S"],
                config["CLOCK"],
            )
            self._task = socketio.start_background_task(self.runner.run, self.stopping)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop evaluating and hand the lease on."""
        self.stopping.set()
        if self._task is not None:
            self._task.join(timeout)


def init_app(app: Flask) -> None:
    """Check the rules file now and give the app its evaluator, not started yet."""
    if app.config["ALERT_RULES"] is not None:
        load_rules_file(app.config["ALERT_RULES"])
    app.extensions["wmon.alerting"] = Evaluator(app)


def evaluator(app: Flask) -> Evaluator:
    """The app's evaluator."""
    found: Evaluator = app.extensions["wmon.alerting"]
    return found
