"""Alert evaluation in the dashboard server: an AlertRunner as a background task.

`wmon serve`, gunicorn and the demo start it (web.start; an app made for tests does not
evaluate unless told to).
Every server runs one, and the lease in the store lets exactly one of them evaluate at a
time; `wmon alerts run` takes part the same way. The rules file is read when the app is made,
so a bad one stops the server from starting; a later edit that breaks it leaves the rules in
force and is shown as `rules_error` in GET /api/alerts until the file is fixed.
"""

from __future__ import annotations

import threading

from flask import Flask

from monitor.alerts.rulefile import RuleSet, load_rules_file
from monitor.alerts.runner import AlertRunner
from web import db
from web.background.tasks import Task


class Evaluator:
    """The app's alert runner, started once however many requests ask.

    The runner loops by itself (and sends notifications from a thread of its own), so it runs
    as a plain Task rather than a Periodic one: the task's stop event is the runner's.
    """

    def __init__(self, app: Flask, rules: RuleSet) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.initial_rules = rules
        self.runner: AlertRunner | None = None
        self._task: Task | None = None

    def start(self) -> None:
        """Start evaluating, once however often asked."""
        # The runner is made here rather than on the task, so that a rules file that went bad
        # since the app was made is the caller's error, as it is when the app is made.
        with self.lock:
            if self.runner is None:
                config = self.app.config
                self.runner = AlertRunner(
                    db.engine(self.app),
                    config["ALERT_RULES"],
                    config["ALERT_INTERVAL_S"],
                    config["CLOCK"],
                )
                self._task = Task(self.runner.run)
                self._task.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop evaluating and hand the lease on."""
        if self._task is not None:
            self._task.stop(timeout)

    @property
    def rules(self) -> RuleSet:
        """The rules in force: the runner's (it reloads a changed file) once it runs, else the
        rules read when the app was made."""
        return self.runner.rules if self.runner is not None else self.initial_rules

    @property
    def rules_error(self) -> str | None:
        """Why the changed rules file is not used (the rules before it stay in force), if it
        is not; None before evaluation starts."""
        return self.runner.rules_error if self.runner is not None else None


def init_app(app: Flask) -> None:
    """Read the rules file now and give the app its evaluator, not started yet."""
    path = app.config["ALERT_RULES"]
    rules = RuleSet() if path is None else load_rules_file(path)
    app.extensions["wmon.evaluation"] = Evaluator(app, rules)


def evaluator(app: Flask) -> Evaluator:
    """The app's evaluator."""
    found: Evaluator = app.extensions["wmon.evaluation"]
    return found
