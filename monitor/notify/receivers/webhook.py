"""The generic JSON webhook: the alert and its transition, every field named."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from monitor.store.schema.models import AlertEvent, AlertRow, Delivery, Query


class Webhook:
    """The `webhook` kind: a versioned JSON document a receiver can parse."""

    kind = "webhook"

    # Told once of each transition, at the URL given.
    resend_ms = None

    def endpoint(self, url: str) -> str:
        """The URL given."""
        return url

    def message(
        self,
        delivery: Delivery,
        event: AlertEvent,
        alert: AlertRow,
        query: Query,
        description: str,
        now_ms: int,
    ) -> dict[str, Any]:
        """The webhook's body; its delivery id lets a receiver drop a duplicate."""
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
                "partitions": list(alert.partitions),
                "caused_by": alert.caused_by,
                "message": event.message,
                "value": event.value,
                "active_since": _iso(alert.active_since_ms),
                "fired_at": _iso(alert.fired_at_ms),
                "resolved_at": _iso(alert.resolved_at_ms),
            },
        }


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds")
