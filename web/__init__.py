"""The dashboard server: a Flask app with the JSON API and live push over Socket.IO, and the
one owner of its background work.

- :mod:`web.api`: the HTTP API (queries, alerts, diagnosis, ingest, `/metrics`) and the
  payloads it shares with the live push;
- :mod:`web.live`: live push over Socket.IO;
- :mod:`web.background`: the alert evaluator and the pruner, as periodic tasks;
- :mod:`web.pages`: the HTML pages and the front-end libraries they load;
- :mod:`web.guards`: what every request passes: allowed host names, tokens, parameters, the
  budget of new queries, one answer per failure;
- :mod:`web.db` and :mod:`web.sockets`: the app's store engine and its Socket.IO server.

:func:`start` starts the background work as a server does (`wmon serve`, gunicorn through
`wmon.wsgi`, the demo): the evaluator, the pruner and, with a message queue, the watcher of the
store (a process with no browser of its own may watch for the others). :func:`stop` stops
whatever of them runs, hands their leases on and closes the store's connections: the one call
every server and every test harness makes at its end. Without :func:`start`, as in an app a
test makes, the pruner starts with the first request and the watcher with the first browser;
the evaluator only when asked.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from flask import Flask

from monitor.config import load_settings
from monitor.health.predicates import Timeouts
from monitor.store.tiers.prune import Retention
from web import db, live, sockets
from web.api import alerts, ingest, metrics, queries
from web.background import evaluation, retention
from web.guards import budget, errors, tokens
from web.guards.hosts import allowed_hosts
from web.guards.params import MAX_BODY_BYTES, IdConverter
from web.pages import vendor, views
from web.sockets import socketio

__all__ = ["create_app", "socketio", "start", "stop"]

POLL_INTERVAL_S = 0.25
OVERVIEW_REFRESH_S = 5.0
PRUNE_INTERVAL_S = 3600.0


def now_ms() -> int:
    """The wall clock in epoch milliseconds."""
    return time.time_ns() // 1_000_000


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """The app. These may be set in `config`: DATABASE_URL (default: WMON_DATABASE_URL or the
    embedded store), POLL_INTERVAL_S, OVERVIEW_REFRESH_S, RETENTION (how long each tier of history
    is kept, a store.prune.Retention; default: WMON_RETENTION_BATCHES_HOURS, WMON_RETENTION_DAYS,
    WMON_RETENTION_HOURS_DAYS), PRUNE_INTERVAL_S, ALERT_RULES, ALERT_INTERVAL_S (defaults:
    WMON_ALERT_RULES, WMON_ALERT_INTERVAL), API_TOKEN (default: WMON_API_TOKEN; without one, actions
    on alerts are refused), INGEST_TOKEN (default: WMON_INGEST_TOKEN; without one, the collector
    refuses events), TIMEOUTS (idle and stall timeouts of the events the collector stores; default:
    WMON_IDLE_TIMEOUT, WMON_STALL_TIMEOUT), CLOCK (a function returning epoch milliseconds) and
    ALLOWED_HOSTS (the names besides IP addresses that requests and Socket.IO origins may use;
    default: localhost, this machine's names and WMON_ALLOWED_HOSTS) and METRICS_KEEP_ENDED_S (how
    long an ended query stays in GET /metrics; default: WMON_METRICS_KEEP_ENDED), MESSAGE_QUEUE (the
    Redis URL through which several processes share live push; default: WMON_MESSAGE_QUEUE, else
    none), MESSAGE_QUEUE_CHANNEL (their channel on it; default: WMON_MESSAGE_QUEUE_CHANNEL, else
    "wmon") and FUTURE_TOLERANCE_S (how far ahead of its batch's time a record's event time may be
    before the diagnosis calls it future-dated; default: WMON_FUTURE_TOLERANCE) and
    NEW_QUERIES_PER_HOUR (how many new queries one sender, and one address, may create through
    the collector in an hour; default: WMON_NEW_QUERIES_PER_HOUR).
    """
    app = Flask(__name__)
    settings = load_settings()
    app.config.from_mapping(
        DATABASE_URL=settings.database_url,
        POLL_INTERVAL_S=POLL_INTERVAL_S,
        OVERVIEW_REFRESH_S=OVERVIEW_REFRESH_S,
        RETENTION=Retention(
            settings.retention_batches_hours,
            settings.retention_days,
            settings.retention_hours_days,
        ),
        PRUNE_INTERVAL_S=PRUNE_INTERVAL_S,
        ALERT_RULES=settings.alert_rules,
        ALERT_INTERVAL_S=settings.alert_interval_s,
        API_TOKEN=settings.api_token,
        INGEST_TOKEN=settings.ingest_token,
        TIMEOUTS=Timeouts(
            idle_ms=settings.idle_timeout_s * 1000, stall_ms=settings.stall_timeout_s * 1000
        ),
        CLOCK=now_ms,
        ALLOWED_HOSTS=allowed_hosts(settings.allowed_hosts),
        MAX_CONTENT_LENGTH=MAX_BODY_BYTES,
        METRICS_KEEP_ENDED_S=settings.metrics_keep_ended_s,
        MESSAGE_QUEUE=settings.message_queue,
        MESSAGE_QUEUE_CHANNEL=settings.message_queue_channel,
        FUTURE_TOLERANCE_S=settings.future_tolerance_s,
        NEW_QUERIES_PER_HOUR=settings.new_queries_per_hour,
    )
    app.config.update(config or {})
    app.url_map.converters["id"] = IdConverter
    db.init_app(app)
    errors.init_app(app)
    tokens.init_app(app)
    live.init_app(app)
    retention.init_app(app)
    evaluation.init_app(app)
    budget.init_app(app)
    ingest.init_app(app)
    app.register_blueprint(queries.bp)
    app.register_blueprint(alerts.bp)
    app.register_blueprint(ingest.bp)
    app.register_blueprint(metrics.bp)
    app.register_blueprint(views.bp)
    app.register_blueprint(vendor.bp)
    sockets.init_app(app)
    return app


def start(app: Flask) -> None:
    """Start the app's background work, as a server does."""
    evaluation.evaluator(app).start()
    retention.pruner(app).start()
    watcher = live.watcher(app)
    if watcher.fanout.shared:
        watcher.start()


def stop(app: Flask) -> None:
    """Stop every background task of the app that runs, hand the leases on, and close the
    app's connections to the store."""
    evaluation.evaluator(app).stop()
    live.watcher(app).stop()
    retention.pruner(app).stop()
    db.dispose(app)
