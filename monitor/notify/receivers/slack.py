"""Slack-style incoming webhooks: one line of text per transition."""

from __future__ import annotations

from typing import Any

from monitor.store.schema.models import AlertEvent, AlertRow, Delivery, Query


class Slack:
    """The `slack` kind: a message for a Slack (or compatible) incoming webhook."""

    kind = "slack"

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
        """The one line of text, marked firing or resolved, naming the delivery."""
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
