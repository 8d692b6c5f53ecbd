"""What sending writes: a delivery claimed for one attempt, the attempt, and the delivery
settled after it.

A delivery's row is changed only by conditional UPDATEs, each on the attempts count the
sender read, so that of two senders only one claims or settles it.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.schema.models import Delivery, DeliveryAttempt


def claim(session: so.Session, delivery: Delivery, until_ms: int) -> bool:
    """Take `delivery` for one attempt, unless another sender changed it since it was read;
    whether it was taken. Committed at once.

    The attempt is counted and the delivery put out of everyone's reach until `until_ms`, in
    one conditional UPDATE: of two senders, only the first to commit sees its row change.
    """
    unchanged = (
        Delivery.id == delivery.id,
        Delivery.attempts == delivery.attempts,
        Delivery.delivered_at_ms.is_(None),
        Delivery.abandoned_at_ms.is_(None),
    )
    taken = (
        sa.update(Delivery)
        .where(*unchanged)
        .values(attempts=delivery.attempts + 1, next_attempt_at_ms=until_ms)
    )
    claimed = session.connection().execute(taken).rowcount
    session.commit()
    if claimed:
        # As stored, not as a change of ours to write back: the row is changed only by
        # conditional UPDATEs.
        so.attributes.set_committed_value(delivery, "attempts", delivery.attempts + 1)
    return bool(claimed)


def settle(
    session: so.Session,
    delivery: Delivery,
    next_attempt_at_ms: int,
    delivered_at_ms: int | None = None,
    abandoned_at_ms: int | None = None,
) -> None:
    """Store the claimed `delivery` as delivered, given up or due again at
    `next_attempt_at_ms`, unless another sender has claimed it since."""
    values = {"next_attempt_at_ms": next_attempt_at_ms}
    if delivered_at_ms is not None:
        values["delivered_at_ms"] = delivered_at_ms
    if abandoned_at_ms is not None:
        values["abandoned_at_ms"] = abandoned_at_ms
    still_ours = (Delivery.id == delivery.id, Delivery.attempts == delivery.attempts)
    session.connection().execute(sa.update(Delivery).where(*still_ours).values(**values))


def store_attempt(session: so.Session, attempt: DeliveryAttempt) -> None:
    """Store an attempt at a delivery, committed at once: it is told, whatever follows."""
    session.add(attempt)
    session.commit()
