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

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.notify.receiver import Receiver
from monitor.notify.receivers import lookup
from monitor.notify.transport import Message, Post, Sent, http_post
from monitor.store.read.deliveries import delivered_firing, undelivered
from monitor.store.schema.models import Delivery, DeliveryAttempt
from monitor.store.write.deliveries import claim, settle, store_attempt

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
    for delivery, event, alert, query in undelivered(session, receiver.name, BATCH):
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


def _claim(session: so.Session, delivery: Delivery, now_ms: int) -> bool:
    """Take `delivery` for one attempt, for CLAIM_MS from `now_ms`, unless another sender
    changed it since it was read."""
    return claim(session, delivery, now_ms + CLAIM_MS)


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
    store_attempt(session, attempt)
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
    due = delivered_firing(session, receiver.name, now_ms - kind.resend_ms, BATCH)
    for delivery, event, alert, query in due:
        message = kind.message(delivery, event, alert, query, descriptions[alert.rule], now_ms)
        attempt, _ = _post(delivery, kind.endpoint(receiver.url), message, now_ms, post)
        store_attempt(session, attempt)
        attempts.append(attempt)
    return attempts


def _settle(session: so.Session, delivery: Delivery, sent: Sent, now_ms: int) -> bool:
    """Mark the claimed `delivery` delivered, given up, or due again after its backoff, unless
    another sender has claimed it since; whether it is done."""
    next_attempt_at_ms = now_ms + min(1000 * 2 ** (delivery.attempts - 1), MAX_BACKOFF_MS)
    if sent.ok:
        settle(session, delivery, next_attempt_at_ms, delivered_at_ms=now_ms)
        return True
    if sent.refused or now_ms - delivery.created_at_ms >= GIVE_UP_AFTER_MS:
        settle(session, delivery, next_attempt_at_ms, abandoned_at_ms=now_ms)
        return True
    settle(session, delivery, next_attempt_at_ms)
    return False
