"""Prometheus' Alertmanager: our alerts posted to its API v2, so that its routing, grouping,
inhibition and silences apply to them.

Alertmanager keeps an alert until its `endsAt`. As Prometheus does, a firing alert is posted
with an `endsAt` a few re-sends ahead and posted again every RESEND_MS while it fires
(:mod:`monitor.notify.delivery`), so that it stays active while wmon runs and ends by itself
when wmon stops; a resolved alert is posted with the time it resolved as its `endsAt`.
An alert is identified by its labels: `alertname` (the rule in CamelCase after `Wmon`, as the
shipped Prometheus rules name theirs), `severity`, `query` and `query_id`: one alert per rule and
query, the partitions it covers in the `partitions` annotation (labels name an alert, and the
partitions come and go while it fires).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from monitor.store.schema.models import AlertEvent, AlertRow, Delivery, Query

RESEND_MS = 60_000
# How far ahead of a firing post its `endsAt` is: four re-sends, as Prometheus' default.
ENDS_AFTER_MS = 4 * RESEND_MS
API = "/api/v2/alerts"


class Alertmanager:
    """The `alertmanager` kind: `url` is Alertmanager's address, as in Prometheus' settings
    (http://alertmanager:9093, with any path prefix it is served under)."""

    kind = "alertmanager"
    resend_ms: int | None = RESEND_MS

    def endpoint(self, url: str) -> str:
        """Alertmanager's alerts API under its address `url`."""
        return url.rstrip("/") + API

    def message(
        self,
        delivery: Delivery,
        event: AlertEvent,
        alert: AlertRow,
        query: Query,
        description: str,
        now_ms: int,
    ) -> list[dict[str, Any]]:
        """The alert as Alertmanager's API v2 takes a list of them: firing until a few
        re-sends from `now_ms`, or resolved when it resolved (whichever event is sent)."""
        ends_ms = alert.resolved_at_ms
        if ends_ms is None:
            ends_ms = event.at_ms if event.transition == "resolved" else now_ms + ENDS_AFTER_MS
        labels = {
            "alertname": alert_name(alert.rule),
            "severity": alert.severity,
            "query": query.name or alert.query_id,
            "query_id": alert.query_id,
        }
        annotations = {"summary": event.message, "description": description}
        if alert.partitions:
            annotations["partitions"] = ", ".join(alert.partitions)
        if event.value is not None:
            annotations["value"] = f"{event.value:g}"
        return [
            {
                "labels": labels,
                "annotations": annotations,
                "startsAt": _rfc3339(alert.active_since_ms),
                "endsAt": _rfc3339(ends_ms),
            }
        ]


def alert_name(rule: str) -> str:
    """The `alertname` of a rule's alerts: partition_stalled is WmonPartitionStalled."""
    return "Wmon" + "".join(word.capitalize() for word in rule.split("_"))


def _rfc3339(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds")
