"""The dashboard server: a Flask app with the JSON API and live push over Socket.IO."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from flask import Flask

from monitor.config import load_settings
from monitor.health.predicates import Timeouts
from web import (
    alerts_api,
    api,
    budget,
    collector,
    db,
    errors,
    evaluation,
    live,
    metrics,
    pages,
    retention,
    sockets,
    tokens,
    vendor,
)
from web.hosts import allowed_hosts
from web.params import MAX_BODY_BYTES, IdConverter
from web.sockets import socketio

__all__ = ["create_app", "socketio"]

POLL_INTERVAL_S = 0.25
OVERVIEW_REFRESH_S = 5.0
PRUNE_INTERVAL_S = 3600.0


def now_ms() -> int:
    """The wall clock in epoch milliseconds."""
    return time.time_ns() // 1_000_000


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """The app. These may be set in `config`: DATABASE_URL (default: WMON_DATABASE_URL or the
    embedded store), POLL_INTERVAL_S, OVERVIEW_REFRESH_S, RETENTION_DAYS (default:
    WMON_RETENTION_DAYS), PRUNE_INTERVAL_S, ALERT_RULES, ALERT_INTERVAL_S (defaults:
    WMON_ALERT_RULES, WMON_ALERT_INTERVAL), API_TOKEN (default: WMON_API_TOKEN; without one,
    actions on alerts are refused), INGEST_TOKEN (default: WMON_INGEST_TOKEN; without one, the
    collector refuses events), TIMEOUTS (idle and stall timeouts of the events the collector
    stores; default: WMON_IDLE_TIMEOUT, WMON_STALL_TIMEOUT), CLOCK (a function returning epoch
    milliseconds) and ALLOWED_HOSTS (the names besides IP addresses that requests and Socket.IO
    origins may use; default: localhost, this machine's names and WMON_ALLOWED_HOSTS) and
    METRICS_KEEP_ENDED_S (how long an ended query stays in GET /metrics; default:
    WMON_METRICS_KEEP_ENDED), MESSAGE_QUEUE (the Redis URL through which several processes
    share live push; default: WMON_MESSAGE_QUEUE, else none), MESSAGE_QUEUE_CHANNEL (their
    channel on it; default: WMON_MESSAGE_QUEUE_CHANNEL, else "wmon") and FUTURE_TOLERANCE_S
    (how far ahead of its batch's time a record's event time may be before the diagnosis calls
    it future-dated; default: WMON_FUTURE_TOLERANCE) and NEW_QUERIES_PER_HOUR (how many new
    queries one sender may create through the collector in an hour; default:
    WMON_NEW_QUERIES_PER_HOUR)."""
    app = Flask(__name__)
    settings = load_settings()
    app.config.from_mapping(
        DATABASE_URL=settings.database_url,
        POLL_INTERVAL_S=POLL_INTERVAL_S,
        OVERVIEW_REFRESH_S=OVERVIEW_REFRESH_S,
        RETENTION_DAYS=settings.retention_days,
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
    app.register_blueprint(api.bp)
    app.register_blueprint(alerts_api.bp)
    app.register_blueprint(collector.bp)
    app.register_blueprint(metrics.bp)
    app.register_blueprint(pages.bp)
    app.register_blueprint(vendor.bp)
    sockets.init_app(app)
    return app
