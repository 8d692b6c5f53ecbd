"""GET /metrics: the store's latest state in Prometheus' text format.

Every scrape reads the store afresh (nothing is kept between scrapes): each running query, and
each query that ended within METRICS_KEEP_ENDED_S, with its newest batch, partitions, event
times and timers, and the live alerts. The series are defined once, as data (`series`, over
the `scopes` of what they have samples for); `scrape` fills their families and `exposition`
writes them, as prometheus_client writes them. A store that cannot be read is a 503 saying why,
which still carries the monitor's own series (`wmon_store_up 0`).
[Prometheus](../docs/prometheus.md) lists every series.
"""

from __future__ import annotations

from flask import Blueprint, Response, current_app
from prometheus_client import CONTENT_TYPE_LATEST

from monitor.alerts.runner import LEASE
from monitor.store.packed.batch_event_times import newest_measured
from monitor.store.read.alerts import live_alert_counts
from monitor.store.read.queries import exported_queries
from monitor.store.schema.engine import STORE_FAILURES, unusable
from monitor.store.signals.leases import job_done_at
from monitor.store.write.rejected import count_rejected
from web import db
from web.api.metrics.exposition import exposition
from web.api.metrics.scopes import Exported, OwnHealth
from web.api.metrics.scrape import own_only, scraped
from web.api.payloads import Summarizer
from web.background.evaluation import evaluator
from web.guards.errors import RETRY_AFTER_S

bp = Blueprint("metrics", __name__)


@bp.get("/metrics")
def metrics() -> Response:
    """The exposition; 503 with the reason when the store cannot be read."""
    config = current_app.config
    now_ms = config["CLOCK"]()
    try:
        session = db.session()
        queries = exported_queries(session, now_ms, config["METRICS_KEEP_ENDED_S"] * 1000)
        judged = Summarizer(now_ms, evaluator(current_app).rules).summaries(session, queries)
        measured = newest_measured(session, [query.id for query in queries])
        exported = [Exported(s, measured.get(s.query.id, {}), now_ms) for s in judged]
        counts = live_alert_counts(session)
        evaluated_ms = job_done_at(session, LEASE)
        own = OwnHealth(True, len(exported), evaluated_ms, count_rejected(session), now_ms)
    except STORE_FAILURES as error:
        reason = " ".join(unusable(error).split())
        down = own_only(OwnHealth(False, 0, None, None, now_ms))
        body = f"# wmon: {reason}\n".encode() + exposition(down)
        response = Response(body, status=503, content_type=CONTENT_TYPE_LATEST)
        response.headers["Retry-After"] = str(RETRY_AFTER_S)
        return response
    body = exposition(scraped(exported, counts, own))
    return Response(body, content_type=CONTENT_TYPE_LATEST)
