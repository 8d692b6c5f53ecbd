"""Notifications of firing and resolved alerts: queued with the transition, sent with retries.

:func:`enqueue` adds :class:`~monitor.store.models.Delivery` rows to the session that stores
the transitions, so nothing is lost between the two. Firing and resolved stay paired, as in
Alertmanager: a silence holds back the firing notification of the alerts it covers, which goes
out once the silence ends if the alert still fires; a resolved notification goes to exactly
the receivers the firing was queued for (sent, being retried or given up on).

:func:`deliver_due` sends what is due, records every attempt, and on failure waits longer
before the next (1 s, 2 s, 4 s, ... at most 5 minutes) until the receiver takes it or a day has
passed; a refusal that retrying cannot change (most 4xx answers) is final at once. Each
delivery is claimed with a conditional UPDATE before it is sent, so that two senders (one that
lost the evaluation lease mid-pass, say) do not both send it: a claim holds for a minute from
the start of the pass, and a pass claims nothing after its first 30 s. Each message carries
its delivery id, so a receiver can drop the duplicate of an answer that got lost.
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

MAX_BACKOFF_MS = 300_000
GIVE_UP_AFTER_MS = 86_400_000
# How long a claimed delivery is left to its sender: well beyond http_post's timeout, so only
# a sender that died mid-send leaves one for another to take over.
CLAIM_MS = 60_000
BATCH = 100
# 4xx answers that say "later", not "never".
RETRIED_4XX = (408, 425, 429)


@dataclass(frozen=True)
class Sent:
    """What a receiver answered: a status code (None when it could not be reached), an error."""

    status_code: int | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the receiver took the message (a 2xx answer)."""
        return self.status_code is not None and 200 <= self.status_code < 300

    @property
    def refused(self) -> bool:
        """Whether the receiver refused the message for good: a 4xx answer other than the
        ones that ask to try again later."""
        code = self.status_code
        return code is not None and 400 <= code < 500 and code not in RETRIED_4XX


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
    """Queue what receivers have yet to hear after an evaluation: each firing alert no silence
    covers, to each of `receivers`; and each of `events` that resolved an alert, to every
    receiver its firing was queued for (whatever rules the evaluating process holds)."""
    names = [receiver.name for receiver in receivers]
    firing = _unheard_firing(session, names, now_ms) if names else []
    deliveries = [
        _delivery(event, name, now_ms) for event, name in firing + _resolved(session, events)
    ]
    session.add_all(deliveries)
    return deliveries


def _delivery(event: AlertEvent, receiver: str, now_ms: int) -> Delivery:
    return Delivery(
        alert_event_id=event.id,
        receiver=receiver,
        created_at_ms=now_ms,
        attempts=0,
        next_attempt_at_ms=now_ms,
    )


def _unheard_firing(
    session: so.Session, receivers: Sequence[str], now_ms: int
) -> list[tuple[AlertEvent, str]]:
    """Each firing alert's firing event, with each receiver that has not been sent it, unless
    a silence in force covers the alert."""
    firing = session.execute(
        sa.select(AlertRow, AlertEvent)
        .join(AlertEvent, AlertEvent.alert_id == AlertRow.id)
        .where(AlertRow.state == "firing", AlertEvent.transition == "firing")
        .order_by(AlertEvent.id)
    ).all()
    silences = active_silences(session, now_ms)
    heard = _receivers_of(session, [event.id for _, event in firing])
    return [
        (event, name)
        for alert, event in firing
        if not any(silenced(alert, silence) for silence in silences)
        for name in receivers
        if (event.id, name) not in heard
    ]


def _resolved(session: so.Session, events: Iterable[AlertEvent]) -> list[tuple[AlertEvent, str]]:
    """Each resolved event, with each receiver its alert's firing was queued for."""
    resolved = [event for event in events if event.transition == "resolved"]
    if not resolved:
        return []
    rows = session.execute(
        sa.select(AlertEvent.alert_id, AlertEvent.id).where(
            AlertEvent.alert_id.in_([event.alert_id for event in resolved]),
            AlertEvent.transition == "firing",
        )
    )
    firing = {alert_id: event_id for alert_id, event_id in rows}
    heard = sorted(_receivers_of(session, list(firing.values())))
    return [
        (event, name)
        for event in resolved
        for fired, name in heard
        if fired == firing.get(event.alert_id)
    ]


def _receivers_of(session: so.Session, event_ids: Sequence[int]) -> set[tuple[int, str]]:
    """(event id, receiver) of every delivery queued of these events."""
    if not event_ids:
        return set()
    rows = session.execute(
        sa.select(Delivery.alert_event_id, Delivery.receiver).where(
            Delivery.alert_event_id.in_(event_ids)
        )
    )
    return {(event_id, receiver) for event_id, receiver in rows}


def active_silences(session: so.Session, now_ms: int) -> Sequence[Silence]:
    """The silences in force at `now_ms`, oldest first."""
    return session.scalars(
        sa.select(Silence).where(Silence.until_ms > now_ms).order_by(Silence.id)
    ).all()


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
    started = time.monotonic()
    attempts: list[DeliveryAttempt] = []
    with so.Session(engine, expire_on_commit=False) as session:
        for receiver in receivers:
            attempts += _deliver_in_order(session, receiver, now_ms, post, started)
    return attempts


def _deliver_in_order(
    session: so.Session, receiver: Receiver, now_ms: int, post: Post, started: float
) -> list[DeliveryAttempt]:
    """Send a receiver's due deliveries, oldest first, until one is not due or not done.

    Claims run out CLAIM_MS after `now_ms`, the pass's time: past half of that, the rest
    waits for the next pass rather than be claimed with too little time left to send.
    """
    attempts = []
    for delivery, event, alert, query in _pending(session, receiver.name):
        if time.monotonic() - started > CLAIM_MS / 2000 or delivery.next_attempt_at_ms > now_ms:
            break
        if not _claim(session, delivery, now_ms):
            break
        message = MESSAGES[receiver.kind](delivery, event, alert, query)
        attempt, done = _attempt(session, delivery, receiver.url, message, now_ms, post)
        attempts.append(attempt)
        if not done:
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


def _claim(session: so.Session, delivery: Delivery, now_ms: int) -> bool:
    """Take `delivery` for one attempt, unless another sender changed it since it was read.

    The attempt is counted and the delivery put out of everyone's reach for CLAIM_MS, in one
    conditional UPDATE: of two senders, only the first to commit sees its row change.
    """
    unchanged = (
        Delivery.id == delivery.id,
        Delivery.attempts == delivery.attempts,
        Delivery.delivered_at_ms.is_(None),
        Delivery.abandoned_at_ms.is_(None),
    )
    claim = (
        sa.update(Delivery)
        .where(*unchanged)
        .values(attempts=delivery.attempts + 1, next_attempt_at_ms=now_ms + CLAIM_MS)
    )
    claimed = session.connection().execute(claim).rowcount
    session.commit()
    if claimed:
        # As stored, not as a change of ours to write back: the row is changed only by
        # conditional UPDATEs.
        so.attributes.set_committed_value(delivery, "attempts", delivery.attempts + 1)
    return bool(claimed)


def _attempt(
    session: so.Session,
    delivery: Delivery,
    url: str,
    message: dict[str, Any],
    now_ms: int,
    post: Post,
) -> tuple[DeliveryAttempt, bool]:
    """Send one claimed delivery; record the attempt and its outcome in one transaction. The
    attempt, and whether the delivery is done (delivered or given up)."""
    started = time.monotonic()
    sent = post(url, message)
    attempt = DeliveryAttempt(
        delivery_id=delivery.id,
        at_ms=now_ms,
        duration_ms=int((time.monotonic() - started) * 1000),
        ok=sent.ok,
        status_code=sent.status_code,
        error=sent.error,
    )
    done = _settle(session, delivery, sent, now_ms)
    session.add(attempt)
    session.commit()
    return attempt, done


def _settle(session: so.Session, delivery: Delivery, sent: Sent, now_ms: int) -> bool:
    """Mark the claimed `delivery` delivered, given up, or due again after its backoff, unless
    another sender has claimed it since; whether it is done."""
    values = {
        "next_attempt_at_ms": now_ms + min(1000 * 2 ** (delivery.attempts - 1), MAX_BACKOFF_MS)
    }
    if sent.ok:
        values["delivered_at_ms"] = now_ms
    elif sent.refused or now_ms - delivery.created_at_ms >= GIVE_UP_AFTER_MS:
        values["abandoned_at_ms"] = now_ms
    still_ours = (Delivery.id == delivery.id, Delivery.attempts == delivery.attempts)
    session.connection().execute(sa.update(Delivery).where(*still_ours).values(**values))
    return "delivered_at_ms" in values or "abandoned_at_ms" in values
