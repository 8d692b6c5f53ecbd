"""Sending the queued deliveries: each claimed, attempted, and settled, with retries.

:func:`deliver_due` sends what is due, records every attempt, and on failure waits longer
before the next (1 s, 2 s, 4 s, ... at most 5 minutes) until the receiver takes it or a day has
passed; a refusal that retrying cannot change (most 4xx answers) is final at once. Each
delivery is claimed with a conditional UPDATE before it is sent, so that two senders (one that
lost the evaluation lease mid-pass, say) do not both send it: a claim holds for a minute from
the start of the pass, and a pass claims nothing after its first 30 s. Each message carries
its delivery id, so a receiver can drop the duplicate of an answer that got lost.

A receiver whose kind forgets an alert it has not heard of for a while (Alertmanager) is sent
each firing alert again every `resend_ms` once its firing was delivered, until the alert
resolves; each re-send is recorded as another attempt of that delivery, and one that fails is
tried again at the next re-send.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.notify.receiver import Receiver
from monitor.notify.receivers import lookup
from monitor.notify.transport import Message, Post, Sent, http_post
from monitor.store.schema.models import AlertEvent, AlertRow, Delivery, DeliveryAttempt, Query

MAX_BACKOFF_MS = 300_000
GIVE_UP_AFTER_MS = 86_400_000
# How long a claimed delivery is left to its sender: well beyond http_post's timeout, so only
# a sender that died mid-send leaves one for another to take over.
CLAIM_MS = 60_000
BATCH = 100


def deliver_due(
    engine: sa.Engine,
    receivers: Sequence[Receiver],
    now_ms: int,
    post: Post = http_post,
    *,
    descriptions: Mapping[str, str],
) -> list[DeliveryAttempt]:
    """Send what is due, each receiver's deliveries in order, each alert described by its
    rule's entry in `descriptions`; the attempts, each recorded."""
    # Deliveries to a receiver the rules in force do not name wait for rules that do:
    # another process may hold other rules.
    started = time.monotonic()
    attempts: list[DeliveryAttempt] = []
    with so.Session(engine, expire_on_commit=False) as session:
        for receiver in receivers:
            attempts += _deliver_in_order(session, receiver, descriptions, now_ms, post, started)
            attempts += _resend_firing(session, receiver, descriptions, now_ms, post)
    return attempts


def _deliver_in_order(
    session: so.Session,
    receiver: Receiver,
    descriptions: Mapping[str, str],
    now_ms: int,
    post: Post,
    started: float,
) -> list[DeliveryAttempt]:
    """Send a receiver's due deliveries, oldest first, until one is not due or not done.

    A receiver's next delivery waits for the one before it, so that a resolved alert never
    arrives before its firing. Claims run out CLAIM_MS after `now_ms`, the pass's time: past
    half of that, the rest waits for the next pass rather than be claimed with too little
    time left to send.
    """
    attempts = []
    kind = lookup(receiver.kind)
    for delivery, event, alert, query in _pending(session, receiver.name):
        if time.monotonic() - started > CLAIM_MS / 2000 or delivery.next_attempt_at_ms > now_ms:
            break
        if not _claim(session, delivery, now_ms):
            break
        message = kind.message(delivery, event, alert, query, descriptions[alert.rule], now_ms)
        attempt, done = _attempt(
            session, delivery, kind.endpoint(receiver.url), message, now_ms, post
        )
        attempts.append(attempt)
        if not done:
            break
    return attempts


def _pending(session: so.Session, receiver: str) -> Sequence[Any]:
    """A receiver's undelivered deliveries, oldest first, with what they are about."""
    return _deliveries(
        session,
        receiver,
        Delivery.delivered_at_ms.is_(None),
        Delivery.abandoned_at_ms.is_(None),
    )


def _deliveries(session: so.Session, receiver: str, *where: Any) -> Sequence[Any]:
    """The first BATCH of a receiver's deliveries that meet `where`, oldest first, each with
    its alert event, alert and query."""
    return session.execute(
        sa.select(Delivery, AlertEvent, AlertRow, Query)
        .join(AlertEvent, AlertEvent.id == Delivery.alert_event_id)
        .join(AlertRow, AlertRow.id == AlertEvent.alert_id)
        .join(Query, Query.id == AlertRow.query_id)
        .where(Delivery.receiver == receiver, *where)
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
    message: Message,
    now_ms: int,
    post: Post,
) -> tuple[DeliveryAttempt, bool]:
    """Send one claimed delivery; record the attempt and its outcome in one transaction. The
    attempt, and whether the delivery is done (delivered or given up)."""
    attempt, sent = _post(delivery, url, message, now_ms, post)
    done = _settle(session, delivery, sent, now_ms)
    session.add(attempt)
    session.commit()
    return attempt, done


def _post(
    delivery: Delivery, url: str, message: Message, now_ms: int, post: Post
) -> tuple[DeliveryAttempt, Sent]:
    """Send a delivery's message; the attempt, to be recorded, and what the receiver said."""
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
    return attempt, sent


def _resend_firing(
    session: so.Session,
    receiver: Receiver,
    descriptions: Mapping[str, str],
    now_ms: int,
    post: Post,
) -> list[DeliveryAttempt]:
    """Post again each firing alert whose firing the receiver took and was last sent at least
    `resend_ms` ago, if its kind asks for that; the attempts, each recorded."""
    kind = lookup(receiver.kind)
    if kind.resend_ms is None:
        return []
    attempts = []
    due = _due_again(session, receiver.name, now_ms - kind.resend_ms)
    for delivery, event, alert, query in due:
        message = kind.message(delivery, event, alert, query, descriptions[alert.rule], now_ms)
        attempt, _ = _post(delivery, kind.endpoint(receiver.url), message, now_ms, post)
        session.add(attempt)
        session.commit()
        attempts.append(attempt)
    return attempts


def _due_again(session: so.Session, receiver: str, sent_by_ms: int) -> Sequence[Any]:
    """The delivered firing notifications of alerts that still fire, last sent at or before
    `sent_by_ms`, with what they are about."""
    last_sent = (
        sa.select(sa.func.max(DeliveryAttempt.at_ms))
        .where(DeliveryAttempt.delivery_id == Delivery.id)
        .scalar_subquery()
    )
    return _deliveries(
        session,
        receiver,
        Delivery.delivered_at_ms.is_not(None),
        AlertEvent.transition == "firing",
        AlertRow.state == "firing",
        last_sent <= sent_by_ms,
    )


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
