"""Configuration from WMON_ environment variables, read in this one place."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from monitor.numbers import whole

DEFAULT_BUFFER_SIZE = 10_000
DEFAULT_IDLE_TIMEOUT_S = 60
DEFAULT_STALL_TIMEOUT_S = 120
# How long each tier of history is kept (store.prune.Retention): every batch, the per-minute
# rollups (with ended alerts and silences), the per-hour rollups.
DEFAULT_RETENTION_BATCHES_HOURS = 48
DEFAULT_RETENTION_DAYS = 30
DEFAULT_RETENTION_HOURS_DAYS = 400
MAX_RETENTION_DAYS = 36_500
DEFAULT_ALERT_INTERVAL_S = 10
# A record whose event time is further ahead of its batch's processing time is future-dated.
DEFAULT_FUTURE_TOLERANCE_S = 300
# How long an ended query's series stay in GET /metrics.
DEFAULT_METRICS_KEEP_ENDED_S = 3600
# New queries one sender may create through the collector in an hour (web.guards.budget).
DEFAULT_NEW_QUERIES_PER_HOUR = 1_000
# Where `instrument()` measures: the JVM when the session has wmon-spark.jar, else Python.
OPERATORS = ("auto", "jvm", "python")
# What WMON_MESSAGE_QUEUE may name: a Redis server, as redis-py reads its URL; the channel
# the dashboards of one store share on it.
MESSAGE_QUEUE_SCHEMES = ("redis", "rediss")
DEFAULT_MESSAGE_QUEUE_CHANNEL = "wmon"


def default_database_path(environ: Mapping[str, str] = os.environ) -> Path:
    """The embedded SQLite store: $WMON_HOME/wmon.db, else $XDG_DATA_HOME/wmon/wmon.db."""
    if environ.get("WMON_HOME"):
        return Path(environ["WMON_HOME"]).expanduser() / "wmon.db"
    home = environ.get("HOME") or str(Path.home())
    data_home = environ.get("XDG_DATA_HOME") or str(Path(home) / ".local" / "share")
    return Path(data_home).expanduser() / "wmon" / "wmon.db"


@dataclass(frozen=True)
class Settings:
    """Everything the monitor reads from the environment."""

    database_url: str
    buffer_size: int = DEFAULT_BUFFER_SIZE
    idle_timeout_s: int = DEFAULT_IDLE_TIMEOUT_S
    stall_timeout_s: int = DEFAULT_STALL_TIMEOUT_S
    retention_batches_hours: int = DEFAULT_RETENTION_BATCHES_HOURS
    retention_days: int = DEFAULT_RETENTION_DAYS
    retention_hours_days: int = DEFAULT_RETENTION_HOURS_DAYS
    alert_rules: Path | None = None
    alert_interval_s: int = DEFAULT_ALERT_INTERVAL_S
    api_token: str | None = None
    ingest_token: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    operator: str = "auto"
    future_tolerance_s: int = DEFAULT_FUTURE_TOLERANCE_S
    metrics_keep_ended_s: int = DEFAULT_METRICS_KEEP_ENDED_S
    new_queries_per_hour: int = DEFAULT_NEW_QUERIES_PER_HOUR
    message_queue: str | None = None
    message_queue_channel: str = DEFAULT_MESSAGE_QUEUE_CHANNEL


DAY_S = 86_400


def _whole_number(
    environ: Mapping[str, str], name: str, default: int, minimum: int, maximum: int
) -> int:
    raw = environ.get(name)
    return default if not raw else whole(raw, name, minimum, maximum)


def _operator(environ: Mapping[str, str]) -> str:
    raw = environ.get("WMON_OPERATOR", "").strip().lower() or "auto"
    if raw not in OPERATORS:
        raise ValueError(
            f"WMON_OPERATOR must be one of {', '.join(OPERATORS)}, not {environ['WMON_OPERATOR']!r}"
        )
    return raw


def load_settings(environ: Mapping[str, str] = os.environ) -> Settings:
    """Read the settings, with defaults for what is not set."""
    return Settings(
        database_url=environ.get("WMON_DATABASE_URL")
        or f"sqlite:///{default_database_path(environ)}",
        buffer_size=_whole_number(environ, "WMON_BUFFER_SIZE", DEFAULT_BUFFER_SIZE, 1, 10_000_000),
        idle_timeout_s=_whole_number(
            environ, "WMON_IDLE_TIMEOUT", DEFAULT_IDLE_TIMEOUT_S, 0, 365 * DAY_S
        ),
        stall_timeout_s=_whole_number(
            environ, "WMON_STALL_TIMEOUT", DEFAULT_STALL_TIMEOUT_S, 0, 365 * DAY_S
        ),
        retention_batches_hours=_whole_number(
            environ,
            "WMON_RETENTION_BATCHES_HOURS",
            DEFAULT_RETENTION_BATCHES_HOURS,
            1,
            24 * MAX_RETENTION_DAYS,
        ),
        retention_days=_whole_number(
            environ, "WMON_RETENTION_DAYS", DEFAULT_RETENTION_DAYS, 1, MAX_RETENTION_DAYS
        ),
        retention_hours_days=_whole_number(
            environ,
            "WMON_RETENTION_HOURS_DAYS",
            DEFAULT_RETENTION_HOURS_DAYS,
            1,
            MAX_RETENTION_DAYS,
        ),
        alert_rules=Path(environ["WMON_ALERT_RULES"]) if environ.get("WMON_ALERT_RULES") else None,
        alert_interval_s=_whole_number(
            environ, "WMON_ALERT_INTERVAL", DEFAULT_ALERT_INTERVAL_S, 1, DAY_S
        ),
        api_token=environ.get("WMON_API_TOKEN") or None,
        ingest_token=environ.get("WMON_INGEST_TOKEN") or None,
        allowed_hosts=tuple(
            name.strip()
            for name in environ.get("WMON_ALLOWED_HOSTS", "").split(",")
            if name.strip()
        ),
        operator=_operator(environ),
        future_tolerance_s=_whole_number(
            environ, "WMON_FUTURE_TOLERANCE", DEFAULT_FUTURE_TOLERANCE_S, 0, 365 * DAY_S
        ),
        metrics_keep_ended_s=_whole_number(
            environ, "WMON_METRICS_KEEP_ENDED", DEFAULT_METRICS_KEEP_ENDED_S, 0, 365 * DAY_S
        ),
        new_queries_per_hour=_whole_number(
            environ, "WMON_NEW_QUERIES_PER_HOUR", DEFAULT_NEW_QUERIES_PER_HOUR, 0, 10_000_000
        ),
        message_queue=_message_queue(environ),
        message_queue_channel=environ.get("WMON_MESSAGE_QUEUE_CHANNEL", "").strip()
        or DEFAULT_MESSAGE_QUEUE_CHANNEL,
    )


def _message_queue(environ: Mapping[str, str]) -> str | None:
    raw = environ.get("WMON_MESSAGE_QUEUE", "").strip()
    if not raw:
        return None
    scheme, separator, _ = raw.partition("://")
    if not separator or scheme.lower() not in MESSAGE_QUEUE_SCHEMES:
        # Not the value itself: a URL may carry a password.
        raise ValueError("WMON_MESSAGE_QUEUE must be a redis:// or rediss:// URL")
    return raw
