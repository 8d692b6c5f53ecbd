"""The dashboard server's background work, with one owner: the alert evaluator, the pruner of
history and the watcher of the store that feeds the live push.

:func:`start` starts them as a server does (`wmon serve`, gunicorn through `wmon.wsgi`, the
demo): the evaluator, the pruner and, with a message queue, the watcher (a process with no
browser of its own may watch for the others). :func:`stop` stops whatever of them runs, hands
their leases on and closes the store's connections: the one call every server and every test
harness makes at its end. Without :func:`start`, as in an app a test makes, the pruner starts
with the first request and the watcher with the first browser; the evaluator only when asked.
"""

from __future__ import annotations

from flask import Flask

from web import db, evaluation, live, retention


def start(app: Flask) -> None:
    """Start the app's background work, as a server does."""
    evaluation.evaluator(app).start()
    retention.pruner(app).start()
    watcher = live.watcher(app)
    if watcher.relay is not None:
        watcher.start()


def stop(app: Flask) -> None:
    """Stop every background task of the app that runs, hand the leases on, and close the
    app's connections to the store."""
    evaluation.evaluator(app).stop()
    live.watcher(app).stop()
    retention.pruner(app).stop()
    db.dispose(app)
