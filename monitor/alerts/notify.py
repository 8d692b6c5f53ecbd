"""Notifications of firing and resolved alerts: queued with the transition, sent with retries.

:func:`enqueue` adds one :class:`~monitor.store.models.Delivery` per receiver to the session
that stores the transitions, so nothing is lost between the two. :func:`deliver_due` sends
what is due, records every attempt, and on failure waits longer before the next (1 s, 2 s,
4 s, ... at most 5 minutes) until the receiver takes it or a day has passed. Each message
carries its delivery id, so a receiver can drop the duplicate of an answer that got lost.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.alerts.rulefile import Receiver
from monitor.store.models import AlertEvent, AlertRow, Delivery, DeliveryAttempt, Query, Silence

NOTIFIED = ("firing", "resolved")
MAX_BACKOFF_MS = 300_000
GIVE_UP_AFTER_MS = 86_400_000
BATCH = 100


@dataclass(frozen=True)
class Sent:
    """What a receiver answered: a status code (None when it could not be reached), an error."""

    status_code: int | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the receiver took the message (a 2xx answer)."""
        return self.status_code is not None and 200 <= self.status_code < 300


Post = Callable[[str, dict[str, Any]], Sent]


def http_post(url: str, payload: dict[str, Any], timeout_s: float = 5.0) -> Sent:
    """POST `payload` as JSON to `url`."""
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", "User-Agent": "watermark-monitor"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return Sent(response.status)
    except urllib.error.HTTPError as error:
        return Sent(error.code, f"HTTP {error.code} {error.reason}")
    except (urllib.error.URLError, OSError) as error:
        return Sent(None, str(getattr(error, "reason", error)))
    except Exception as error:  # a malformed answer or URL: a failed attempt, not a dead sender
        return Sent(None, f"{type(error).__name__}: {error}")


def enqueue(
    session: so.Session, events: Iterable[AlertEvent], receivers: Sequence[Receiver], now_ms: int
) -> list[Delivery]:
    """Queue a delivery of every firing or resolved transition to every receiver, unless a
    silence covers the alert."""
    notified = [event for event in events if event.transition in NOTIFIED]
    if not notified or not receivers:
        return []
    silences = active_silences(session, now_ms)
    deliveries = [
        Delivery(
            alert_event_id=event.id,
            receiver=receiver.name,
            created_at_ms=now_ms,
            attempts=0,
            next_attempt_at_ms=now_ms,
        )
        for event in notified
        if not any(silenced(session.get_one(AlertRow, event.alert_id), s) for s in silences)
        for receiver in receivers
    ]
    session.add_all(deliveries)
    return deliveries


def active_silences(session: so.Session, now_ms: int) -> Sequence[Silence]:
    """The silences in force at `now_ms`."""
    return session.scalars(sa.select(Silence).where(Silence.until_ms > now_ms)).all()


def silenced(alert: AlertRow, silence: Silence) -> bool:
    """Whether `silence` covers `alert`: each of its rule, query and partition, when set."""
    return all(
        wanted is None or wanted == actual
        for wanted, actual in (
            (silence.rule, alert.rule),
            (silence.query_id, alert.query_id),
            (silence.partition, alert.partition),
        )
    )


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds")


def webhook_message(
    delivery: Delivery, event: AlertEvent, alert: AlertRow, query: Query
) -> dict[str, Any]:
    """The generic JSON webhook's body."""
    return {
        "version": 1,
        "delivery_id": delivery.id,
        "status": event.transition,
        "at": _iso(event.at_ms),
        "alert": {
            "id": alert.id,
            "rule": alert.rule,
            "severity": alert.severity,
            "query_id": alert.query_id,
            "query": query.name,
            "partition": alert.partition or None,
            "message": event.message,
            "value": event.value,
            "active_since": _iso(alert.active_since_ms),
            "fired_at": _iso(alert.fired_at_ms),
            "resolved_at": _iso(alert.resolved_at_ms),
        },
    }


def slack_message(
    delivery: Delivery, event: AlertEvent, alert: AlertRow, query: Query
) -> dict[str, Any]:
    """A Slack-style incoming-webhook message: one line of text."""
    mark = ":rotating_light:" if event.transition == "firing" else ":white_check_mark:"
    where = _slack_text(query.name or alert.query_id)
    text = (
        f"{mark} [{event.transition.upper()}] {where}: {_slack_text(event.message)} "
        f"({alert.rule}, {alert.severity}; delivery {delivery.id})"
    )
    return {"text": text}


def _slack_text(text: str) -> str:
    """Text from a job as Slack shows it literally: its three control characters escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


MESSAGES = {"webhook": webhook_message, "slack": slack_message}


def deliver_due(
    engine: sa.Engine, receivers: Sequence[Receiver], now_ms: int, post: Post = http_post
) -> list[DeliveryAttempt]:
    """Send what is due, each receiver's deliveries in order; the attempts, each recorded.

    A receiver's next delivery waits for the one before it, so that a resolved alert never
    arrives before its firing. Deliveries to a receiver the rules in force do not name wait
    for rules that do (another process may hold other rules).
    """
    attempts: list[DeliveryAttempt] = []
    with so.Session(engine, expire_on_commit=False) as session:
        for receiver in receivers:
            for delivery, event, alert, query in _pending(session, receiver.name):
                if delivery.next_attempt_at_ms > now_ms:
                    break
                message = MESSAGES[receiver.kind](delivery, event, alert, query)
                attempts.append(_attempt(session, delivery, receiver, message, now_ms, post))
                if not attempts[-1].ok:
                    break
    return attempts


def _pending(session: so.Session, receiver: str) -> Sequence[Any]:
    """A receiver's undelivered deliveries, oldest first, with what they are about."""
    return session.execute(
        sa.select(Delivery, AlertEvent, AlertRow, Query)
        .join(AlertEvent, AlertEvent.id == Delivery.alert_event_id)
        .join(AlertRow, AlertRow.id == AlertEvent.alert_id)
        .join(Query, Query.id == AlertRow.query_id)
        .where(
            Delivery.receiver == receiver,
            Delivery.delivered_at_ms.is_(None),
            Delivery.abandoned_at_ms.is_(None),
        )
        .order_by(Delivery.id)
        .limit(BATCH)
    ).all()


def _attempt(
    session: so.Session,
    delivery: Delivery,
    receiver: Receiver,
    message: dict[str, Any],
    now_ms: int,
    post: Post,
) -> DeliveryAttempt:
    """Send one delivery and record the attempt and its outcome in one transaction."""
    started = time.monotonic()
    sent = post(receiver.url, message)
    attempt = DeliveryAttempt(
        delivery_id=delivery.id,
        at_ms=now_ms,
        duration_ms=int((time.monotonic() - started) * 1000),
        ok=sent.ok,
        status_code=sent.status_code,
        error=sent.error,
    )
    delivery.attempts += 1
    if sent.ok:
        delivery.delivered_at_ms = now_ms
    elif now_ms - delivery.created_at_ms >= GIVE_UP_AFTER_MS:
        delivery.abandoned_at_ms = now_ms
    else:
        delivery.next_attempt_at_ms = now_ms + min(
            1000 * 2 ** (delivery.attempts - 1), MAX_BACKOFF_MS
        )
    session.add(attempt)
    session.commit()
    return attempt
