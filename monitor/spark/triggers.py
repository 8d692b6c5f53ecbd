"""How a running query is triggered, read from the query itself: Spark's events do not say.

A classic session's query is a JVM object whose execution holds its trigger: a
`ProcessingTimeTrigger` (every `intervalMs`; 0, the default, runs each batch as soon as the last
ends), `AvailableNowTrigger`, `OneTimeTrigger` or `ContinuousTrigger` (every `intervalMs`). A
Spark Connect session's query is on the server, out of reach: its trigger is not known.
"""

from __future__ import annotations

import logging
from typing import Any

from monitor.events import PERIODIC_TRIGGERS

log = logging.getLogger(__name__)


def trigger_of(spark: Any, query_id: str) -> dict[str, Any] | None:
    """The trigger of the query `query_id` of `spark`'s session, as a started event carries it
    ({"kind", "intervalMs"}, monitor.collect.spark_events); None when it cannot be read: on
    Spark Connect, or once the query has stopped."""
    session = getattr(spark, "_jsparkSession", None)
    if session is None:
        return None
    try:
        query = session.streams().get(query_id)
        if query is None:
            return None
        trigger = query.streamingQuery().trigger()
        kind = trigger.getClass().getSimpleName().rstrip("$").removesuffix("Trigger")
        interval = int(trigger.intervalMs()) if kind in PERIODIC_TRIGGERS else None
    except Exception as error:
        # The query's internals are Spark's: when they cannot be read, the trigger is unknown.
        log.debug("wmon: could not read the trigger of query %s: %s", query_id, error)
        return None
    return {"kind": kind, "intervalMs": interval}
