"""The alerts API: list alerts and silences, read an incident's history, act on alerts.

Reading needs nothing; acting (acknowledge, silence, lift a silence) needs the configured
token as `Authorization: Bearer <token>`. Without a configured token actions are refused.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy.orm as so
from flask import Blueprint, current_app, request

from monitor.alerts.actions import ActionError, NotFound, acknowledge, lift_silence, silence
from monitor.alerts.rules import RULES, URGENT
from monitor.alerts.runner import LEASE
from monitor.events import MAX_NAME
from monitor.notify.silences import silenced
from monitor.numbers import NumberError, json_whole, shown
from monitor.store.read.alerts import (
    active_silences,
    alert_events,
    alerts_with_names,
    cancelled_count,
    deliveries,
)
from monitor.store.read.queries import find_query, query_name
from monitor.store.schema.models import AlertRow, Silence
from monitor.store.signals.leases import job_done_at, job_held
from web import db
from web.background.evaluation import evaluator
from web.guards.params import (
    COMMENT_LENGTH,
    MAX_LIMIT,
    NAME_LENGTH,
    BadParameter,
    bounded,
    json_body,
    text_field,
)
from web.guards.tokens import require_token

bp = Blueprint("alerts", __name__, url_prefix="/api")

MAX_SILENCE_MINUTES = 7 * 24 * 60


@bp.errorhandler(ActionError)
def not_possible(error: ActionError) -> tuple[dict[str, str], int]:
    """404 for an unknown alert or silence, 409 for an action the state does not allow."""
    return {"error": str(error)}, 404 if isinstance(error, NotFound) else 409


def _check_token() -> None:
    require_token("API_TOKEN", "actions are disabled: the server has no token (set WMON_API_TOKEN)")


def _now() -> int:
    now: int = current_app.config["CLOCK"]()
    return now


def alert_json(alert: AlertRow, name: str | None, silences: list[Silence]) -> dict[str, Any]:
    """An alert as the API and the live `alert` events show it; `name` is its query's."""
    return {
        "id": alert.id,
        "rule": alert.rule,
        "severity": alert.severity,
        "state": alert.state,
        "query_id": alert.query_id,
        "query": name,
        "partitions": list(alert.partitions),
        "caused_by": alert.caused_by,
        "message": alert.message,
        "value": alert.value,
        "active_since_ms": alert.active_since_ms,
        "fired_at_ms": alert.fired_at_ms,
        "resolved_at_ms": alert.resolved_at_ms,
        "acknowledged_at_ms": alert.acknowledged_at_ms,
        "acknowledged_by": alert.acknowledged_by,
        "silenced": any(silenced(alert, s) for s in silences),
    }


@bp.get("/alerts")
def list_alerts() -> dict[str, Any]:
    """Alerts: `state` live (pending and firing, the default; the most urgent first) or all
    (the firing first, then the pending, then the newest first; the cancelled are counted in
    `cancelled`, not listed); `query` (id or name) and `limit` narrow it. `rules_error`: why
    this server's evaluator did not take up the changed rules file (the rules before it stay
    in force), or null; `evaluated_at_ms`: when the rules were last evaluated, by any process
    (null: never); `evaluating`: whether a process evaluates them now (else the alerts are as
    of `evaluated_at_ms`); `urgent_rules`: the rules whose live alerts are listed before the
    rest, as their finding explains every other on the query (a page sorts by them)."""
    session = db.session()
    state = request.args.get("state", "live")
    if state not in ("live", "all"):
        raise BadParameter(f"state must be live or all, not {shown(state)}")
    limit = bounded(request.args, "limit", 100, 1, MAX_LIMIT)
    query_id = find_query(session, request.args["query"]).id if "query" in request.args else None
    rows = alerts_with_names(session, state == "live", limit, query_id, URGENT)
    now = _now()
    silences = list(active_silences(session, now))
    return {
        "alerts": [alert_json(alert, name, silences) for alert, name in rows],
        "rules_error": evaluator(current_app).rules_error,
        "cancelled": cancelled_count(session, query_id),
        "evaluated_at_ms": job_done_at(session, LEASE),
        "evaluating": job_held(session, LEASE, now),
        "urgent_rules": list(URGENT),
    }


@bp.get("/alerts/<id:alert_id>")
def one_alert(alert_id: int) -> dict[str, Any]:
    """One alert with its transitions and every notification attempt: an incident's story."""
    session = db.session()
    alert = session.get(AlertRow, alert_id)
    if alert is None:
        raise NotFound(f"no alert {alert_id}")
    name = query_name(session, alert.query_id)
    silences = list(active_silences(session, _now()))
    return {
        "alert": alert_json(alert, name, silences),
        "events": [
            {"transition": e.transition, "at_ms": e.at_ms, "value": e.value, "message": e.message}
            for e in alert_events(session, alert_id)
        ],
        "deliveries": _deliveries(session, alert_id),
    }


def _deliveries(session: so.Session, alert_id: int) -> list[dict[str, Any]]:
    return [
        {
            "id": delivery.id,
            "transition": transition,
            "receiver": delivery.receiver,
            "delivered_at_ms": delivery.delivered_at_ms,
            "abandoned_at_ms": delivery.abandoned_at_ms,
            "attempts": [
                {"at_ms": a.at_ms, "ok": a.ok, "status_code": a.status_code, "error": a.error}
                for a in attempts
            ],
        }
        for delivery, transition, attempts in deliveries(session, alert_id)
    ]


@bp.post("/alerts/<id:alert_id>/acknowledge")
def acknowledge_alert(alert_id: int) -> dict[str, Any]:
    """Acknowledge a live alert (token needed); `by` names who did (default: dashboard)."""
    _check_token()
    by = text_field(json_body(), "by", NAME_LENGTH, "dashboard") or "dashboard"
    session = db.session()
    alert = acknowledge(session, alert_id, by, _now())
    name = query_name(session, alert.query_id)
    return {"alert": alert_json(alert, name, list(active_silences(session, _now())))}


def silence_json(found: Silence) -> dict[str, Any]:
    """A silence as the API and the live `silences` events show it."""
    return {
        "id": found.id,
        "rule": found.rule,
        "query_id": found.query_id,
        "partition": found.partition,
        "created_at_ms": found.created_at_ms,
        "until_ms": found.until_ms,
        "created_by": found.created_by,
        "comment": found.comment,
    }


def silences_in_force(session: so.Session, now_ms: int) -> list[dict[str, Any]]:
    """The silences in force at `now_ms`, oldest first."""
    return [silence_json(s) for s in active_silences(session, now_ms)]


@bp.get("/silences")
def list_silences() -> dict[str, Any]:
    """The silences in force, oldest first."""
    return {"silences": silences_in_force(db.session(), _now())}


@bp.post("/silences")
def create_silence() -> tuple[dict[str, Any], int]:
    """Silence the alerts that match `rule`, `query`, `partition` (each optional) for
    `minutes` (token needed)."""
    _check_token()
    body, session = json_body(), db.session()
    try:
        minutes = json_whole(body.get("minutes"), "minutes", 1, MAX_SILENCE_MINUTES)
    except NumberError as error:
        raise BadParameter(str(error)) from None
    rule = text_field(body, "rule", NAME_LENGTH)
    if rule is not None and rule not in RULES:
        raise BadParameter(f"no rule named {shown(rule)}")
    query = text_field(body, "query", MAX_NAME)
    now = _now()
    created = silence(
        session,
        rule=rule,
        query_id=find_query(session, query).id if query else None,
        partition=text_field(body, "partition", MAX_NAME),
        until_ms=now + minutes * 60_000,
        now_ms=now,
        by=text_field(body, "by", NAME_LENGTH, "dashboard") or "dashboard",
        comment=text_field(body, "comment", COMMENT_LENGTH),
    )
    return {"silence": silence_json(created)}, 201


@bp.delete("/silences/<id:silence_id>")
def delete_silence(silence_id: int) -> dict[str, Any]:
    """End a silence now (token needed)."""
    _check_token()
    return {"silence": silence_json(lift_silence(db.session(), silence_id, _now()))}
