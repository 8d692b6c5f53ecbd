"""Which alerts a silence covers.

Used by the outbox, to hold back firing notifications, and by the dashboard, to show what is
silenced (the silences in force are read by monitor.store.read.alerts.active_silences);
web/static/js/alerts.js matches alerts to silences the same way.
"""

from __future__ import annotations

from monitor.store.schema.models import AlertRow, Silence


def silenced(alert: AlertRow, silence: Silence) -> bool:
    """Whether `silence` covers `alert`: its rule and query, when set, are the alert's, and its
    partition, when set, is every partition the alert covers (a silence of one partition does
    not hide the others, nor the query's own alerts)."""
    partition = silence.partition
    return (
        silence.rule in (None, alert.rule)
        and silence.query_id in (None, alert.query_id)
        and (partition is None or bool(alert.partitions) and set(alert.partitions) == {partition})
    )
